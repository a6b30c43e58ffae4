// Reading JS typed arrays without surprises: SharedArrayBuffer-backed arrays are read like any
// other (Napi::TypedArray::ArrayBuffer() fails on them with a codeless "Invalid argument"), and
// nothing here allocates JS memory. Output arrays are allocated by lib/ in JavaScript, where a
// failed allocation is a catchable RangeError (a native napi_create_arraybuffer that cannot get
// memory ends the process).
#pragma once
#include <napi.h>

#include <cstddef>
#include <cstdint>

namespace mto::addon {

struct TypedBytes {
  uint8_t* data = nullptr;  // first element (byte offset applied)
  size_t bytes = 0;
  size_t length = 0;        // elements
  napi_typedarray_type type = napi_uint8_array;
};

// The typed array `v`; throws E_ARG naming `arg` and `expected` when v is not one.
TypedBytes typed_bytes(Napi::Value v, const char* arg, const char* expected);
// The same, and its element type must be `type`.
TypedBytes typed_bytes_of(Napi::Value v, napi_typedarray_type type, const char* arg,
                          const char* expected);

}  // namespace mto::addon
