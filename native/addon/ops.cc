// The async ops of NativeDevice. Each one validates synchronously (errors throw at the call),
// then runs the backend kernel on a worker thread and resolves with a new tensor handle.
// Inputs are held by shared_ptr inside the work closure, so disposing them meanwhile is safe.
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/ops.h"
#include "cpu/ops.h"
#include "device.h"
#include "errors.h"
#include "op_worker.h"
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
                                          v.ToString().Utf8Value());
  }
  return t;
}

Operand operand(const HeldOperand& h) { return Operand{h.dense.get(), h.quant.get()}; }

TensorPtr new_tensor(const Shape& shape, DType dtype) {
  auto t = std::make_shared<Tensor>();
  t->shape = shape;
  t->dtype = dtype;
  t->buffer = make_buffer(t->bytes());
  return t;
}

// Runs a kernel that writes float32, straight into the output when it is float32, else through
// a float32 staging buffer converted at the end.
template <class Kernel>
TensorPtr run_to(const Shape& shape, DType dtype, Kernel&& kernel) {
  TensorPtr out = new_tensor(shape, dtype);
  if (dtype == DType::Float32) {
    kernel(out->data<float>());
  } else {
    std::vector<float> staging(size_t(out->numel()));
    kernel(staging.data());
    from_float32(dtype, staging.data(), out->buffer->data(), staging.size());
  }
  return out;
}

Napi::Promise resolve_tensor(Napi::Env env, double work_estimate, std::function<TensorPtr()> work) {
  auto result = std::make_shared<TensorPtr>();
  return queue_op(
      env, work_estimate, [result, work = std::move(work)] { *result = work(); },
      [result](Napi::Env e) -> Napi::Value { return NativeTensor::Wrap(e, *result); });
}

}  // namespace

Napi::Value NativeDevice::Quantize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorPtr x = NativeTensor::Get(info[0], "x");
    Format f;
    if (!info[1].IsString() || !parse_format(info[1].As<Napi::String>().Utf8Value(), &f)) {
      throw_error(env, code::Format, "format is not a known format: " + info[1].ToString().Utf8Value());
    }
    int block = info[2].IsNumber() ? info[2].As<Napi::Number>().Int32Value() : 0;
    if (x->dtype == DType::Bool) throw_error(env, code::DType, "x has dtype 'bool'; quantize takes float tensors");
    check_quantize(x->shape, f, block);
    auto pool = pool_;
    auto result = std::make_shared<QTensorPtr>();
    return queue_op(
        env, double(shape_numel(x->shape)),
        [=] {
          QTensorPtr q = make_qtensor(x->shape, f, block);
          cpu::quantize(*pool, *x, *q);
          *result = q;
        },
        [result](Napi::Env e) -> Napi::Value { return NativeQTensor::Wrap(e, *result); });
  });
}

Napi::Value NativeDevice::Dequantize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    QTensorPtr q = NativeQTensor::Get(info[0], "tensor");
    DType dtype = read_optional_dtype(info[1], "dtype").value_or(DType::Float32);
    auto pool = pool_;
    return resolve_tensor(env, double(shape_numel(q->shape)), [=] {
      return run_to(q->shape, dtype, [&](float* out) { cpu::dequantize(*pool, *q, out); });
    });
  });
}

Napi::Value NativeDevice::Cast(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorPtr x = NativeTensor::Get(info[0], "x");
    DType dtype = read_optional_dtype(info[1], "dtype").value_or(DType::Float32);
    return resolve_tensor(env, double(x->numel()), [=] {
      return run_to(x->shape, dtype,
                    [&](float* out) { to_float32(x->dtype, x->buffer->data(), out, size_t(x->numel())); });
    });
  });
}

Napi::Value NativeDevice::Linear(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    HeldOperand x = unwrap_operand(info[0], "x");
    HeldOperand w = unwrap_operand(info[1], "w");
    TensorPtr bias = is_absent(info[2]) ? nullptr : NativeTensor::Get(info[2], "bias");
    LinearParams p = check_linear(operand(x), operand(w), bias.get(),
                                  read_optional_dtype(info[3], "outDtype"));
    auto pool = pool_;
    return resolve_tensor(env, double(p.M) * double(p.N) * double(p.K), [=] {
      return run_to(p.out_shape, p.out_dtype, [&](float* y) {
        cpu::linear(*pool, operand(x), operand(w), bias.get(), p, y);
      });
    });
  });
}

Napi::Value NativeDevice::Matmul(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorPtr a = NativeTensor::Get(info[0], "a");
    TensorPtr b = NativeTensor::Get(info[1], "b");
    MatmulParams p = check_matmul(*a, *b);
    auto pool = pool_;
    return resolve_tensor(env, double(p.batch) * double(p.M) * double(p.N) * double(p.K), [=] {
      return run_to(p.out_shape, p.out_dtype, [&](float* c) { cpu::matmul(*pool, *a, *b, p, c); });
    });
  });
}

Napi::Value NativeDevice::Attention(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
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
    auto pool = pool_;
    const double work = double(p.B) * double(p.Hq) * double(p.Lq) * double(p.Lk) * double(p.D);
    return resolve_tensor(env, work, [=] {
      AttentionParams run = p;
      run.mask = mask.get();
      return run_to(p.out_shape, p.out_dtype, [&](float* o) {
        cpu::attention(*pool, operand(q), operand(k), operand(v), run, o);
      });
    });
  });
}

}  // namespace mto::addon
