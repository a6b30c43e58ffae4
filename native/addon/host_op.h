// How an op of a backend whose kernels run on the calling thread (the cpu backend) is run and
// settled: inline on the JS thread when it is tiny, else in a task posted to the backend's own
// threads, whose end settles the Promise through JsCompletion (a thread-safe function). That is
// one thread wake-up on the way to the kernel and one on the way back, and nothing queued on
// libuv's thread pool, which the app's file system, DNS and crypto work share.
#pragma once
#include <napi.h>

#include <functional>
#include <vector>

#include "core/backend.h"

namespace mto::addon {

// Ops estimated below this many multiply-adds (or elements) run inline on the JS thread: they
// take well under a microsecond of compute, far less than a trip through the thread pool costs,
// so the event loop is better served by not queueing them at all.
inline constexpr double kInlineWork = 32768;

// start(backend, done) starts an op on `backend`; false when it has no kernel for it.
using OpStart = std::function<bool(Backend& backend, Completion done)>;

// Runs start on `backend` (one that runs_on_caller()) and settles the returned Promise with
// finish(), built on the JS thread, or with the op's coded error.
Napi::Promise run_host_op(Napi::Env env, const BackendPtr& backend, double work_estimate,
                          OpStart start, std::function<Napi::Value(Napi::Env)> finish);

// Kernel times of the ops run_host_op posts (internal.cc: hostOpTimes, for the bench): from the
// pool thread taking an op to the op's completion being sent, in microseconds, i.e. an op without
// its trips between the JS thread and the pool. Recorded process-wide, and only between a start
// and the take that ends it.
void start_host_op_times();
std::vector<double> take_host_op_times();

}  // namespace mto::addon
