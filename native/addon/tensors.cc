#include "tensors.h"

#include <cmath>
#include <cstring>
#include <string>

#include "addon_data.h"
#include "errors.h"
#include "host_copy.h"
#include "internal.h"
#include "js_completion.h"
#include "tensor_table.h"
#include "typed_arrays.h"

namespace mto::addon {
namespace {

TensorTable& table(Napi::Env env) { return addon_data(env).tensors; }

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

napi_typedarray_type storage_array_type(DType t) {
  switch (t) {
    case DType::Float32: return napi_float32_array;
    case DType::Float16:
    case DType::BFloat16: return napi_uint16_array;
    case DType::Bool: return napi_uint8_array;
    case DType::Int32: return napi_int32_array;
  }
  return napi_uint8_array;
}

// The slot info[0] names, of either kind (disposed or not); E_ARG when it names none.
TensorSlot& slot_of(const Napi::CallbackInfo& info) {
  TensorSlot* s = table(info.Env()).find(info.Env(), info[0]);
  if (!s) throw_error(info.Env(), code::Arg, "tensor must be a Tensor or a QuantizedTensor");
  return *s;
}

// The storage of the live dense tensor info[0] names.
TensorPtr dense_of(const Napi::CallbackInfo& info) { return NativeTensor::Get(info[0], "tensor"); }
QTensorPtr quant_of(const Napi::CallbackInfo& info) { return NativeQTensor::Get(info[0], "tensor"); }

uint32_t read_id(const Napi::CallbackInfo& info, size_t index) {
  return info[index].IsNumber() ? info[index].As<Napi::Number>().Uint32Value() : 0;
}

// ---- both kinds ----

// (id): the shape, also once disposed.
Napi::Value ShapeOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorSlot& s = slot_of(info);
    return shape_to_js(env, s.shape());
  });
}

Napi::Value Disposed(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value { return Napi::Boolean::New(env, slot_of(info).disposed()); });
}

Napi::Value Bytes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorSlot& s = slot_of(info);
    return Napi::Number::New(env, double(s.dense ? s.dense->bytes() : s.quant ? s.quant->bytes() : 0));
  });
}

// (id, readId?): undefined, a throw (the op that writes the tensor failed) or a Promise settled
// once that op ran.
Napi::Value WhenReady(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorSlot& s = slot_of(info);
    const EventPtr current = s.quantized ? quant_of(info)->ready_event() : dense_of(info)->ready_event();
    return when_done(env, s.open_reads().ready(info, 1, current), true);
  });
}

// (id) -> readId: a read registered at its call (a later write waits for it).
Napi::Value BeginRead(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorSlot& s = slot_of(info);
    if (s.quantized) {
      QTensorPtr q = quant_of(info);
      return Napi::Number::New(env, s.open_reads().begin({q->codes, q->scales, q->biases}, q->ready_event()));
    }
    TensorPtr t = dense_of(info);
    return Napi::Number::New(env, s.open_reads().begin({t->buffer}, t->ready_event()));
  });
}

// (id, readId): never throws (lib/ calls it in a finally).
Napi::Value EndRead(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorSlot* s = table(env).find(env, info[0]);
  if (s && s->reads) s->reads->end(read_id(info, 1));
  return env.Undefined();
}

// (id): drops the storage now; E_DISPOSED when it was already.
Napi::Value Dispose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorSlot& s = slot_of(info);
    if (!table(env).dispose(env, s)) {
      throw_error(env, code::Disposed, s.quantized ? "quantized tensor was already disposed" : "tensor was already disposed");
    }
    return env.Undefined();
  });
}

// (id): the JS object naming id was collected (lib/'s FinalizationRegistry). Never throws.
Napi::Value Release(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info[0].IsNumber()) table(env).release(env, info[0].As<Napi::Number>().DoubleValue());
  return env.Undefined();
}

// ---- dense ----

Napi::Value DTypeOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorSlot& s = slot_of(info);
    if (s.quantized) throw_error(env, code::Arg, "tensor must be a Tensor");
    return Napi::String::New(env, dtype_name(s.dense ? s.dense->dtype : s.dtype));
  });
}

