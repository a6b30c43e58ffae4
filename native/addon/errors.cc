#include "errors.h"

namespace mto::addon {

Napi::Error make_error(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, code));
  return err;
}

void throw_error(Napi::Env env, const char* code, const std::string& message) {
  throw make_error(env, code, message);
}

}  // namespace mto::addon
