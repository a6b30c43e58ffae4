#include "tensors.h"

#include <cmath>
#include <cstring>
#include <string>

#include "addon_data.h"
#include "errors.h"

namespace mto::addon {
namespace {

// Copies bytes into a new (non-external) ArrayBuffer: Electron's memory cage forbids external ones.
Napi::ArrayBuffer copy_out(Napi::Env env, const void* src, size_t bytes) {
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, bytes);
  if (bytes) std::memcpy(ab.Data(), src, bytes);
  return ab;
}

void adjust_memory(Napi::Env env, int64_t delta) {
  if (delta) Napi::MemoryManagement::AdjustExternalMemory(env, delta);
}

}  // namespace

// ---- NativeTensor ----

Napi::Function NativeTensor::Init(Napi::Env env) {
  return DefineClass(env, "NativeTensor",
                     {InstanceMethod("read", &NativeTensor::Read),
                      InstanceMethod("toFloat32", &NativeTensor::ToFloat32),
                      InstanceMethod("dispose", &NativeTensor::Dispose),
                      InstanceAccessor("disposed", &NativeTensor::Disposed, nullptr),
                      InstanceAccessor("bytes", &NativeTensor::Bytes, nullptr),
                      InstanceAccessor("shape", &NativeTensor::ShapeJs, nullptr),
                      InstanceAccessor("dtype", &NativeTensor::DTypeJs, nullptr)});
}

NativeTensor::NativeTensor(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeTensor>(info) {
  if (info.Length() != 1 || !info[0].IsExternal()) {
    throw_error(info.Env(), code::Arg, "NativeTensor is created by the device (dev.tensor())");
  }
  tensor_ = *info[0].As<Napi::External<TensorPtr>>().Data();
  shape_ = tensor_->shape;
  dtype_ = tensor_->dtype;
  reported_ = int64_t(tensor_->bytes());
  adjust_memory(info.Env(), reported_);
}

NativeTensor::~NativeTensor() { Release(); }

void NativeTensor::Release() {
  if (!tensor_) return;
  tensor_.reset();
  adjust_memory(Env(), -reported_);
  reported_ = 0;
}

Napi::Object NativeTensor::Wrap(Napi::Env env, TensorPtr t) {
  return addon_data(env).tensor_ctor.New({Napi::External<TensorPtr>::New(env, &t)});
}

bool NativeTensor::Is(Napi::Value v) {
  return v.IsObject() && v.As<Napi::Object>().InstanceOf(addon_data(v.Env()).tensor_ctor.Value());
}

TensorPtr NativeTensor::Get(Napi::Value v, const char* arg) {
  if (!Is(v)) throw_error(v.Env(), code::Arg, std::string(arg) + " must be a Tensor");
  auto* self = ObjectWrap<NativeTensor>::Unwrap(v.As<Napi::Object>());
  if (!self->tensor_) {
    throw_error(v.Env(), code::Disposed, std::string(arg) + " was disposed and cannot be used");
  }
  return self->tensor_;
}

Napi::Value NativeTensor::Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorPtr t = Get(Value(), "tensor");
  Napi::ArrayBuffer ab = copy_out(env, t->buffer->data(), t->bytes());
  const size_t n = size_t(t->numel());
  switch (t->dtype) {
    case DType::Float32: return Napi::Float32Array::New(env, n, ab, 0);
    case DType::Float16:
    case DType::BFloat16: return Napi::Uint16Array::New(env, n, ab, 0);
    case DType::Bool: return Napi::Uint8Array::New(env, n, ab, 0);
  }
  return env.Undefined();
}

Napi::Value NativeTensor::ToFloat32(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorPtr t = Get(Value(), "tensor");
  const size_t n = size_t(t->numel());
  Napi::Float32Array out = Napi::Float32Array::New(env, n);
  to_float32(t->dtype, t->buffer->data(), out.Data(), n);
  return out;
}

Napi::Value NativeTensor::Dispose(const Napi::CallbackInfo& info) {
  if (!tensor_) throw_error(info.Env(), code::Disposed, "tensor was already disposed");
  Release();
  return info.Env().Undefined();
}

Napi::Value NativeTensor::Disposed(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), !tensor_);
}

Napi::Value NativeTensor::Bytes(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(tensor_ ? tensor_->bytes() : 0));
}

Napi::Value NativeTensor::ShapeJs(const Napi::CallbackInfo& info) {
  return shape_to_js(info.Env(), shape_);
}

Napi::Value NativeTensor::DTypeJs(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), dtype_name(dtype_));
}

// ---- NativeQTensor ----

Napi::Function NativeQTensor::Init(Napi::Env env) {
  return DefineClass(env, "NativeQTensor",
                     {InstanceMethod("codes", &NativeQTensor::Codes),
                      InstanceMethod("scales", &NativeQTensor::Scales),
                      InstanceMethod("biases", &NativeQTensor::Biases),
                      InstanceMethod("dispose", &NativeQTensor::Dispose),
                      InstanceAccessor("disposed", &NativeQTensor::Disposed, nullptr),
                      InstanceAccessor("bytes", &NativeQTensor::Bytes, nullptr),
                      InstanceAccessor("shape", &NativeQTensor::ShapeJs, nullptr),
                      InstanceAccessor("format", &NativeQTensor::FormatJs, nullptr),
                      InstanceAccessor("blockSize", &NativeQTensor::BlockSize, nullptr)});
}

