// A Completion (core/backend.h) that may be called from any thread -- the cpu backend's pool
// threads, the metal backend's MTLCommandBuffer completed handlers -- and settles a Promise on the
// JS thread. All of an environment's completions travel through one Node-API thread-safe function
// (js_completion.cc: CompletionChannel), referenced while any op is in flight. No thread ever
// waits for another.
#pragma once
#include <napi.h>

#include <functional>
#include <memory>

#include "core/backend.h"
#include "core/stream.h"

namespace mto::addon {

class JsCompletion {
 public:
  // Created on the JS thread. finish() builds the resolved value on the JS thread; a failed
  // status rejects with its code and message instead.
  JsCompletion(Napi::Env env, std::function<Napi::Value(Napi::Env)> finish);
  JsCompletion(const JsCompletion&) = delete;
  JsCompletion& operator=(const JsCompletion&) = delete;

  Napi::Promise promise() const { return deferred_.Promise(); }
  // The callback to hand to a backend; the first call settles, later calls are ignored. When the
  // last copy is dropped uncalled, the Promise is abandoned (never settled).
  Completion completion() const;
  // Gives up on this Promise (never settled), so that it no longer keeps the event loop alive.
  void abandon();

  struct State;

 private:
  std::shared_ptr<State> state_;
  Napi::Promise::Deferred deferred_;
};

// The wait behind reads and synchronize(): undefined when `event` is null or done (throwing its
// failure, when it failed and reject_failed); else a Promise settled on the JS thread once it is
// done (rejected with its failure when reject_failed). The event's stream is flushed first, so an
// op held in an asynchronous backend's open batch starts now rather than at the turn's end.
Napi::Value when_done(Napi::Env env, const EventPtr& event, bool reject_failed);

}  // namespace mto::addon
