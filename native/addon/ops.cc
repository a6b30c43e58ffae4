// The ops of NativeDevice. Each one validates (errors throw at the call), allocates its outputs,
// queues the op on the device's stream and returns the outputs' handles at once: the op runs
// after the ops queued before it, and reads wait for it. Inputs and outputs are held by
// shared_ptr inside the queued closure until the op ran, so disposing them meanwhile is safe.
#include <algorithm>
#include <optional>

#include "core/error.h"
#include "core/ops.h"
#include "device.h"
#include "errors.h"
#include "tensors.h"

namespace mto::addon {
namespace {

// One napi_typeof (IsUndefined() || IsNull() makes two): an op reads several optional arguments.
bool is_absent(Napi::Value v) {
  const napi_valuetype t = v.Type();
  return t == napi_undefined || t == napi_null;
}

std::optional<DType> read_optional_dtype(Napi::Value v, const char* arg) {
  if (is_absent(v)) return std::nullopt;
  DType t;
  if (!v.IsString() || !parse_dtype(v.As<Napi::String>().Utf8Value(), &t) || !is_float(t)) {
    throw_error(v.Env(), code::DType, std::string(arg) +
                                          " must be 'float32', 'float16' or 'bfloat16'; got " +
                                          describe_value(v));
  }
  return t;
}

// kMoveIntoOp: an op's operands and params move into its closure rather than being copied. A
// copied shared_ptr is two atomic updates of a count that the pool thread also changes (it drops
// the closures of the ops it ran), and a copied params' shape one more allocation: on the JS
// thread, whose cost of queueing an op is what counts (PERFORMANCE.md, the decode step).
Operand operand(const HeldOperand& h) { return Operand{h.dense.get(), h.quant.get()}; }
EventPtr event_of(const HeldOperand& h) { return h.dense ? h.dense->ready_event() : h.quant->ready_event(); }

Napi::Value wrap_tensor(Napi::Env env, const TensorPtr& t) { return NativeTensor::Wrap(env, t); }

}  // namespace

OpStart on_host_if(bool host, OpStart start) {
  if (!host) return start;
  return [start = std::move(start)](Backend& b, Completion done) {
    return b.runs_on_caller() && start(b, std::move(done));
  };
}

EventPtr NativeDevice::submit(Napi::Env env, double work, EventList inputs,
                              OpStart start, std::vector<std::shared_ptr<ReadToken>> reads) {
  auto event = std::make_shared<OpEvent>();
  stream_->submit(StreamOp{std::move(start), std::move(inputs), work, std::move(reads)}, event);
  if (!backend_->runs_on_caller()) schedule_flush(env);
  return event;
}

void NativeDevice::schedule_flush(Napi::Env env) {
  if (*flush_pending_) return;
  Napi::Value set_immediate = env.Global().Get("setImmediate");
  if (!set_immediate.IsFunction()) {  // an environment without it: submit at once
    stream_->flush();
    return;
  }
  *flush_pending_ = true;
  // Holds the stream and the flag, not the device: a device collected meanwhile still flushes.
  Napi::Function flush = Napi::Function::New(
      env, [stream = stream_, pending = flush_pending_](const Napi::CallbackInfo&) {
        *pending = false;
        stream->flush();
      });
  set_immediate.As<Napi::Function>().Call({flush});
}

Napi::Value NativeDevice::Quantize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    TensorPtr x = NativeTensor::Get(info[0], "x");
    Format f;
    if (!info[1].IsString() || !parse_format(info[1].As<Napi::String>().Utf8Value(), &f)) {
      throw_error(env, code::Format, "format is not a known format: " + describe_value(info[1]));
    }
    int block = info[2].IsNumber() ? info[2].As<Napi::Number>().Int32Value() : 0;
    if (!is_float(x->dtype)) {
      throw_error(env, code::DType, std::string("x has dtype '") + dtype_name(x->dtype) + "'; quantize takes float tensors");
    }
    check_quantize(x->shape, f, block);
    QTensorPtr q = make_qtensor(x->shape, f, block, allocator_of(backend_));
    backend_->attach_device_view(*q);
    q->event = submit(env, double(shape_numel(x->shape)), {x->ready_event()},
                      on_host_if(x->numel() == 0, [x, q](Backend& b, Completion done) {
                        return b.quantize(*x, *q, std::move(done));
                      }));
    return NativeQTensor::Wrap(env, q);
  });
}

Napi::Value NativeDevice::Dequantize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    QTensorPtr q = NativeQTensor::Get(info[0], "tensor");
    DType dtype = read_optional_dtype(info[1], "dtype").value_or(DType::Float32);
    TensorPtr out = make_tensor(q->shape, dtype, allocator_of(backend_));
    out->event = submit(env, double(shape_numel(q->shape)), {q->ready_event()},
                        on_host_if(out->numel() == 0, [q, out](Backend& b, Completion done) {
                          return b.dequantize(*q, *out, std::move(done));
                        }));
    return wrap_tensor(env, out);
  });
}

