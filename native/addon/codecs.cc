// Element codecs exposed to JS (lib/formats.ts): encode float32 values to element codes and
// decode codes to float32 — the same routines the quantizer and every kernel use.
#include "codecs.h"

#include <string>

#include "core/error.h"
#include "core/formats.h"
#include "errors.h"

namespace mto::addon {
namespace {

Element read_element(Napi::Value v) {
  Element e;
  if (!v.IsString() || !parse_element(v.As<Napi::String>().Utf8Value(), &e)) {
    throw_error(v.Env(), code::Format,
                "element must be one of 'fp8_e4m3', 'fp8_e5m2', 'fp6_e3m2', 'fp6_e2m3', "
                "'fp4_e2m1', 'int8', 'int4', 'int2', 'e8m0'; got " + v.ToString().Utf8Value());
  }
  return e;
}

Napi::Value EncodeElements(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    Element e = read_element(info[0]);
    if (e == Element::E8M0) throw_error(env, code::Format, "e8m0 is a scale format: it is decoded only");
    if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
      throw_error(env, code::Arg, "values must be a Float32Array");
    }
    Napi::Float32Array in = info[1].As<Napi::Float32Array>();
    Napi::Uint8Array out = Napi::Uint8Array::New(env, in.ElementLength());
    for (size_t i = 0; i < in.ElementLength(); ++i) out[i] = encode_element(e, in[i]);
    return out;
  });
}

Napi::Value DecodeElements(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guard(env, [&]() -> Napi::Value {
    Element e = read_element(info[0]);
    if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
      throw_error(env, code::Arg, "codes must be a Uint8Array");
    }
    Napi::Uint8Array in = info[1].As<Napi::Uint8Array>();
    Napi::Float32Array out = Napi::Float32Array::New(env, in.ElementLength());
    for (size_t i = 0; i < in.ElementLength(); ++i) out[i] = decode_element(e, in[i]);
    return out;
  });
}

}  // namespace

void InitCodecs(Napi::Env env, Napi::Object exports) {
  exports.Set("encodeElements", Napi::Function::New(env, EncodeElements, "encodeElements"));
  exports.Set("decodeElements", Napi::Function::New(env, DecodeElements, "decodeElements"));
}

}  // namespace mto::addon
