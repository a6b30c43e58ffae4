#include "host_op.h"

#include <atomic>
#include <chrono>
#include <mutex>

#include "core/error.h"
#include "errors.h"
#include "js_completion.h"

namespace mto::addon {
namespace {

// Runs the op on this thread: the status it completed with, or what it threw.
OpStatus run_here(Backend& backend, const OpStart& start) {
  OpStatus status{code::Backend, "the cpu backend declined the op"};
  OpStatus thrown = capture_status([&] {
    start(backend, [&status](OpStatus s) { status = std::move(s); });
  });
  return thrown.ok() ? status : thrown;
}

// The recorded kernel times. Never destroyed: a pool thread may finish an op while the process
// exits.
struct HostOpTimes {
  static constexpr size_t kMax = size_t(1) << 20;  // bounds the memory of a forgotten start
  std::atomic<bool> on{false};
  std::mutex mu;
  std::vector<double> us;
};
HostOpTimes& host_op_times() {
  static HostOpTimes* times = new HostOpTimes;
  return *times;
}

void record_host_op_time(std::chrono::steady_clock::duration d) {
  HostOpTimes& t = host_op_times();
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.on.load(std::memory_order_relaxed) && t.us.size() < HostOpTimes::kMax)
    t.us.push_back(std::chrono::duration<double, std::micro>(d).count());
}

}  // namespace

void start_host_op_times() {
  HostOpTimes& t = host_op_times();
  std::lock_guard<std::mutex> lock(t.mu);
  t.us.clear();
  t.on.store(true, std::memory_order_relaxed);
}

std::vector<double> take_host_op_times() {
  HostOpTimes& t = host_op_times();
  std::lock_guard<std::mutex> lock(t.mu);
  t.on.store(false, std::memory_order_relaxed);
  return std::move(t.us);
}

Napi::Promise run_host_op(Napi::Env env, const BackendPtr& backend, double work_estimate,
                          OpStart start, std::function<Napi::Value(Napi::Env)> finish) {
  if (work_estimate < kInlineWork) {
    auto deferred = Napi::Promise::Deferred::New(env);
    OpStatus status = run_here(*backend, start);
    if (!status.ok()) {
      deferred.Reject(make_error(env, status.code, status.message).Value());
    } else {
      try {
        deferred.Resolve(finish(env));
      } catch (const Napi::Error& e) {
        deferred.Reject(e.Value());
      }
    }
    return deferred.Promise();
  }
  JsCompletion completion(env, std::move(finish));
  // The task holds the backend, and through `start` the op's operands, until it has run (the
  // pool copes with a task dropping the last reference to its owner).
  backend->post([backend, start = std::move(start), settle = completion.completion()] {
    if (!host_op_times().on.load(std::memory_order_relaxed)) return settle(run_here(*backend, start));
    const auto t0 = std::chrono::steady_clock::now();
    OpStatus status = run_here(*backend, start);
    record_host_op_time(std::chrono::steady_clock::now() - t0);
    settle(std::move(status));
  });
  return completion.promise();
}

}  // namespace mto::addon
