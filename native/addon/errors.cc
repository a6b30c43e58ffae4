#include "errors.h"

#include <cmath>
#include <cstdint>

namespace mto::addon {

Napi::Error make_error(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, code));
  return err;
}

void throw_error(Napi::Env env, const char* code, const std::string& message) {
  throw make_error(env, code, message);
}

std::string describe_value(Napi::Value v) {
  // ToString() throws on a Symbol and runs user code on objects: describe by type instead.
  if (v.IsNumber()) {
    const double d = v.As<Napi::Number>().DoubleValue();
    if (std::floor(d) == d && std::fabs(d) < 1e18) return std::to_string(int64_t(d));
    return std::to_string(d);
  }
  if (v.IsString()) return "'" + v.As<Napi::String>().Utf8Value() + "'";
  if (v.IsBoolean()) return v.As<Napi::Boolean>().Value() ? "true" : "false";
  if (v.IsNull()) return "null";
  if (v.IsUndefined()) return "undefined";
  if (v.IsSymbol()) return "a Symbol";
  if (v.IsBigInt()) return "a BigInt";
  if (v.IsArray()) return "an array";
  if (v.IsTypedArray()) return "a TypedArray";
  if (v.IsFunction()) return "a function";
  return "an object";
}

}  // namespace mto::addon
