#include "js_completion.h"

#include <memory>
#include <mutex>
#include <new>
#include <optional>

#include "addon_data.h"
#include "core/error.h"
#include "errors.h"

namespace mto::addon {
namespace {

// What travels through the channel to the JS thread: an op's outcome, or (no deferred) the end of
// an op that was abandoned, so that the channel stops counting it.
struct Settlement {
  std::optional<Napi::Promise::Deferred> deferred;
  std::function<Napi::Value(Napi::Env)> finish;
  OpStatus status;
};

void settle(Napi::Env env, Settlement& s) {
  if (!s.status.ok()) {
    s.deferred->Reject(make_error(env, s.status.code, s.status.message).Value());
    return;
  }
  try {
    s.deferred->Resolve(s.finish(env));
  } catch (const Napi::Error& e) {
    s.deferred->Reject(e.Value());
  }
}

void settle_on_js_thread(Napi::Env env, Napi::Function, std::nullptr_t*, Settlement* raw);

using Tsfn = Napi::TypedThreadSafeFunction<std::nullptr_t, Settlement, settle_on_js_thread>;

// Node deletes a thread-safe function when its environment is torn down (a worker thread
// terminated while ops run), even while other threads still hold it. Its finalizer, which Node
// runs on the JS thread just before, marks it gone under the mutex that every call into it holds:
// a completion arriving later drops its settlement (nobody awaits the Promise any more).
struct ChannelLife {
  std::mutex mu;
  bool gone = false;
};

void on_tsfn_deleted(Napi::Env, std::shared_ptr<ChannelLife>* life, std::nullptr_t*) {
  {
    std::lock_guard<std::mutex> lock((*life)->mu);
    (*life)->gone = true;
  }
  delete life;
}

}  // namespace

// One thread-safe function per environment carries every op's settlement to the JS thread (one
// per op cost ~5 us to create and release). It is referenced, keeping the event loop alive,
// exactly while ops are in flight.
class CompletionChannel {
 public:
  explicit CompletionChannel(Napi::Env env) : life_(std::make_shared<ChannelLife>()) {
    // No JS function: settle_on_js_thread does the work. Queue size 0 (unbounded), one user
    // (never released: Node closes it with the environment).
    tsfn_ = Tsfn::New(env, "metal-tensorops:op", 0, 1, nullptr, on_tsfn_deleted,
                      new std::shared_ptr<ChannelLife>(life_));
    tsfn_.Unref(env);
  }

  static CompletionChannel& of(Napi::Env env) {
    AddonData& data = addon_data(env);
    if (!data.completions) data.completions = std::make_shared<CompletionChannel>(env);
    return *data.completions;
  }

  // JS thread: an op will settle through the channel / has.
  void begin(Napi::Env env) {
    if (inflight_++ == 0) tsfn_.Ref(env);
  }
  void end(Napi::Env env) {
    if (--inflight_ == 0) tsfn_.Unref(env);
  }

  const Tsfn& tsfn() const { return tsfn_; }
  const std::shared_ptr<ChannelLife>& life() const { return life_; }

 private:
  Tsfn tsfn_;
  std::shared_ptr<ChannelLife> life_;
  int64_t inflight_ = 0;
};

namespace {

// Nothing may escape a thread-safe function's callback (it would end the process).
void settle_on_js_thread(Napi::Env env, Napi::Function, std::nullptr_t*, Settlement* raw) {
  std::unique_ptr<Settlement> s(raw);
  if (env == nullptr) return;  // the environment is shutting down: nobody awaits the Promise
  try {
    CompletionChannel::of(env).end(env);
    if (s->deferred) settle(env, *s);
  } catch (const Napi::Error&) {
    // JS can no longer run here (a worker thread being terminated): nobody sees the Promise.
  } catch (const std::bad_alloc&) {
    try {
      s->deferred->Reject(make_error(env, code::OOM, "out of memory while settling the op").Value());
    } catch (const Napi::Error&) {
    }
  }
}

}  // namespace

struct JsCompletion::State {
  Tsfn tsfn;
  std::shared_ptr<ChannelLife> life;
  bool used = false;  // completed or abandoned (under life->mu)
  std::unique_ptr<Settlement> settlement;

  // Sends the settlement, or an empty one when abandoning; dropped once the channel is gone.
  void send(std::optional<OpStatus> status) {
    if (!life) return;  // the constructor failed before joining the channel
    std::unique_ptr<Settlement> unsent;
    std::lock_guard<std::mutex> lock(life->mu);
    if (used) return;
    used = true;
    unsent = std::move(settlement);
    if (status) unsent->status = std::move(*status);
    else unsent->deferred.reset();
    if (life->gone) return;
    // Fails only while the environment shuts down; then nobody awaits the Promise either.
    if (tsfn.NonBlockingCall(unsent.get()) == napi_ok) unsent.release();
  }
  // A completion dropped without being called (the op failed to start) must still end, so that
  // the channel lets the event loop exit.
  ~State() { send(std::nullopt); }
};

JsCompletion::JsCompletion(Napi::Env env, std::function<Napi::Value(Napi::Env)> finish)
    : state_(std::make_shared<State>()), deferred_(Napi::Promise::Deferred::New(env)) {
  CompletionChannel& channel = CompletionChannel::of(env);
  state_->tsfn = channel.tsfn();
  state_->life = channel.life();
  state_->settlement.reset(new Settlement{deferred_, std::move(finish), {}});
  channel.begin(env);
}

Completion JsCompletion::completion() const {
  std::shared_ptr<State> state = state_;
  return [state](OpStatus status) { state->send(std::move(status)); };
}

void JsCompletion::abandon() { state_->send(std::nullopt); }

Napi::Value when_done(Napi::Env env, const EventPtr& event, bool reject_failed) {
  if (!event || event->done()) {
    if (reject_failed && event && event->failure()) {
      throw make_error(env, event->failure()->code, event->failure()->message);
    }
    return env.Undefined();
  }
  if (StreamPtr stream = event->stream()) stream->flush();
  JsCompletion completion(env, [](Napi::Env e) -> Napi::Value { return e.Undefined(); });
  event->then([settle = completion.completion(), event, reject_failed] {
    settle(reject_failed && event->failure() ? *event->failure() : OpStatus{});
  });
  return completion.promise();
}

}  // namespace mto::addon