Napi::Value NativeDevice::Cast(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    TensorPtr x = NativeTensor::Get(info[0], "x");
    DType dtype = DType::Float32;  // lib/ checks the name; int32 <-> float casts are allowed
    if (!is_absent(info[1]) && (!info[1].IsString() || !parse_dtype(info[1].As<Napi::String>().Utf8Value(), &dtype) ||
                                dtype == DType::Bool)) {
      throw_error(env, code::DType, "dtype must be 'float32', 'float16', 'bfloat16' or 'int32'; got " + describe_value(info[1]));
    }
    TensorPtr out = make_tensor(x->shape, dtype, allocator_of(backend_));
    out->event = submit(env, double(x->numel()), {x->ready_event()},
                        on_host_if(out->numel() == 0, [x, out](Backend& b, Completion done) {
                          return b.cast(*x, *out, std::move(done));
                        }));
    return wrap_tensor(env, out);
  });
}

Napi::Value NativeDevice::Linear(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    HeldOperand x = unwrap_operand(info[0], "x");
    HeldOperand w = unwrap_operand(info[1], "w");
    TensorPtr bias = is_absent(info[2]) ? nullptr : NativeTensor::Get(info[2], "bias");
    LinearParams p = check_linear(operand(x), operand(w), bias.get(),
                                  read_optional_dtype(info[3], "outDtype"));
    p.int8_activations = info[4].IsBoolean() && info[4].As<Napi::Boolean>().Value();  // lib/ checked it
    TensorPtr y = make_tensor(std::move(p.out_shape), p.out_dtype, allocator_of(backend_));
    const double work = double(p.M) * double(p.N) * double(std::max<int64_t>(p.K, 1));  // K = 0: a fill
    const bool host = y->numel() == 0 || p.K == 0;
    EventList inputs{event_of(x), event_of(w), bias ? bias->ready_event() : nullptr};
    // The operands and p move into the op (kMoveIntoOp).
    OpStart start = on_host_if(host, [x = std::move(x), w = std::move(w), bias = std::move(bias), p = std::move(p),
                                      y](Backend& b, Completion done) {
      return b.linear(operand(x), operand(w), bias.get(), p, *y, std::move(done));
    });
    y->event = submit(env, work, std::move(inputs), std::move(start));
    return NativeTensor::Wrap(env, std::move(y));
  });
}

Napi::Value NativeDevice::Matmul(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    TensorPtr a = NativeTensor::Get(info[0], "a");
    TensorPtr b = NativeTensor::Get(info[1], "b");
    MatmulParams p = check_matmul(*a, *b);
    TensorPtr c = make_tensor(std::move(p.out_shape), p.out_dtype, allocator_of(backend_));
    const double work = double(p.batch) * double(p.M) * double(p.N) * double(std::max<int64_t>(p.K, 1));
    const bool host = c->numel() == 0 || p.K == 0;
    EventList inputs{a->ready_event(), b->ready_event()};
    // The operands and p move into the op (kMoveIntoOp).
    OpStart start = on_host_if(host, [a = std::move(a), b = std::move(b), p = std::move(p), c](Backend& be, Completion done) {
      return be.matmul(*a, *b, p, *c, std::move(done));
    });
    c->event = submit(env, work, std::move(inputs), std::move(start));
    return NativeTensor::Wrap(env, std::move(c));
  });
}

Napi::Value NativeDevice::Attention(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    HeldOperand q = unwrap_operand(info[0], "q");
    HeldOperand k = unwrap_operand(info[1], "k");
    HeldOperand v = unwrap_operand(info[2], "v");
    std::optional<float> scale;
    if (!is_absent(info[3])) {
      if (!info[3].IsNumber()) throw_error(env, code::Arg, "scale must be a number");
      scale = info[3].As<Napi::Number>().FloatValue();
    }
    const bool causal = info[4].ToBoolean().Value();
    TensorPtr mask = is_absent(info[5]) ? nullptr : NativeTensor::Get(info[5], "mask");
    TensorPtr sinks = is_absent(info[6]) ? nullptr : NativeTensor::Get(info[6], "sinks");
    AttentionParams p = check_attention(operand(q), operand(k), operand(v), scale, causal, mask.get(), sinks.get());
    TensorPtr o = make_tensor(std::move(p.out_shape), p.out_dtype, allocator_of(backend_));
    const double work = double(p.B) * double(p.Hq) * double(p.Lq) * double(std::max<int64_t>(p.Lk, 1)) * double(p.D);
    const bool host = o->numel() == 0 || p.Lk == 0;
    EventList inputs{event_of(q), event_of(k), event_of(v), mask ? mask->ready_event() : nullptr,
                     sinks ? sinks->ready_event() : nullptr};
    // The operands and p move into the op (kMoveIntoOp).
    OpStart start = on_host_if(host, [q = std::move(q), k = std::move(k), v = std::move(v), mask = std::move(mask),
                                      sinks = std::move(sinks), p = std::move(p), o](Backend& b, Completion done) {
      AttentionParams run = p;
      run.mask = mask.get();
      run.sinks = sinks.get();
      return b.attention(operand(q), operand(k), operand(v), run, *o, std::move(done));
    });
    o->event = submit(env, work, std::move(inputs), std::move(start));
    return NativeTensor::Wrap(env, std::move(o));
  });
}

}  // namespace mto::addon
