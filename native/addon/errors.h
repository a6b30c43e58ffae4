// Turning core errors into JS errors that carry a stable `code` (lib/ wraps them in TensorOpsError).
#pragma once
#include <napi.h>

#include <string>

namespace mto::addon {

Napi::Error make_error(Napi::Env env, const char* code, const std::string& message);
[[noreturn]] void throw_error(Napi::Env env, const char* code, const std::string& message);

// A short description of a JS value for error messages that runs no user code and cannot throw
// (Napi::Value::ToString() throws on a Symbol and calls an object's toString()).
std::string describe_value(Napi::Value v);

// Runs fn, converting mto::Error / std::bad_alloc / std::exception into JS errors with a code.
template <class Fn>
auto guard(Napi::Env env, Fn&& fn) -> decltype(fn());

}  // namespace mto::addon

#include "errors_inl.h"
