// Encoding dispatch plans (core/dispatch_plan.h) into a command buffer and committing it. The
// plan decides kernel, grid, threadgroup size, buffer slots and parameter bytes; this file only
// binds and dispatches exactly that (no geometry is decided in Objective-C++), through the tier's
// command path (batch_encoder.h: Metal 3, or Metal 4 for the TensorOps tiers), and reports the
// end through that path's completion (a completed handler, or the Metal 4 commit feedback): no
// thread waits on the GPU.
// Objective-C++ only: include from native/metal/*.mm.
#pragma once
#import <Metal/Metal.h>

#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "core/commit_policy.h"
#include "core/hazards.h"
#include "batch_encoder.h"
#include "buffers.h"
#include "core/dispatch_plan.h"
#include "shader_library.h"

namespace mto::metal {

// What each plan::Arg is bound to for one op: a buffer of the metal backend, or nil when the
// plan does not use that argument; for a tensor argument (plan::TensorSlot) an MTLTensor.
class ArgTable {
 public:
  // Binds `arg` to `buffer`'s MTLBuffer; false when `buffer` is not metal storage (the op then
  // declines and the cpu backend runs it).
  bool bind(plan::Arg arg, const Buffer* buffer);
  id<MTLBuffer> get(plan::Arg arg) const { return table_[size_t(arg)]; }
  // The bytes [offset, offset + length) of `arg`'s buffer that the kernels of the op can touch
  // through it, where the op knows them (a copy's destination: the span its part writes). Unset:
  // the whole buffer. Only the encoder's barriers use it (core/hazards.h); binding stays at offset 0.
  void set_range(plan::Arg arg, uint64_t offset, uint64_t length) { ranges_[size_t(arg)] = {offset, length}; }
  // `arg`'s buffer and range, as the barrier rule sees them.
  BufferRange range(plan::Arg arg) const;
  // Binds tensor argument `arg` to `tensor` (an id<MTLTensor>, e.g. qtensor.h's scale-plane
  // tensor); false when it is nil.
  bool bind_tensor(plan::Arg arg, id tensor);
  id get_tensor(plan::Arg arg) const { return tensors_[size_t(arg)]; }

 private:
  std::array<id<MTLBuffer>, plan::kArgCount> table_{};
  std::array<id, plan::kArgCount> tensors_{};
  struct Span {
    uint64_t offset = 0;
    uint64_t length = kWholeBuffer;
  };
  std::array<Span, plan::kArgCount> ranges_{};
};

// The device's command queue and the batch being encoded. Used from the JS thread only.
class CommandStream {
 public:
  // `encoder`: the tier's command path (make_batch_encoder). `order`: Concurrent encodes a barrier
  // only before a dispatch that depends on one encoded since the last barrier (core/hazards.h);
  // Serial (METAL_TENSOROPS_SERIAL_ENCODER=1, for debugging) before every dispatch but a batch's first.
  CommandStream(std::unique_ptr<BatchEncoder> encoder, ShaderLibraries& libraries, CommitPolicy policy,
                EncoderOrder order = EncoderOrder::Concurrent);

  // "metal3" or "metal4": the command path this stream encodes through.
  const char* path() const { return encoder_->path(); }

  // Encodes `passes` in order into the open batch: one command buffer with one concurrent compute
  // encoder, shared by every op started since the last flush(). Each pass's buffers are read or
  // written by its arguments' roles (plan::arg_access) over their ranges (ArgTable::set_range); a
  // barrier goes before a pass that reads what a pass since the last barrier wrote, or writes
  // what one read or wrote, within an op and across ops (core/hazards.h), so every pass still sees
  // the writes it depends on. When the GPU is done with
  // the batch: a GPU error becomes a failed status for every op in it (E_OOM for out of memory,
  // else E_BACKEND with Metal's message); then `done` is called. The kernels write every output
  // in its own dtype, so nothing of the op runs on the handler's thread. `hold` keeps buffers
  // the op made for itself (scratch) alive until then; its inputs and outputs are the caller's.
  // A pass's tensor slots bind their MTLTensors (ArgTable::bind_tensor) through the path's
  // set_tensor. Returns false, having encoded nothing and without calling `done`, when a pass has
  // tensor arguments and the path cannot bind them (Metal 3), or when a pass's threadgroup
  // is larger than its pipeline's maxTotalThreadsPerThreadgroup on this GPU: the op declines
  // and the cpu backend runs it (plans of kernels built for a fixed threadgroup, tiles of
  // SIMD-groups, cannot shrink; the row kernels' plans size themselves from max_threads first).
  // Throws Error(E_BACKEND), having encoded nothing, when a pipeline cannot be made (the
  // compiler's message) or the plan does not fit the bindings.
  bool submit(const std::vector<plan::Dispatch>& passes, const ArgTable& args, std::shared_ptr<void> hold,
              Completion done);
  // The same with a table per pass (args[i] for passes[i]): one op whose passes bind different
  // buffers to one argument (concat: a copy pass per input tensor, each its own Src).
  bool submit(const std::vector<plan::Dispatch>& passes, const std::vector<ArgTable>& args,
              std::shared_ptr<void> hold, Completion done);

  // One run of a user kernel (core/user_kernel.h; user_kernel.mm) into the open batch, as submit
  // encodes a pass: `pipeline` with each launch argument at its [[buffer(index)]], a tensor plane
  // by its MTLBuffer or bytes by set_bytes. An output with an init value is filled on the host
  // first (fresh shared storage that no command encoded before it uses). Returns false, having
  // encoded nothing, when a plane is not Metal storage.
  bool submit_user(id<MTLComputePipelineState> pipeline, const UserKernelLaunch& launch, Completion done);

  // Ends the batch's encoder and commits its command buffer (no-op when nothing is open).
  void flush();

  // The most threads per threadgroup the pipeline of `d` allows on this GPU (its
  // maxTotalThreadsPerThreadgroup), for plans that size their threadgroups from it. Never
  // compiles: throws EncodeNeedsPreparation, as submit does, while the pipeline is not made yet.
  uint32_t max_threads(const plan::Dispatch& d);

 private:
  // A batch is also committed before flush() once it holds the policy's max_ops ops or its ops
  // bound max_bytes of buffers (BatchBudget, core/commit_policy.h), so that the GPU starts on a
  // long chain of ops while the rest is still being encoded.
  BatchBudget budget_;
  std::unique_ptr<BatchEncoder> encoder_;
  ShaderLibraries& libraries_;
  // The barrier rule: what the batch's dispatches since its last barrier read and wrote.
  BarrierPlanner barriers_;
  // Encodes a barrier before a dispatch that reads `reads` and writes `writes` where the rule says.
  void order_dispatch(const std::vector<BufferRange>& reads, const std::vector<BufferRange>& writes);
};

// Kernels that can find their input invalid (an id outside a table, group sizes that do not add
// up, a row without a distribution) cannot throw: each such op binds a small status buffer of its
// own, its kernel writes what it found there, and this wraps `done` so that once the GPU has
// finished without an error, read(the buffer's contents) becomes the op's status.
Completion complete_with_status(BufferPtr status, std::function<OpStatus(const int32_t*)> read, Completion done);

}  // namespace mto::metal
