#include "tensors.h"

#include <cmath>
#include <cstring>
#include <string>

#include "addon_data.h"
#include "errors.h"
#include "host_copy.h"
#include "js_completion.h"
#include "typed_arrays.h"

namespace mto::addon {
namespace {

// Copies `bytes` of `keep`'s storage at src into the typed array `dst` (allocated by lib/ in
// JavaScript, of the type `expected` names, holding exactly `bytes`): undefined when done, or a
// Promise when the copy is large (host_copy.h).
Napi::Value copy_into(Napi::Value dst, napi_typedarray_type type, const char* expected,
                      std::shared_ptr<const void> keep, const void* src, size_t bytes) {
  TypedBytes out = typed_bytes_of(dst, type, "out", expected);
  if (out.bytes != bytes) {
    throw_error(dst.Env(), code::Shape, "out has " + std::to_string(out.bytes) +
                                            " bytes; the tensor has " + std::to_string(bytes));
  }
  uint8_t* to = out.data;
  return copy_to_js(dst.Env(), dst, bytes, std::move(keep), [to, src, bytes] {
    if (bytes) std::memcpy(to, src, bytes);
  });
}

// Reads copy what the tensor holds once the op that writes it ran: lib/ waits for whenReady()
// first. A read that comes early is an internal error; one of a failed op's output rejects with
// the op's failure.
void require_ready(Napi::Env env, const EventPtr& event) {
  if (!event) return;
  if (!event->done()) throw_error(env, code::Backend, "internal: a tensor was read before its op ran");
  if (event->failure()) throw make_error(env, event->failure()->code, event->failure()->message);
}

// Runs in destructors (finalizers, also while a worker's environment is torn down): it must not
// throw, so it calls Node-API directly and ignores a failure (the environment is going away).
void adjust_memory(Napi::Env env, int64_t delta) {
  int64_t total = 0;
  if (delta) (void)napi_adjust_external_memory(env, delta, &total);
}

}  // namespace

// ---- NativeTensor ----

Napi::Function NativeTensor::Init(Napi::Env env) {
  return DefineClass(env, "NativeTensor",
                     {InstanceMethod("whenReady", &NativeTensor::WhenReady),
                      InstanceMethod("reshape", &NativeTensor::Reshape),
                      InstanceMethod("readInto", &NativeTensor::ReadInto),
                      InstanceMethod("toFloat32Into", &NativeTensor::ToFloat32Into),
                      InstanceMethod("beginRead", &NativeTensor::BeginRead),
                      InstanceMethod("endRead", &NativeTensor::EndRead),
                      InstanceMethod("dispose", &NativeTensor::Dispose),
                      InstanceAccessor("disposed", &NativeTensor::Disposed, nullptr),
                      InstanceAccessor("bytes", &NativeTensor::Bytes, nullptr),
                      InstanceAccessor("shape", &NativeTensor::ShapeJs, nullptr),
                      InstanceAccessor("dtype", &NativeTensor::DTypeJs, nullptr)});
}

NativeTensor::NativeTensor(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeTensor>(info) {
  AddonData& data = addon_data(info.Env());
  if (!data.wrapping_tensor) {
    throw_error(info.Env(), code::Arg, "NativeTensor is created by the device (dev.tensor())");
  }
  tensor_ = std::move(data.wrapping_tensor);
  shape_ = tensor_->shape;
  dtype_ = tensor_->dtype;
  // A view (reshape) shares its storage: the tensor it was made from reports the bytes.
  reported_ = data.wrapping_view ? 0 : int64_t(tensor_->bytes());
  adjust_memory(info.Env(), reported_);
}

NativeTensor::~NativeTensor() { Release(); }

void NativeTensor::Release() {
  if (!tensor_) return;
  tensor_.reset();
  adjust_memory(Env(), -reported_);
  reported_ = 0;
}

Napi::Object NativeTensor::Wrap(Napi::Env env, TensorPtr t, bool view) {
  AddonData& data = addon_data(env);
  data.wrapping_tensor = std::move(t);
  data.wrapping_view = view;
  try {
    return data.tensor_ctor.New({});  // the constructor takes wrapping_tensor
  } catch (...) {
    data.wrapping_tensor.reset();
    throw;
  }
}

Napi::Value NativeTensor::Reshape(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorPtr t = Get(Value(), "tensor");
    Shape shape = read_shape(info[0], "shape");
    if (shape_numel(shape) != t->numel()) {
      throw_error(env, code::Shape, "shape " + shape_string(shape) + " has " +
                                        std::to_string(shape_numel(shape)) + " elements; the tensor " +
                                        shape_string(t->shape) + " has " + std::to_string(t->numel()));
    }
    // The same storage and the same writing op: a read or an op on the view waits for it.
    auto view = std::make_shared<Tensor>(*t);
    view->shape = std::move(shape);
    return Wrap(env, view, true);
  });
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

static napi_typedarray_type storage_array_type(DType t) {
  switch (t) {
    case DType::Float32: return napi_float32_array;
    case DType::Float16:
    case DType::BFloat16: return napi_uint16_array;
    case DType::Bool: return napi_uint8_array;
    case DType::Int32: return napi_int32_array;
  }
  return napi_uint8_array;
}

Napi::Value NativeTensor::WhenReady(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value { return when_done(env, reads_.ready(info, 0, Get(Value(), "tensor")->ready_event()), true); });
}

