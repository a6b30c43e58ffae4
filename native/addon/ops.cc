// The async ops of NativeDevice. Each one validates synchronously (errors throw at the call),
// allocates its output from the backend, then starts the backend op (launch) and resolves with
// the output's handle. Inputs and output are held by shared_ptr inside the closures until the
// op completes, so disposing them meanwhile is safe.
#include <optional>

#include "core/error.h"
#include "core/ops.h"
#include "device.h"
#include "errors.h"
#include "js_completion.h"
#include "host_op.h"
#include "tensors.h"

namespace mto::addon {
namespace {

bool is_absent(Napi::Value v) { return v.IsUndefined() || v.IsNull(); }

std::optional<DType> read_optional_dtype(Napi::Value v, const char* arg) {
  if (is_absent(v)) return std::nullopt;
  DType t;
  if (!v.IsString() || !parse_dtype(v.As<Napi::String>().Utf8Value(), &t) || t == DType::Bool) {
    throw_error(v.Env(), code::DType, std::string(arg) +
                                          " must be 'float32', 'float16' or 'bfloat16'; got " +
                                          describe_value(v));
  }
  return t;
}

Operand operand(const HeldOperand& h) { return Operand{h.dense.get(), h.quant.get()}; }

Napi::Value wrap_tensor(Napi::Env env, const TensorPtr& t) { return NativeTensor::Wrap(env, t); }

}  // namespace

Napi::Promise NativeDevice::launch(Napi::Env env, double work_estimate, Start start,
                                   std::function<Napi::Value(Napi::Env)> finish) {
  if (!backend_->runs_on_caller()) {
    JsCompletion completion(env, finish);
    // `start` holds the op's operands: keep it until the backend completes (a disposed input
    // must outlive the GPU's reads of it).
    auto held = std::make_shared<Start>(start);
    Completion done = [settle = completion.completion(), held](OpStatus s) { settle(std::move(s)); };
    if (start(*backend_, std::move(done))) {
      schedule_flush(env);
      return completion.promise();
    }
    completion.abandon();  // no kernel on this backend: the cpu backend runs it below
  }
  return run_host_op(env, backend_->runs_on_caller() ? backend_ : cpu_, work_estimate,
                     std::move(start), std::move(finish));
}

void NativeDevice::schedule_flush(Napi::Env env) {
  if (*flush_pending_) return;
  Napi::Value set_immediate = env.Global().Get("setImmediate");
  if (!set_immediate.IsFunction()) {  // an environment without it: submit at once
    backend_->flush();
    return;
  }
  *flush_pending_ = true;
  // Holds the backend and the flag, not the device: a device collected meanwhile still flushes.
  Napi::Function flush = Napi::Function::New(
      env, [backend = backend_, pending = flush_pending_](const Napi::CallbackInfo&) {
        *pending = false;
        backend->flush();
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
    if (x->dtype == DType::Bool) throw_error(env, code::DType, "x has dtype 'bool'; quantize takes float tensors");
    check_quantize(x->shape, f, block);
    QTensorPtr q = make_qtensor(x->shape, f, block, allocator_of(backend_));
    backend_->attach_device_view(*q);
    return launch(
        env, double(shape_numel(x->shape)),
        [x, q](Backend& b, Completion done) { return b.quantize(*x, *q, std::move(done)); },
        [q](Napi::Env e) -> Napi::Value { return NativeQTensor::Wrap(e, q); });
  });
}

Napi::Value NativeDevice::Dequantize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    QTensorPtr q = NativeQTensor::Get(info[0], "tensor");
    DType dtype = read_optional_dtype(info[1], "dtype").value_or(DType::Float32);
    TensorPtr out = make_tensor(q->shape, dtype, allocator_of(backend_));
    return launch(
        env, double(shape_numel(q->shape)),
        [q, out](Backend& b, Completion done) { return b.dequantize(*q, *out, std::move(done)); },
        [out](Napi::Env e) { return wrap_tensor(e, out); });
  });
}

Napi::Value NativeDevice::Cast(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    TensorPtr x = NativeTensor::Get(info[0], "x");
    DType dtype = read_optional_dtype(info[1], "dtype").value_or(DType::Float32);
    TensorPtr out = make_tensor(x->shape, dtype, allocator_of(backend_));
    return launch(
        env, double(x->numel()),
        [x, out](Backend& b, Completion done) { return b.cast(*x, *out, std::move(done)); },
        [out](Napi::Env e) { return wrap_tensor(e, out); });
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
    TensorPtr y = make_tensor(p.out_shape, p.out_dtype, allocator_of(backend_));
    return launch(
        env, double(p.M) * double(p.N) * double(p.K),
        [x, w, bias, p, y](Backend& b, Completion done) {
          return b.linear(operand(x), operand(w), bias.get(), p, *y, std::move(done));
        },
        [y](Napi::Env e) { return wrap_tensor(e, y); });
  });
}

Napi::Value NativeDevice::Matmul(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    require_open(env);
    TensorPtr a = NativeTensor::Get(info[0], "a");
    TensorPtr b = NativeTensor::Get(info[1], "b");
    MatmulParams p = check_matmul(*a, *b);
    TensorPtr c = make_tensor(p.out_shape, p.out_dtype, allocator_of(backend_));
    return launch(
        env, double(p.batch) * double(p.M) * double(p.N) * double(p.K),
        [a, b, p, c](Backend& be, Completion done) { return be.matmul(*a, *b, p, *c, std::move(done)); },
        [c](Napi::Env e) { return wrap_tensor(e, c); });
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
    AttentionParams p = check_attention(operand(q), operand(k), operand(v), scale, causal, mask.get());
    TensorPtr o = make_tensor(p.out_shape, p.out_dtype, allocator_of(backend_));
    const double work = double(p.B) * double(p.Hq) * double(p.Lq) * double(p.Lk) * double(p.D);
    return launch(
        env, work,
        [q, k, v, mask, p, o](Backend& b, Completion done) {
          AttentionParams run = p;
          run.mask = mask.get();
          return b.attention(operand(q), operand(k), operand(v), run, *o, std::move(done));
        },
        [o](Napi::Env e) { return wrap_tensor(e, o); });
  });
}

}  // namespace mto::addon