// (id, shape): a view, the same storage and writing op.
Napi::Value Reshape(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorPtr t = dense_of(info);
    Shape shape = read_shape(info[1], "shape");
    if (shape_numel(shape) != t->numel()) {
      throw_error(env, code::Shape, "shape " + shape_string(shape) + " has " +
                                        std::to_string(shape_numel(shape)) + " elements; the tensor " +
                                        shape_string(t->shape) + " has " + std::to_string(t->numel()));
    }
    // The same storage and the same writing op: a read or an op on the view waits for it.
    auto view = std::make_shared<Tensor>(*t);
    view->shape = std::move(shape);
    return NativeTensor::Wrap(env, view, true);
  });
}

// (id, out: storage-type array, readId?)
Napi::Value ReadInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorPtr t = dense_of(info);
    require_ready(env, slot_of(info).open_reads().ready(info, 2, t->ready_event()));
    return copy_into(info[1], storage_array_type(t->dtype), "a typed array of the storage type",
                     t->buffer, t->buffer->data(), t->bytes());
  });
}

// (id, out: Float32Array, readId?)
Napi::Value ToFloat32Into(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    TensorPtr t = dense_of(info);
    require_ready(env, slot_of(info).open_reads().ready(info, 2, t->ready_event()));
    const size_t n = size_t(t->numel());
    TypedBytes out = typed_bytes_of(info[1], napi_float32_array, "out", "a Float32Array");
    if (out.length != n) {
      throw_error(env, code::Shape, "out has " + std::to_string(out.length) +
                                        " elements; the tensor has " + std::to_string(n));
    }
    float* to = reinterpret_cast<float*>(out.data);
    const void* from = t->buffer->data();
    const DType dtype = t->dtype;
    return copy_to_js(env, info[1], n * sizeof(float), t->buffer,
                      [dtype, from, to, n] { to_float32(dtype, from, to, n); });
  });
}

// ---- quantized ----

Napi::Value FormatOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value { return Napi::String::New(env, format_info(quant_of(info)->format).name); });
}

Napi::Value BlockSize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value { return Napi::Number::New(env, quant_of(info)->block); });
}

// (id) -> { codes, scales, biases }: elements of each plane.
Napi::Value PlaneLengths(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    QTensorPtr t = quant_of(info);
    const size_t scale_elem = format_info(t->format).affine ? 2 : 1;
    Napi::Object o = Napi::Object::New(env);
    o.Set("codes", double(t->codes->bytes()));
    o.Set("scales", double(t->scales->bytes() / scale_elem));
    o.Set("biases", double(t->biases ? t->biases->bytes() / 2 : 0));
    return o;
  });
}

// (id, out: Uint8Array, readId?)
Napi::Value CodesInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    QTensorPtr t = quant_of(info);
    require_ready(env, slot_of(info).open_reads().ready(info, 2, t->ready_event()));
    return copy_into(info[1], napi_uint8_array, "a Uint8Array", t->codes, t->codes->data(),
                     t->codes->bytes());
  });
}

// (id, out: Uint8Array (MX) | Uint16Array (affine), readId?)
Napi::Value ScalesInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    QTensorPtr t = quant_of(info);
    require_ready(env, slot_of(info).open_reads().ready(info, 2, t->ready_event()));
    if (format_info(t->format).affine) {
      return copy_into(info[1], napi_uint16_array, "a Uint16Array", t->scales, t->scales->data(),
                       t->scales->bytes());
    }
    return copy_into(info[1], napi_uint8_array, "a Uint8Array", t->scales, t->scales->data(),
                     t->scales->bytes());
  });
}

// (id, out: Uint16Array, readId?)
Napi::Value BiasesInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    QTensorPtr t = quant_of(info);
    require_ready(env, slot_of(info).open_reads().ready(info, 2, t->ready_event()));
    if (!t->biases) throw_error(env, code::Format, "biases() exists only for affine formats");
    return copy_into(info[1], napi_uint16_array, "a Uint16Array", t->biases, t->biases->data(),
                     t->biases->bytes());
  });
}

}  // namespace

