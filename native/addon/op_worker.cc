#include "op_worker.h"

#include <new>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "errors.h"

namespace mto::addon {
namespace {

// Runs fn, returning the code of the failure (nullptr on success) and filling `message`.
template <class Fn>
const char* run_coded(Fn&& fn, std::string* message) {
  try {
    fn();
    return nullptr;
  } catch (const mto::Error& e) {
    *message = e.what();
    return e.code();
  } catch (const std::bad_alloc&) {
    *message = "out of memory while running the op";
    return code::OOM;
  } catch (const std::exception& e) {
    *message = e.what();
    return code::Backend;
  }
}

class OpWorker : public Napi::AsyncWorker {
 public:
  OpWorker(Napi::Env env, std::function<void()> work, std::function<Napi::Value(Napi::Env)> finish)
      : Napi::AsyncWorker(env, "metal-tensorops:op"),
        deferred_(Napi::Promise::Deferred::New(env)),
        work_(std::move(work)),
        finish_(std::move(finish)) {}

  Napi::Promise Promise() { return deferred_.Promise(); }

 protected:
  void Execute() override {
    std::string message;
    if (const char* code = run_coded(work_, &message)) {
      code_ = code;
      SetError(message);
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    try {
      deferred_.Resolve(finish_(env));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }

  void OnError(const Napi::Error& e) override {
    deferred_.Reject(make_error(Env(), code_, e.Message()).Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::function<void()> work_;
  std::function<Napi::Value(Napi::Env)> finish_;
  const char* code_ = code::Backend;
};

}  // namespace

Napi::Promise queue_op(Napi::Env env, double work_estimate, std::function<void()> work,
                       std::function<Napi::Value(Napi::Env)> finish) {
  if (work_estimate < kInlineWork) {
    auto deferred = Napi::Promise::Deferred::New(env);
    std::string message;
    if (const char* code = run_coded(work, &message)) {
      deferred.Reject(make_error(env, code, message).Value());
    } else {
      try {
        deferred.Resolve(finish(env));
      } catch (const Napi::Error& e) {
        deferred.Reject(e.Value());
      }
    }
    return deferred.Promise();
  }
  auto* worker = new OpWorker(env, std::move(work), std::move(finish));  // deletes itself
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace mto::addon
