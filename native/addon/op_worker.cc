#include "op_worker.h"

#include <new>
#include <stdexcept>

#include "core/error.h"
#include "errors.h"

namespace mto::addon {
namespace {

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
    try {
      work_();
    } catch (const mto::Error& e) {
      fail(e.code(), e.what());
    } catch (const std::bad_alloc&) {
      fail(code::OOM, "out of memory while running the op");
    } catch (const std::exception& e) {
      fail(code::Backend, e.what());
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
  void fail(const char* code, const char* message) {
    code_ = code;
    SetError(message);
  }

  Napi::Promise::Deferred deferred_;
  std::function<void()> work_;
  std::function<Napi::Value(Napi::Env)> finish_;
  const char* code_ = code::Backend;
};

}  // namespace

Napi::Promise queue_op(Napi::Env env, std::function<void()> work,
                       std::function<Napi::Value(Napi::Env)> finish) {
  auto* worker = new OpWorker(env, std::move(work), std::move(finish));  // deletes itself
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace mto::addon
