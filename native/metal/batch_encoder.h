// One interface over the two ways this backend encodes a batch of ops into a command buffer
// (docs/design/METAL.md): the Metal 3 path (MTLCommandQueue, a concurrent MTLComputeCommandEncoder,
// macOS 14+) for the simdgroup tier, and the Metal 4 path (MTL4CommandQueue, command allocators,
// MTL4ComputeCommandEncoder with an MTL4ArgumentTable, a residency set; macOS 26+) for the
// TensorOps tiers. CommandStream (encode.h) decides what goes in a batch and when it is
// committed (core/commit_policy.h); an implementation only talks to Metal. Used from the JS
// thread (or the stream's drain thread, never both at once), like CommandStream.
// Objective-C++ only: include from native/metal/*.mm.
#pragma once
#import <Metal/Metal.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/backend.h"
#include "core/capabilities.h"
#include "core/hazards.h"
#include "residency.h"

namespace mto::metal {

class BatchEncoder {
 public:
  virtual ~BatchEncoder() = default;
  // "metal3" or "metal4", for messages and tests.
  virtual const char* path() const = 0;
  // Opens a command buffer and its compute encoder when none is open. Throws Error(E_BACKEND)
  // when Metal gives none.
  virtual void begin() = 0;
  virtual bool is_open() const = 0;
  // The bindings of the next dispatch; they stay until changed, as on an encoder.
  virtual void set_pipeline(id<MTLComputePipelineState> pipeline) = 0;
  virtual void set_bytes(const void* bytes, size_t length, uint32_t index) = 0;
  virtual void set_buffer(id<MTLBuffer> buffer, uint32_t index) = 0;
  // [[threadgroup(index)]] memory of `length` bytes (a multiple of 16, as Metal requires).
  virtual void set_threadgroup_memory(uint32_t length, uint32_t index) = 0;
  // Whether set_tensor can bind tensors on this path (Metal 4's argument table can; Metal 3's
  // encoder has no tensor setter). Asked before anything of an op is encoded.
  virtual bool binds_tensors() const = 0;
  // An MTLTensor (id<MTLTensor>, macOS 26) at buffer(index), as a kernel's tensor argument
  // (dispatch_plan.h TensorSlot). False where the path cannot bind one (binds_tensors()).
  virtual bool set_tensor(id tensor, uint32_t index) = 0;
  // Runs after every dispatch of earlier batches, and concurrently with the dispatches encoded
  // before it in this batch unless a barrier() separates them (CommandStream decides where:
  // core/hazards.h).
  virtual void dispatch(MTLSize threadgroups, MTLSize threads_per_threadgroup) = 0;
  // A memory barrier on buffers: the dispatches after it start once those before it in this
  // batch have finished, and see their writes.
  virtual void barrier() = 0;
  // `done` runs once the GPU has finished the open batch: OK, or the failure (E_OOM for out of
  // memory, else E_BACKEND with Metal's message). On any thread.
  virtual void on_completed(Completion done) = 0;
  // Ends encoding and commits the open batch (nothing when none is open).
  virtual void commit() = 0;
};

// The Metal 3 path (encode_metal3.mm): a concurrent compute encoder per batch, or with
// EncoderOrder::Serial (METAL_TENSOROPS_SERIAL_ENCODER=1, for debugging) a serial one, which
// runs every dispatch after the previous one and ignores barrier().
std::unique_ptr<BatchEncoder> make_metal3_encoder(id<MTLDevice> device, EncoderOrder order);

// The path for `tier` on this machine, as core/command_path.h decides it: Metal 4 for the
// TensorOps tiers where this build and the framework have it (caps.metal4_api), Metal 3 otherwise. `residency` receives the pool's buffers (buffers.h) and, on
// the Metal 4 path, becomes the device's residency set. Throws Error(E_BACKEND).
std::unique_ptr<BatchEncoder> make_batch_encoder(id<MTLDevice> device, const Capabilities& caps, Tier tier,
                                                 std::shared_ptr<ResidencyTracker> residency, EncoderOrder order);

}  // namespace mto::metal
