// Runs an op off the event loop (libuv worker thread) and settles a Promise on the JS thread.
// `work` runs on the worker and must not touch JS; `finish` builds the result on the JS thread.
#pragma once
#include <napi.h>

#include <functional>

namespace mto::addon {

// Ops estimated below this many multiply-adds (or elements) run inline on the JS thread: they
// take well under a microsecond of compute, far less than a trip through the thread pool costs,
// so the event loop is better served by not queueing them at all.
inline constexpr double kInlineWork = 32768;

// Runs work() off the JS thread (or inline when `work_estimate` < kInlineWork) and settles the
// returned Promise with finish() — or with a coded error when work() throws.
Napi::Promise queue_op(Napi::Env env, double work_estimate, std::function<void()> work,
                       std::function<Napi::Value(Napi::Env)> finish);

}  // namespace mto::addon
