// open()'s native half: choosing and making the backend runs on a libuv pool thread, never on the
// JS thread. On a Mac that choice compiles each tier's probe kernel with Metal's compiler (tens to
// hundreds of milliseconds cold), which would otherwise stall the event loop for every open().
// The worker resolves with an opaque handle that `new NativeDevice(handle)` takes over on the JS
// thread (device.h), where the JS object and its bound methods have to be made.
#include "device_open.h"

#include <chrono>
#include <new>
#include <thread>
#include <utility>

#include "core/error.h"
#include "errors.h"

namespace mto::addon {
namespace {

void drop_opened(napi_env, void* data, void*) { delete static_cast<OpenedDevice*>(data); }

class OpenWorker final : public Napi::AsyncWorker {
 public:
  OpenWorker(Napi::Env env, int threads, TierRequest request, int64_t delay_us)
      : Napi::AsyncWorker(env, "metal-tensorops:open"),
        deferred_(Napi::Promise::Deferred::New(env)),
        threads_(threads),
        request_(std::move(request)),
        delay_us_(delay_us) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

 private:
  void Execute() override {
    try {
      if (delay_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
      auto opened = std::make_unique<OpenedDevice>();
      opened->cpu = make_cpu_backend(threads_);
      opened->opened = open_backend(request_, opened->cpu);
      opened_ = std::move(opened);
    } catch (const Error& e) {
      fail(e.code(), e.what());
    } catch (const std::bad_alloc&) {
      fail(code::OOM, "out of memory while opening the device");
    } catch (const std::exception& e) {
      fail(code::Backend, e.what());
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    // The External owns the backends until the constructor takes them; if JS never gets that
    // far, its finalizer frees them (their threads are joined there).
    OpenedDevice* raw = opened_.release();
    napi_value handle;
    if (napi_create_external(env, raw, drop_opened, nullptr, &handle) != napi_ok) {
      delete raw;
      deferred_.Reject(make_error(env, code::Backend, "internal: could not hand the opened device to JS").Value());
      return;
    }
    deferred_.Resolve(Napi::Value(env, handle));
  }

  void OnError(const Napi::Error&) override { deferred_.Reject(make_error(Env(), code_, message_).Value()); }

  void fail(const char* code, std::string message) {
    code_ = code;
    message_ = std::move(message);
    SetError(message_);
  }

  Napi::Promise::Deferred deferred_;
  const int threads_;
  const TierRequest request_;
  const int64_t delay_us_;
  std::unique_ptr<OpenedDevice> opened_;
  const char* code_ = code::Backend;
  std::string message_;
};

}  // namespace

// (threads, backend, tier[, { openDelayUs }]) -> Promise<handle>. The 4th argument is for tests
// only (test/open.test.ts): a delay before opening, to show the event loop runs meanwhile.
Napi::Value OpenDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int threads = 0;
  if (info.Length() > 0 && info[0].IsNumber()) threads = info[0].As<Napi::Number>().Int32Value();
  TierRequest request;
  if (info.Length() > 1 && info[1].IsString()) request.backend = info[1].As<Napi::String>().Utf8Value();
  if (info.Length() > 2 && info[2].IsString()) request.tier = info[2].As<Napi::String>().Utf8Value();
  int64_t delay_us = 0;
  if (info.Length() > 3 && info[3].IsObject()) {
    Napi::Value d = info[3].As<Napi::Object>().Get("openDelayUs");
    if (d.IsNumber()) delay_us = d.As<Napi::Number>().Int64Value();
  }
  auto* worker = new OpenWorker(env, threads, std::move(request), delay_us);
  Napi::Promise promise = worker->promise();
  worker->Queue();  // deletes itself once settled
  return promise;
}

OpenedDevice* opened_device_of(Napi::Value v) {
  if (!v.IsExternal()) return nullptr;
  return v.As<Napi::External<OpenedDevice>>().Data();
}

}  // namespace mto::addon
