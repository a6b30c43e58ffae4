// The interface every backend implements (docs/design/ARCHITECTURE.md "One op, two backends"):
// tensor storage and the ops, each started on the JS thread and finished through a completion
// callback. native/addon talks only to this; native/cpu/backend.cc and native/metal/backend.mm
// implement it. Plain C++ (no Node-API, no Objective-C) so both sides compile everywhere they must.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "buffer_pool.h"
#include "capabilities.h"
#include "library_fallback.h"
#include "ops.h"
#include "tensor.h"
#include "tiers.h"
#include "user_kernel.h"

namespace mto {

// How an op ended. `code` is nullptr on success, else a stable error code (core/error.h).
struct OpStatus {
  const char* code = nullptr;
  std::string message;
  bool ok() const { return code == nullptr; }
};
// Thrown by an asynchronous backend's op, before it encodes anything, when encoding it needs work
// that takes long and is not done yet (the metal backend: compiling a library or a pipeline, tens
// of milliseconds each). The stream runs `prepare` on one of its own threads, never the JS
// thread and outside its encode lock (so a flush does not wait for a compiler), then starts the op
// again; what `prepare` throws fails the op.
struct EncodeNeedsPreparation {
  std::function<void()> prepare;
};

// compile_user_kernel's answer, called once on any thread: the program, or null and the failure
// (E_KERNEL quoting the compiler).
using UserKernelCompiled = std::function<void(UserKernelProgramPtr, OpStatus)>;

// Called exactly once per op that a backend accepted, on any thread (the cpu backend calls it
// before returning; the metal backend from the command buffer's completed handler).
using Completion = std::function<void(OpStatus)>;

// What dev.info reports about the backend that open() chose (docs/design/API.md DeviceInfo).
struct BackendInfo {
  std::string backend = "cpu";  // "metal" | "cpu"
  Tier tier = Tier::Cpu;
  std::string name;             // GPU name; "" for cpu (lib/ names the cpu model)
  bool neural_accelerators = false;
  std::string gpu_family;       // "apple9"; metal only
  bool has_gpu_fields = false;  // unified_memory / recommended_working_set are meaningful
  bool unified_memory = false;
  uint64_t recommended_working_set = 0;
  int threads = 0;              // cpu threads the host-side kernels use
  // metal only: the macOS version the tiers were decided on and how it was found
  // (core/os_detect.h: "kern.osproductversion", "NSProcessInfo 16.0.0 (a compatibility version)
  // read as 26.0", ...); "" on the cpu backend.
  std::string os_version;
  std::string os_source;
  // metal only: the GPU's core count the plans size their grids by and where it came from
  // (core/capabilities.h gpu_core_count: "ioregistry", "device-class", "default"); 0 on the cpu
  // backend.
  int gpu_cores = 0;
  std::string gpu_cores_source;
  // Shader libraries this device stopped using (core/library_fallback.h): they failed to compile
  // or make a pipeline, so the ops planned into them run one tier lower or on the cpu backend.
  // Found as ops first need them, so the list grows.
  std::vector<LibraryFallback> fallbacks;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendInfo info() const = 0;

  // Storage for a tensor plane of `bytes`, readable and writable by the host (on the metal
  // backend: shared MTLBuffers on unified memory, so reading a result is a plain memcpy).
  virtual BufferPtr allocate(size_t bytes) = 0;
  // The counters of the pool allocate() draws from (false when it has none).
  virtual bool buffer_stats(SizeClassPool::Stats* out) const { (void)out; return false; }

  // Called once on each quantized tensor just made from allocate()d planes: a backend may keep
  // its own view of them in q.device_view (metal on tensorops-mx: one MTLTensor with a scale
  // plane). The planes stay valid storage either way.
  virtual void attach_device_view(QTensor& q) { (void)q; }

  // True when the ops run their kernels on the calling thread and call `done` before they
  // return (the cpu backend): the addon then calls them inside a task given to post(), or inline
  // when tiny. False when they only encode and submit work and `done` comes later from another
  // thread (metal).
  virtual bool runs_on_caller() const = 0;

  // Runs task() later on one of the backend's own threads (the cpu backend: its thread pool, so
  // that an op reaches its kernel with one thread wake-up). Only backends that run_on_caller()
  // are given tasks; the others keep this default, which refuses.
  virtual void post(std::function<void()> task);

  // Submits the ops started since the last flush. A backend may hold ops that do not run on the
  // caller in a batch (the metal backend: one command buffer) until then; the addon calls it
  // once the JS turn that started them ends, so ops issued before an `await` travel together.
  virtual void flush() {}