Napi::Object InitTensors(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("shape", Napi::Function::New(env, ShapeOf, "shape"));
  o.Set("disposed", Napi::Function::New(env, Disposed, "disposed"));
  o.Set("bytes", Napi::Function::New(env, Bytes, "bytes"));
  o.Set("whenReady", Napi::Function::New(env, WhenReady, "whenReady"));
  o.Set("beginRead", Napi::Function::New(env, BeginRead, "beginRead"));
  o.Set("endRead", Napi::Function::New(env, EndRead, "endRead"));
  o.Set("dispose", Napi::Function::New(env, Dispose, "dispose"));
  o.Set("release", Napi::Function::New(env, Release, "release"));
  o.Set("dtype", Napi::Function::New(env, DTypeOf, "dtype"));
  o.Set("reshape", Napi::Function::New(env, Reshape, "reshape"));
  o.Set("readInto", Napi::Function::New(env, ReadInto, "readInto"));
  o.Set("toFloat32Into", Napi::Function::New(env, ToFloat32Into, "toFloat32Into"));
  o.Set("format", Napi::Function::New(env, FormatOf, "format"));
  o.Set("blockSize", Napi::Function::New(env, BlockSize, "blockSize"));
  o.Set("planeLengths", Napi::Function::New(env, PlaneLengths, "planeLengths"));
  // core/scale_plane.h's rule (internal_scale_plane.cc), for lib/kernels/scale-plane-inputs.ts: a
  // user kernel's scale-plane input is checked and described by the rule the Metal host applies.
  o.Set("scalePlaneLayout", Napi::Function::New(env, ScalePlaneLayoutOf, "scalePlaneLayout"));
  o.Set("codesInto", Napi::Function::New(env, CodesInto, "codesInto"));
  o.Set("scalesInto", Napi::Function::New(env, ScalesInto, "scalesInto"));
  o.Set("biasesInto", Napi::Function::New(env, BiasesInto, "biasesInto"));
  return o;
}

// ---- ids as op operands and results ----

Napi::Value NativeTensor::Wrap(Napi::Env env, TensorPtr t, bool view) {
  return Napi::Number::New(env, table(env).add(env, std::move(t), view));
}

Napi::Array NativeTensor::WrapOutputs(Napi::Env env, const std::vector<TensorPtr>& outputs, const EventPtr& event) {
  Napi::Array out = Napi::Array::New(env, outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i]->event = event;
    out.Set(uint32_t(i), Wrap(env, outputs[i]));
  }
  return out;
}

bool NativeTensor::Is(Napi::Value v) {
  TensorSlot* s = table(v.Env()).find(v.Env(), v);
  return s && !s->quantized;
}

TensorPtr NativeTensor::Get(Napi::Value v, const char* arg) {
  TensorSlot* s = table(v.Env()).find(v.Env(), v);
  if (!s || s->quantized) throw_error(v.Env(), code::Arg, std::string(arg) + " must be a Tensor");
  if (!s->dense) throw_error(v.Env(), code::Disposed, std::string(arg) + " was disposed and cannot be used");
  return s->dense;
}

Napi::Value NativeQTensor::Wrap(Napi::Env env, QTensorPtr t) {
  return Napi::Number::New(env, table(env).add(env, std::move(t)));
}

bool NativeQTensor::Is(Napi::Value v) {
  TensorSlot* s = table(v.Env()).find(v.Env(), v);
  return s && s->quantized;
}

QTensorPtr NativeQTensor::Get(Napi::Value v, const char* arg) {
  TensorSlot* s = table(v.Env()).find(v.Env(), v);
  if (!s || !s->quantized) throw_error(v.Env(), code::Arg, std::string(arg) + " must be a QuantizedTensor");
  if (!s->quant) throw_error(v.Env(), code::Disposed, std::string(arg) + " was disposed and cannot be used");
  return s->quant;
}

// ---- helpers ----

HeldOperand unwrap_operand(Napi::Value v, const char* arg) {
  TensorSlot* s = table(v.Env()).find(v.Env(), v);
  if (!s) throw_error(v.Env(), code::Arg, std::string(arg) + " must be a Tensor or a QuantizedTensor");
  if (s->disposed()) throw_error(v.Env(), code::Disposed, std::string(arg) + " was disposed and cannot be used");
  HeldOperand h;
  h.dense = s->dense;
  h.quant = s->quant;
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
