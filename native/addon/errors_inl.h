#pragma once
#include <new>
#include <stdexcept>

#include "core/error.h"

namespace mto::addon {

template <class Fn>
auto guard(Napi::Env env, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Napi::Error&) {
    throw;
  } catch (const mto::Error& e) {
    throw_error(env, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    throw_error(env, code::OOM, "out of memory");
  } catch (const std::exception& e) {
    throw_error(env, code::Backend, e.what());
  }
}

}  // namespace mto::addon