  // The ops. Outputs are allocated by the caller with allocate() and shaped by core/ops.h's
  // check_*; inputs and outputs stay alive until `done` has run (the caller holds them). An op returns false without
  // doing anything (and without calling `done`) when this backend has no kernel for the request;
  // the caller then runs it on the cpu backend over the same host-visible storage. An
  // asynchronous backend's op may throw EncodeNeedsPreparation instead of blocking.
  virtual bool quantize(const Tensor& x, QTensor& out, Completion done) = 0;
  virtual bool dequantize(const QTensor& q, Tensor& out, Completion done) = 0;
  virtual bool cast(const Tensor& x, Tensor& out, Completion done) = 0;
  virtual bool linear(const Operand& x, const Operand& w, const Tensor* bias,
                      const LinearParams& p, Tensor& y, Completion done) = 0;
  virtual bool matmul(const Tensor& a, const Tensor& b, const MatmulParams& p, Tensor& c,
                      Completion done) = 0;
  virtual bool attention(const Operand& q, const Operand& k, const Operand& v,
                         const AttentionParams& p, Tensor& o, Completion done) = 0;

  // The model ops (core/ops.h). A backend without kernels for them keeps these defaults, which
  // decline: the stream then runs the cpu backend's, in order, once the inputs are ready.
  virtual bool unary(UnaryOp, const Tensor&, const ElementwiseParams&, Tensor&, Completion) { return false; }
  virtual bool binary(BinaryOp, const Tensor&, const Tensor&, const ElementwiseParams&, Tensor&, Completion) {
    return false;
  }
  virtual bool norm(const Tensor&, const Tensor*, const Tensor*, const NormParams&, Tensor&, Completion) {
    return false;
  }
  virtual bool rope(const Tensor&, const Tensor*, const Tensor*, const RopeParams&, Tensor&, Completion) {
    return false;
  }
  virtual bool softmax(const Tensor&, const RowsParams&, Tensor&, Completion) { return false; }
  virtual bool argmax(const Tensor&, const PickParams&, Tensor&, Completion) { return false; }
  virtual bool top_k(const Tensor&, const PickParams&, Tensor&, Tensor&, Completion) { return false; }
  virtual bool sample(const Tensor&, const PickParams&, Tensor&, Completion) { return false; }
  virtual bool embedding(const Operand&, const Tensor&, const EmbeddingParams&, Tensor&, Completion) { return false; }
  virtual bool grouped_linear(const Operand&, const Operand&, const Tensor&, const GroupedLinearParams&, Tensor&,
                              Completion) {
    return false;
  }
  // groupRows: the metal backend sorts on the GPU (shaders/group_rows.metal); a backend without
  // a kernel declines and the stream runs the cpu backend's once ids are ready.
  virtual bool group_rows(const Tensor&, const GroupRowsParams&, Tensor&, Tensor&, Tensor&, Completion) { return false; }
  // Copies srcs[i] through parts[i] into dst (transpose, slice, concat, write).
  virtual bool copy(const std::vector<const Tensor*>&, const std::vector<CopyPart>&, Tensor&, Completion) {
    return false;
  }

  // Users' kernels (core/user_kernel.h). compile_user_kernel starts compiling `source` (the whole
  // generated MSL text, kernel `name` in it, written for `tier`: Simdgroup, MSL 3.1, or TensorOps,
  // MSL 4.0) without blocking the caller and calls `done` once,
  // on any thread; false, and `done` never called, when this backend compiles no MSL (the cpu
  // backend: lib/ runs user kernels in the emulator). user_kernel encodes one run of a program
  // this backend made; false when it cannot bind the launch's buffers.
  virtual bool compile_user_kernel(const std::string& name, const std::string& source, Tier tier, UserKernelCompiled done) {
    (void)name, (void)source, (void)tier, (void)done;
    return false;
  }
  virtual bool user_kernel(const UserKernelLaunch&, Completion) { return false; }
};
using BackendPtr = std::shared_ptr<Backend>;

// Backend::allocate as an Allocator (core/tensor.h), for make_tensor/make_qtensor, which call it
// before they return: the caller's BackendPtr keeps the backend alive meanwhile. A raw pointer,
// not a copy of the shared_ptr: a lambda holding one is too big for std::function's inline
// storage, so each op's output cost the JS thread a malloc and two atomic count updates.
inline Allocator allocator_of(const BackendPtr& b) {
  return [backend = b.get()](size_t bytes) { return backend->allocate(bytes); };
}

// The cpu backend with `threads` worker threads (0: one per hardware thread).
BackendPtr make_cpu_backend(int threads);

// Runs fn, turning what it throws into a status (mto::Error keeps its code; bad_alloc is E_OOM;
// anything else E_BACKEND).
OpStatus capture_status(const std::function<void()>& fn);

struct OpenedBackend {
  BackendPtr backend;
  std::string fallback_reason;  // why a faster backend or tier was not used; "" if none
};

// The backend open() runs (backend_open.cc): on macOS builds with Metal, the metal backend at the
// tier select_tier chooses from probed capabilities; else `cpu`, with the reason. `request`
// carries options.backend overridden by METAL_TENSOROPS_BACKEND, and METAL_TENSOROPS_TIER.
// Throws Error(E_ARG) for unknown names and Error(E_BACKEND) when a forced backend or tier cannot
// run here. `cpu` is also what the metal backend's caller runs ops on that it has no kernel for.
OpenedBackend open_backend(const TierRequest& request, const BackendPtr& cpu);

// "linux-x64", "darwin-arm64", "win32-x64": this build's platform, in Node.js's words.
std::string build_platform();

}  // namespace mto
