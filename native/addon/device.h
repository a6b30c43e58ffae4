// The JS handle of an opened device. Today it always runs the cpu backend; the metal backend will
// sit behind the same methods (see ARCHITECTURE.md). Construction and tensor import are here;
// the async ops are in ops.cc.
#pragma once
#include <napi.h>

#include <memory>

#include "cpu/thread_pool.h"

namespace mto::addon {

class NativeDevice : public Napi::ObjectWrap<NativeDevice> {
 public:
  static Napi::Function Init(Napi::Env env);
  explicit NativeDevice(const Napi::CallbackInfo& info);  // (threads: number)

 private:
  // device.cc
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value Tensor(const Napi::CallbackInfo& info);        // (data, shape, dtype)
  Napi::Value FromQuantized(const Napi::CallbackInfo& info); // (format, shape, block, codes, scales, biases?)
  // ops.cc
  Napi::Value Quantize(const Napi::CallbackInfo& info);      // (x, format, block)
  Napi::Value Dequantize(const Napi::CallbackInfo& info);    // (q, dtype)
  Napi::Value Cast(const Napi::CallbackInfo& info);          // (x, dtype)
  Napi::Value Linear(const Napi::CallbackInfo& info);        // (x, w, bias|null, outDtype|null)
  Napi::Value Matmul(const Napi::CallbackInfo& info);        // (a, b)
  Napi::Value Attention(const Napi::CallbackInfo& info);     // (q, k, v, scale|null, causal, mask|null)

  // Shared with running ops, which keep the pool alive past the device's collection.
  std::shared_ptr<cpu::ThreadPool> pool_;
};

}  // namespace mto::addon
