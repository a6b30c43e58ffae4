// Runs an op off the event loop (libuv worker thread) and settles a Promise on the JS thread.
// `work` runs on the worker and must not touch JS; `finish` builds the result on the JS thread.
#pragma once
#include <napi.h>

#include <functional>

namespace mto::addon {

Napi::Promise queue_op(Napi::Env env, std::function<void()> work,
                       std::function<Napi::Value(Napi::Env)> finish);

}  // namespace mto::addon