NativeQTensor::NativeQTensor(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<NativeQTensor>(info) {
  if (info.Length() != 1 || !info[0].IsExternal()) {
    throw_error(info.Env(), code::Arg,
                "NativeQTensor is created by the device (dev.quantize(), dev.fromQuantized())");
  }
  tensor_ = *info[0].As<Napi::External<QTensorPtr>>().Data();
  shape_ = tensor_->shape;
  format_ = tensor_->format;
  block_ = tensor_->block;
  reported_ = int64_t(tensor_->bytes());
  adjust_memory(info.Env(), reported_);
}

NativeQTensor::~NativeQTensor() { Release(); }

void NativeQTensor::Release() {
  if (!tensor_) return;
  tensor_.reset();
  adjust_memory(Env(), -reported_);
  reported_ = 0;
}

Napi::Object NativeQTensor::Wrap(Napi::Env env, QTensorPtr t) {
  return addon_data(env).qtensor_ctor.New({Napi::External<QTensorPtr>::New(env, &t)});
}

bool NativeQTensor::Is(Napi::Value v) {
  return v.IsObject() && v.As<Napi::Object>().InstanceOf(addon_data(v.Env()).qtensor_ctor.Value());
}

QTensorPtr NativeQTensor::Get(Napi::Value v, const char* arg) {
  if (!Is(v)) throw_error(v.Env(), code::Arg, std::string(arg) + " must be a QuantizedTensor");
  auto* self = ObjectWrap<NativeQTensor>::Unwrap(v.As<Napi::Object>());
  if (!self->tensor_) {
    throw_error(v.Env(), code::Disposed, std::string(arg) + " was disposed and cannot be used");
  }
  return self->tensor_;
}

Napi::Value NativeQTensor::Codes(const Napi::CallbackInfo& info) {
  QTensorPtr t = Get(Value(), "tensor");
  Napi::ArrayBuffer ab = copy_out(info.Env(), t->codes->data(), t->codes->bytes());
  return Napi::Uint8Array::New(info.Env(), t->codes->bytes(), ab, 0);
}

Napi::Value NativeQTensor::Scales(const Napi::CallbackInfo& info) {
  QTensorPtr t = Get(Value(), "tensor");
  Napi::ArrayBuffer ab = copy_out(info.Env(), t->scales->data(), t->scales->bytes());
  if (format_info(t->format).affine) {
    return Napi::Uint16Array::New(info.Env(), t->scales->bytes() / 2, ab, 0);
  }
  return Napi::Uint8Array::New(info.Env(), t->scales->bytes(), ab, 0);
}

Napi::Value NativeQTensor::Biases(const Napi::CallbackInfo& info) {
  QTensorPtr t = Get(Value(), "tensor");
  if (!t->biases) return info.Env().Null();
  Napi::ArrayBuffer ab = copy_out(info.Env(), t->biases->data(), t->biases->bytes());
  return Napi::Uint16Array::New(info.Env(), t->biases->bytes() / 2, ab, 0);
}

Napi::Value NativeQTensor::Dispose(const Napi::CallbackInfo& info) {
  if (!tensor_) throw_error(info.Env(), code::Disposed, "quantized tensor was already disposed");
  Release();
  return info.Env().Undefined();
}

Napi::Value NativeQTensor::Disposed(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), !tensor_);
}

Napi::Value NativeQTensor::Bytes(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(tensor_ ? tensor_->bytes() : 0));
}

Napi::Value NativeQTensor::ShapeJs(const Napi::CallbackInfo& info) {
  return shape_to_js(info.Env(), shape_);
}

Napi::Value NativeQTensor::FormatJs(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), format_info(format_).name);
}

Napi::Value NativeQTensor::BlockSize(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), block_);
}

// ---- helpers ----

HeldOperand unwrap_operand(Napi::Value v, const char* arg) {
  HeldOperand h;
  if (NativeQTensor::Is(v)) {
    h.quant = NativeQTensor::Get(v, arg);
  } else if (NativeTensor::Is(v)) {
    h.dense = NativeTensor::Get(v, arg);
  } else {
    throw_error(v.Env(), code::Arg, std::string(arg) + " must be a Tensor or a QuantizedTensor");
  }
  return h;
}

Shape read_shape(Napi::Value v, const char* arg) {
  Napi::Env env = v.Env();
  if (!v.IsArray()) throw_error(env, code::Shape, std::string(arg) + " must be an array of integers");
  Napi::Array a = v.As<Napi::Array>();
  if (a.Length() > 8) {
    throw_error(env, code::Shape, std::string(arg) + " has rank " + std::to_string(a.Length()) +
                                      "; accepted: rank 0 to 8");
  }
  Shape s;
  for (uint32_t i = 0; i < a.Length(); ++i) {
    Napi::Value e = a.Get(i);
    double d = e.IsNumber() ? e.As<Napi::Number>().DoubleValue() : -1;
    if (!(d >= 1 && d <= 9007199254740991.0 && std::floor(d) == d)) {
      throw_error(env, code::Shape, std::string(arg) + "[" + std::to_string(i) +
                                        "] must be a positive integer; got " +
                                        e.ToString().Utf8Value());
    }
    s.push_back(int64_t(d));
  }
  return s;
}

Napi::Array shape_to_js(Napi::Env env, const Shape& s) {
  Napi::Array a = Napi::Array::New(env, s.size());
  for (size_t i = 0; i < s.size(); ++i) a.Set(uint32_t(i), Napi::Number::New(env, double(s[i])));
  return a;
}

}  // namespace mto::addon
