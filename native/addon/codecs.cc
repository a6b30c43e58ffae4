// Element codecs exposed to JS (lib/formats.ts): encode float32 values to element codes and
// decode codes to float32 — the same routines the quantizer and every kernel use.
#include "codecs.h"

#include <string>

#include "core/error.h"
#include "core/formats.h"
#include "errors.h"
#include "typed_arrays.h"

namespace mto::addon {
namespace {

Element read_element(Napi::Value v) {
  Element e;
  if (!v.IsString() || !parse_element(v.As<Napi::String>().Utf8Value(), &e)) {
    throw_error(v.Env(), code::Format,
                "element must be one of 'fp8_e4m3', 'fp8_e5m2', 'fp6_e3m2', 'fp6_e2m3', "
                "'fp4_e2m1', 'int8', 'int4', 'int2', 'e8m0'; got " + describe_value(v));
  }
  return e;
}

// (element, values: Float32Array, out: Uint8Array of the same length, allocated by lib/).
Napi::Value EncodeElements(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    Element e = read_element(info[0]);
    if (e == Element::E8M0) throw_error(env, code::Format, "e8m0 is a scale format: it is decoded only");
    const TypedBytes in = typed_bytes_of(info[1], napi_float32_array, "values", "a Float32Array");
    const TypedBytes out = typed_bytes_of(info[2], napi_uint8_array, "out", "a Uint8Array");
    if (out.length != in.length) throw_error(env, code::Shape, "out must have one code per value");
    const float* x = reinterpret_cast<const float*>(in.data);
    for (size_t i = 0; i < in.length; ++i) out.data[i] = encode_element(e, x[i]);
    return env.Undefined();
  });
}

// (element, codes: Uint8Array, out: Float32Array of the same length, allocated by lib/).
Napi::Value DecodeElements(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    Element e = read_element(info[0]);
    const TypedBytes in = typed_bytes_of(info[1], napi_uint8_array, "codes", "a Uint8Array");
    const TypedBytes out = typed_bytes_of(info[2], napi_float32_array, "out", "a Float32Array");
    if (out.length != in.length) throw_error(env, code::Shape, "out must have one value per code");
    float* y = reinterpret_cast<float*>(out.data);
    for (size_t i = 0; i < in.length; ++i) y[i] = decode_element(e, in.data[i]);
    return env.Undefined();
  });
}

}  // namespace

void InitCodecs(Napi::Env env, Napi::Object exports) {
  exports.Set("encodeElements", Napi::Function::New(env, EncodeElements, "encodeElements"));
  exports.Set("decodeElements", Napi::Function::New(env, DecodeElements, "decodeElements"));
}

}  // namespace mto::addon
