// The JS handle of an opened device. It talks to the compute backend only through
// core/backend.h: the one open() chose (metal or cpu), plus the cpu backend for ops the chosen
// one has no kernel for, with one in-order stream (core/stream.h) over both. Construction, info,
// tensor import and synchronize are here; the ops in ops.cc and ops_model.cc; how JS calls them
// in device_methods.cc.
#pragma once
#include <napi.h>

#include <functional>
#include <memory>
#include <string>

#include "core/backend.h"
#include "core/stream.h"

namespace mto::addon {

// Empty dimensions (core/ops.h): an op with nothing for a kernel to do (an empty output, or a
// reduction over nothing) never reaches an asynchronous backend, which would have nothing to
// encode (and Metal refuses a zero-size grid). When `host` is true the returned start declines
// there, so the stream runs the op on the cpu backend, whose ops handle it on the host before any
// kernel: in stream order, and failing with a failed input, like any op. Else `start` as it is.
OpStart on_host_if(bool host, OpStart start);

class NativeDevice : public Napi::ObjectWrap<NativeDevice> {
 public:
  static Napi::Function Init(Napi::Env env);
  // (threads: number, backend: string, tier: string): backend is options.backend overridden by
  // METAL_TENSOROPS_BACKEND, tier is METAL_TENSOROPS_TIER ("" = auto); see core/tiers.h.
  explicit NativeDevice(const Napi::CallbackInfo& info);
  // Collected (or its environment torn down) with ops in an open batch: they are committed, as
  // no JS turn end may come to do it; queued ops hold what they need.
  ~NativeDevice() override;

 private:
  // device.cc
  Napi::Value Info(const Napi::CallbackInfo& info);
  // dev.info.fallbacks as it is now: the backend finds unusable libraries as ops need them.
  Napi::Value Fallbacks(const Napi::CallbackInfo& info);
  Napi::Value BufferStats(const Napi::CallbackInfo& info);  // internal (tests): pool counters or null
  Napi::Value Tensor(const Napi::CallbackInfo& info);        // (data, shape, dtype)
  Napi::Value FromQuantized(const Napi::CallbackInfo& info); // (format, shape, block, codes, scales, biases?)
  // Drops the device's backends: their threads are joined here when no op holds them (lib/
  // waits for the ops it started first), else by the last op to finish. Later calls throw
  // E_DISPOSED; closing twice is a no-op.
  Napi::Value Close(const Napi::CallbackInfo& info);
  // Throws E_DISPOSED once the device is closed.
  void require_open(Napi::Env env) const;
  // ops.cc
  Napi::Value Quantize(const Napi::CallbackInfo& info);      // (x, format, block)
  Napi::Value Dequantize(const Napi::CallbackInfo& info);    // (q, dtype)
  Napi::Value Cast(const Napi::CallbackInfo& info);          // (x, dtype)
  Napi::Value Linear(const Napi::CallbackInfo& info);        // (x, w, bias|null, outDtype|null)
  Napi::Value Matmul(const Napi::CallbackInfo& info);        // (a, b)
  Napi::Value Attention(const Napi::CallbackInfo& info);     // (q, k, v, scale|null, causal, mask|null)
  // ops_model.cc
  Napi::Value Unary(const Napi::CallbackInfo& info);         // (op, x)
  Napi::Value Binary(const Napi::CallbackInfo& info);        // (op, a, b)
  Napi::Value Norm(const Napi::CallbackInfo& info);          // (layer, x, weight|null, bias|null, eps)
  Napi::Value Rope(const Napi::CallbackInfo& info);          // (x, positions|null, freqs|null, layout, style, base, offset, dims|null)
  Napi::Value Softmax(const Napi::CallbackInfo& info);       // (x)
  Napi::Value Layout(const Napi::CallbackInfo& info);        // (op, ...): transpose, slice, concat
  Napi::Value Pick(const Napi::CallbackInfo& info);          // (op, x, ...): argmax, topk, sample
  Napi::Value Embedding(const Napi::CallbackInfo& info);     // (table, ids)
  Napi::Value GroupedLinear(const Napi::CallbackInfo& info); // (x, w, groupSizes, outDtype|null, int8Activations)
  Napi::Value GroupRows(const Napi::CallbackInfo& info);     // (ids, groups) -> [sizes, rows, positions]
  Napi::Value Write(const Napi::CallbackInfo& info);         // (dst, src, axis, offset)
  void write_quantized(Napi::Env env, const QTensorPtr& dst, Napi::Value src, int64_t axis, int64_t offset);
  // ops_process.cc
  Napi::Value RunProcess(const Napi::CallbackInfo& info);    // (argv, inputs, inputFiles, outShapes, outDtypes, outFiles, inputPlanes?)
  // ops_kernel.cc: users' kernels on a backend that compiles MSL (core/user_kernel.h)
  Napi::Value CompileKernel(const Napi::CallbackInfo& info); // (name, source) -> Promise<program> | null
  Napi::Value RunKernel(const Napi::CallbackInfo& info);     // (program, geometry, args, outputs)

  // Synchronize(): undefined when every op queued so far has run, else a Promise resolved then
  // (failed ops included: their reads reject).
  Napi::Value Synchronize(const Napi::CallbackInfo& info);

  // Queues an op on the device's stream (core/stream.h) after the ops that write its inputs and
  // returns its event, which the caller gives to the op's outputs. Ops run in call order; the
  // JS thread only validates, allocates and queues.
  EventPtr submit(Napi::Env env, double work, EventList inputs, OpStart start,
                  std::vector<std::shared_ptr<ReadToken>> reads = {});

  // Makes sure the stream is flushed once the current JS turn ends (setImmediate), so that the
  // ops an asynchronous backend holds in its open batch are submitted together.
  void schedule_flush(Napi::Env env);

  // Shared with queued ops, which keep the backends alive past the device's collection.
  BackendPtr backend_;
  BackendPtr cpu_;
  StreamPtr stream_;
  std::shared_ptr<bool> flush_pending_ = std::make_shared<bool>(false);
  std::string fallback_reason_;

  // device_methods.cc: the methods are own properties of the device's JS object, functions that
  // reach the device through their data (Link) rather than napi_unwrap(this).
  struct Link {
    NativeDevice* device;  // null once the device is gone
  };
  void bind_methods(Napi::Object self);
  template <Napi::Value (NativeDevice::*Method)(const Napi::CallbackInfo&)>
  static Napi::Value call_bound(const Napi::CallbackInfo& info);
  static void drop_link(napi_env env, void* data, void* hint);  // a bound function's finalizer
  std::shared_ptr<Link> link_;
};

}  // namespace mto::addon
