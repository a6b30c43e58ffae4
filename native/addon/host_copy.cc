#include "host_copy.h"

#include <utility>

namespace mto::addon {
namespace {

class CopyWorker final : public Napi::AsyncWorker {
 public:
  CopyWorker(Napi::Env env, Napi::Object out, std::shared_ptr<const void> keep, std::function<void()> copy)
      : Napi::AsyncWorker(env, "metal-tensorops:read"),
        deferred_(Napi::Promise::Deferred::New(env)),
        out_(Napi::Persistent(out)),
        keep_(std::move(keep)),
        copy_(std::move(copy)) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

 private:
  void Execute() override { copy_(); }
  void OnOK() override { deferred_.Resolve(Env().Undefined()); }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference out_;          // the typed array being written, alive until settled
  std::shared_ptr<const void> keep_;   // the storage being read
  std::function<void()> copy_;
};

}  // namespace

Napi::Value copy_to_js(Napi::Env env, Napi::Value out, size_t bytes, std::shared_ptr<const void> keep,
                       std::function<void()> copy) {
  if (bytes < kAsyncCopyBytes) {
    copy();
    return env.Undefined();
  }
  auto* worker = new CopyWorker(env, out.As<Napi::Object>(), std::move(keep), std::move(copy));
  Napi::Promise promise = worker->promise();
  worker->Queue();  // deletes itself once settled
  return promise;
}

}  // namespace mto::addon
