#include "js_completion.h"

#include <atomic>

#include "errors.h"

namespace mto::addon {
namespace {

// What travels through the thread-safe function to the JS thread.
struct Settlement {
  Napi::Promise::Deferred deferred;
  std::function<Napi::Value(Napi::Env)> finish;
  OpStatus status;
};

void settle_on_js_thread(Napi::Env env, Napi::Function, std::nullptr_t*, Settlement* raw) {
  std::unique_ptr<Settlement> s(raw);
  if (env == nullptr) return;  // the environment is shutting down: nobody awaits the Promise
  if (!s->status.ok()) {
    s->deferred.Reject(make_error(env, s->status.code, s->status.message).Value());
    return;
  }
  try {
    s->deferred.Resolve(s->finish(env));
  } catch (const Napi::Error& e) {
    s->deferred.Reject(e.Value());
  }
}

using Tsfn = Napi::TypedThreadSafeFunction<std::nullptr_t, Settlement, settle_on_js_thread>;

}  // namespace

struct JsCompletion::State {
  Tsfn tsfn;
  std::unique_ptr<Settlement> settlement;
  std::atomic<bool> used{false};

  void complete(OpStatus status) {
    if (used.exchange(true)) return;
    settlement->status = std::move(status);
    Settlement* s = settlement.release();
    // Fails only while the environment shuts down; then nobody awaits the Promise.
    if (tsfn.NonBlockingCall(s) != napi_ok) delete s;
    tsfn.Release();
  }
  void abandon() {
    if (!used.exchange(true)) tsfn.Release();
  }
  // A completion dropped without being called (the op failed to start) must not keep the event
  // loop alive forever.
  ~State() { abandon(); }
};

JsCompletion::JsCompletion(Napi::Env env, std::function<Napi::Value(Napi::Env)> finish)
    : state_(std::make_shared<State>()), deferred_(Napi::Promise::Deferred::New(env)) {
  state_->settlement.reset(new Settlement{deferred_, std::move(finish), {}});
  // No JS function: settle_on_js_thread does the work. Queue size 0 (unbounded), one user.
  // While it is unreleased the event loop stays alive, as it should while the GPU works.
  state_->tsfn = Tsfn::New(env, "metal-tensorops:gpu-op", 0, 1);
}

Completion JsCompletion::completion() const {
  std::shared_ptr<State> state = state_;
  return [state](OpStatus status) { state->complete(std::move(status)); };
}

void JsCompletion::abandon() { state_->abandon(); }

}  // namespace mto::addon
