#include "host_op.h"

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

}  // namespace

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
    settle(run_here(*backend, start));
  });
  return completion.promise();
}

}  // namespace mto::addon