Napi::Value NativeTensor::ReadInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorPtr t = Get(Value(), "tensor");
    require_ready(env, reads_.ready(info, 1, t->ready_event()));
    return copy_into(info[0], storage_array_type(t->dtype), "a typed array of the storage type",
                     t->buffer, t->buffer->data(), t->bytes());
  });
}

Napi::Value NativeTensor::ToFloat32Into(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorPtr t = Get(Value(), "tensor");
    require_ready(env, reads_.ready(info, 1, t->ready_event()));
    const size_t n = size_t(t->numel());
    TypedBytes out = typed_bytes_of(info[0], napi_float32_array, "out", "a Float32Array");
    if (out.length != n) {
      throw_error(env, code::Shape, "out has " + std::to_string(out.length) +
                                        " elements; the tensor has " + std::to_string(n));
    }
    float* to = reinterpret_cast<float*>(out.data);
    const void* from = t->buffer->data();
    const DType dtype = t->dtype;
    return copy_to_js(env, info[0], n * sizeof(float), t->buffer,
                      [dtype, from, to, n] { to_float32(dtype, from, to, n); });
  });
}

// ---- reads in flight ----

HandleReads::~HandleReads() {
  for (auto& [id, read] : open_) {
    for (const auto& t : read.tokens) t->finish();
  }
}

uint32_t HandleReads::begin(const std::vector<BufferPtr>& buffers, EventPtr ready) {
  Open read;
  for (const BufferPtr& b : buffers) {
    if (b) read.tokens.push_back(b->begin_read());
  }
  read.ready = std::move(ready);
  const uint32_t id = next_++;
  open_.emplace(id, std::move(read));
  return id;
}

const EventPtr& HandleReads::ready(const Napi::CallbackInfo& info, size_t index, const EventPtr& current) const {
  if (info.Length() <= index || !info[index].IsNumber()) return current;
  auto it = open_.find(info[index].As<Napi::Number>().Uint32Value());
  return it == open_.end() ? current : it->second.ready;
}

void HandleReads::end(uint32_t id) {
  auto it = open_.find(id);
  if (it == open_.end()) return;
  for (const auto& t : it->second.tokens) t->finish();
  open_.erase(it);
}

namespace {
uint32_t read_id(const Napi::CallbackInfo& info) {
  return info[0].IsNumber() ? info[0].As<Napi::Number>().Uint32Value() : 0;
}
}  // namespace

Napi::Value NativeTensor::BeginRead(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorPtr t = Get(Value(), "tensor");
    return Napi::Number::New(env, reads_.begin({t->buffer}, t->ready_event()));
  });
}

Napi::Value NativeTensor::EndRead(const Napi::CallbackInfo& info) {
  reads_.end(read_id(info));
  return info.Env().Undefined();
}

Napi::Value NativeQTensor::BeginRead(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    QTensorPtr t = Get(Value(), "tensor");
    return Napi::Number::New(env, reads_.begin({t->codes, t->scales, t->biases}, t->ready_event()));
  });
}

