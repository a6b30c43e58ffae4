#include "js_completion.h"

#include <memory>
#include <mutex>
#include <new>

#include "core/error.h"
#include "errors.h"

namespace mto::addon {
namespace {

// What travels through the thread-safe function to the JS thread.
struct Settlement {
  Napi::Promise::Deferred deferred;
  std::function<Napi::Value(Napi::Env)> finish;
  OpStatus status;
};

void settle(Napi::Env env, Settlement& s) {
  if (!s.status.ok()) {
    s.deferred.Reject(make_error(env, s.status.code, s.status.message).Value());
    return;
  }
  try {
    s.deferred.Resolve(s.finish(env));
  } catch (const Napi::Error& e) {
    s.deferred.Reject(e.Value());
  }
}

// Nothing may escape a thread-safe function's callback (it would end the process).
void settle_on_js_thread(Napi::Env env, Napi::Function, std::nullptr_t*, Settlement* raw) {
  std::unique_ptr<Settlement> s(raw);
  if (env == nullptr) return;  // the environment is shutting down: nobody awaits the Promise
  try {
    settle(env, *s);
  } catch (const Napi::Error&) {
    // JS can no longer run here (a worker thread being terminated): nobody sees the Promise.
  } catch (const std::bad_alloc&) {
    try {
      s->deferred.Reject(make_error(env, code::OOM, "out of memory while settling the op").Value());
    } catch (const Napi::Error&) {
    }
  }
}

using Tsfn = Napi::TypedThreadSafeFunction<std::nullptr_t, Settlement, settle_on_js_thread>;

}  // namespace

// Node deletes a thread-safe function once it is released, and also when its environment is torn
// down (a worker thread terminated while ops run), whether or not another thread still holds it:
// a completion arriving after that must not touch it. Its finalizer, which Node runs on the JS
// thread just before deleting it, marks it gone under the mutex that every call into it holds.
struct JsCompletion::State {
  std::mutex mu;
  bool gone = false;  // the thread-safe function was deleted
  bool used = false;  // completed or abandoned (the one release is done)
  Tsfn tsfn;
  std::unique_ptr<Settlement> settlement;

  void complete(OpStatus status) {
    std::unique_ptr<Settlement> unsent;
    std::lock_guard<std::mutex> lock(mu);
    if (used) return;
    used = true;
    settlement->status = std::move(status);
    unsent = std::move(settlement);
    if (gone) return;  // nobody awaits the Promise any more: `unsent` is dropped
    // Fails only while the environment shuts down; then nobody awaits the Promise either.
    if (tsfn.NonBlockingCall(unsent.get()) == napi_ok) unsent.release();
    tsfn.Release();
  }
  void abandon() {
    std::lock_guard<std::mutex> lock(mu);
    if (used) return;
    used = true;
    if (!gone) tsfn.Release();
  }
  // A completion dropped without being called (the op failed to start) must not keep the event
  // loop alive forever.
  ~State() { abandon(); }
};

namespace {
// The thread-safe function's finalizer: `state` may already be gone (all its users done).
void on_tsfn_deleted(Napi::Env, std::weak_ptr<JsCompletion::State>* state, std::nullptr_t*) {
  if (auto s = state->lock()) {
    std::lock_guard<std::mutex> lock(s->mu);
    s->gone = true;
  }
  delete state;
}
}  // namespace

JsCompletion::JsCompletion(Napi::Env env, std::function<Napi::Value(Napi::Env)> finish)
    : state_(std::make_shared<State>()), deferred_(Napi::Promise::Deferred::New(env)) {
  state_->settlement.reset(new Settlement{deferred_, std::move(finish), {}});
  // No JS function: settle_on_js_thread does the work. Queue size 0 (unbounded), one user.
  // While it is unreleased the event loop stays alive, as it should while the op runs.
  state_->tsfn = Tsfn::New(env, "metal-tensorops:op", 0, 1, nullptr, on_tsfn_deleted,
                           new std::weak_ptr<State>(state_));
}

Completion JsCompletion::completion() const {
  std::shared_ptr<State> state = state_;
  return [state](OpStatus status) { state->complete(std::move(status)); };
}

void JsCompletion::abandon() { state_->abandon(); }

}  // namespace mto::addon
