#include "typed_arrays.h"

#include <string>

#include "core/error.h"
#include "errors.h"

namespace mto::addon {

TypedBytes typed_bytes(Napi::Value v, const char* arg, const char* expected) {
  Napi::Env env = v.Env();
  if (!v.IsTypedArray()) {
    throw_error(env, code::Arg, std::string(arg) + " must be " + expected + "; got " + describe_value(v));
  }
  TypedBytes t;
  void* data = nullptr;
  // napi_get_typedarray_info gives the data pointer of SharedArrayBuffer-backed arrays too.
  if (napi_get_typedarray_info(env, v, &t.type, &t.length, &data, nullptr, nullptr) != napi_ok) {
    throw_error(env, code::Arg, std::string(arg) + " could not be read as " + expected);
  }
  static constexpr size_t kElementBytes[] = {1, 1, 1, 2, 2, 4, 4, 4, 8, 8, 8, 2};  // napi order
  const size_t elem = size_t(t.type) < sizeof kElementBytes / sizeof kElementBytes[0]
                          ? kElementBytes[t.type] : 1;
  t.data = static_cast<uint8_t*>(data);
  t.bytes = t.length * elem;
  if (t.bytes && !t.data) {
    throw_error(env, code::Arg, std::string(arg) + " has no data (a detached buffer?)");
  }
  return t;
}

TypedBytes typed_bytes_of(Napi::Value v, napi_typedarray_type type, const char* arg,
                          const char* expected) {
  TypedBytes t = typed_bytes(v, arg, expected);
  if (t.type != type) {
    throw_error(v.Env(), code::Arg, std::string(arg) + " must be " + expected + "; got another TypedArray type");
  }
  return t;
}

}  // namespace mto::addon