Napi::Value NativeQTensor::EndRead(const Napi::CallbackInfo& info) {
  reads_.end(read_id(info));
  return info.Env().Undefined();
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
                     {InstanceMethod("whenReady", &NativeQTensor::WhenReady),
                      InstanceMethod("planeLengths", &NativeQTensor::PlaneLengths),
                      InstanceMethod("codesInto", &NativeQTensor::CodesInto),
                      InstanceMethod("scalesInto", &NativeQTensor::ScalesInto),
                      InstanceMethod("biasesInto", &NativeQTensor::BiasesInto),
                      InstanceMethod("beginRead", &NativeQTensor::BeginRead),
                      InstanceMethod("endRead", &NativeQTensor::EndRead),
                      InstanceMethod("dispose", &NativeQTensor::Dispose),
                      InstanceAccessor("disposed", &NativeQTensor::Disposed, nullptr),
                      InstanceAccessor("bytes", &NativeQTensor::Bytes, nullptr),
                      InstanceAccessor("shape", &NativeQTensor::ShapeJs, nullptr),
                      InstanceAccessor("format", &NativeQTensor::FormatJs, nullptr),
                      InstanceAccessor("blockSize", &NativeQTensor::BlockSize, nullptr)});
}

NativeQTensor::NativeQTensor(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<NativeQTensor>(info) {
  AddonData& data = addon_data(info.Env());
  if (!data.wrapping_qtensor) {
    throw_error(info.Env(), code::Arg,
                "NativeQTensor is created by the device (dev.quantize(), dev.fromQuantized())");
  }
  tensor_ = std::move(data.wrapping_qtensor);
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
  AddonData& data = addon_data(env);
  data.wrapping_qtensor = std::move(t);
  try {
    return data.qtensor_ctor.New({});  // the constructor takes wrapping_qtensor
  } catch (...) {
    data.wrapping_qtensor.reset();
    throw;
  }
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

Napi::Value NativeQTensor::WhenReady(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value { return when_done(env, reads_.ready(info, 0, Get(Value(), "tensor")->ready_event()), true); });
}

Napi::Value NativeQTensor::PlaneLengths(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    QTensorPtr t = Get(Value(), "tensor");
    const size_t scale_elem = format_info(t->format).affine ? 2 : 1;
    Napi::Object o = Napi::Object::New(env);
    o.Set("codes", double(t->codes->bytes()));
    o.Set("scales", double(t->scales->bytes() / scale_elem));
    o.Set("biases", double(t->biases ? t->biases->bytes() / 2 : 0));
    return o;
  });
}

Napi::Value NativeQTensor::CodesInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    QTensorPtr t = Get(Value(), "tensor");
    require_ready(env, reads_.ready(info, 1, t->ready_event()));
    return copy_into(info[0], napi_uint8_array, "a Uint8Array", t->codes, t->codes->data(),
                     t->codes->bytes());
  });
}

Napi::Value NativeQTensor::ScalesInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    QTensorPtr t = Get(Value(), "tensor");
    require_ready(env, reads_.ready(info, 1, t->ready_event()));
    if (format_info(t->format).affine) {
      return copy_into(info[0], napi_uint16_array, "a Uint16Array", t->scales, t->scales->data(),
                       t->scales->bytes());
    }
    return copy_into(info[0], napi_uint8_array, "a Uint8Array", t->scales, t->scales->data(),
                     t->scales->bytes());
  });
}

Napi::Value NativeQTensor::BiasesInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    QTensorPtr t = Get(Value(), "tensor");
    require_ready(env, reads_.ready(info, 1, t->ready_event()));
    if (!t->biases) throw_error(env, code::Format, "biases() exists only for affine formats");
    return copy_into(info[0], napi_uint16_array, "a Uint16Array", t->biases, t->biases->data(),
                     t->biases->bytes());
  });
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
  const uint32_t rank = a.Length();  // read once: each element below is read once too
  if (rank > 8) {
    throw_error(env, code::Shape, std::string(arg) + " has rank " + std::to_string(rank) +
                                      "; accepted: rank 0 to 8");
  }
  Shape s;
  for (uint32_t i = 0; i < rank; ++i) {
    Napi::Value e = a.Get(i);
    double d = e.IsNumber() ? e.As<Napi::Number>().DoubleValue() : -1;
    if (!(d >= 0 && d <= 9007199254740991.0 && std::floor(d) == d)) {
      throw_error(env, code::Shape, std::string(arg) + "[" + std::to_string(i) +
                                        "] must be a non-negative integer; got " + describe_value(e));
    }
    s.push_back(int64_t(d));
  }
  guard(env, [&] { check_shape(s, arg); });
  return s;
}

Napi::Array shape_to_js(Napi::Env env, const Shape& s) {
  Napi::Array a = Napi::Array::New(env, s.size());
  for (size_t i = 0; i < s.size(); ++i) a.Set(uint32_t(i), Napi::Number::New(env, double(s[i])));
  return a;
}

}  // namespace mto::addon
