// The Metal 4 path of batch_encoder.h, for the TensorOps tiers (macOS 26; Apple's MTL4*.h and
// MTLResidencySet.h headers say how each piece behaves):
// - an MTL4CommandQueue; each batch is an MTL4CommandBuffer encoded from a command allocator
//   taken from a free list, and an allocator goes back (reset) only once the GPU has finished
//   the command buffer made from it (MTL4CommandAllocator.h);
// - one MTL4ComputeCommandEncoder per batch whose bindings come from an MTL4ArgumentTable:
//   buffers by GPU address (setAddress:atIndex:), tensors by resource id
//   (setResource:atBufferIndex:). The encoder snapshots the table at each dispatch, so one table
//   is rebound between dispatches. Metal 4 has no setBytes: parameter bytes are copied into a
//   shared buffer of the batch and bound by address;
// - no hazard tracking: an encoder barrier (barrierAfterEncoderStages:) where CommandStream finds
//   a dependency between dispatches of the batch (core/hazards.h; before every dispatch but the
//   first with METAL_TENSOROPS_SERIAL_ENCODER=1), and a queue barrier at the start of each batch
//   (each batch after the previous batch);
// - completion through the commit's feedback handler (MTL4CommitOptions addFeedbackHandler:),
//   called once the GPU has finished the command buffer, with its error if it failed;
// - residency: the device's MTLResidencySet is added to the queue once; the tracker's changes
//   (residency.h) are applied and the set committed before each command buffer is.
// Built only with an SDK that declares Metal 4 (macOS 26 SDK); older SDKs get no Metal 4 path and
// the TensorOps tiers are not offered (device.mm).
#include "batch_encoder.h"

#import <Foundation/Foundation.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "metal4_path.h"
#include "objc_strings.h"

#if MTO_HAVE_METAL4

namespace mto::metal {
namespace {

// Buffer binding slots of the argument table: the most Metal allows (MTL4ArgumentTable.h).
constexpr NSUInteger kBufferSlots = 31;
// Parameter bytes are placed at this alignment (constant-buffer offsets need 256 bytes on some
// Mac GPUs; unified-memory Apple GPUs need less) in shared buffers of this size.
constexpr size_t kParamAlign = 256;
constexpr size_t kParamBlock = size_t(64) << 10;

OpStatus feedback_failure(NSError* e) API_AVAILABLE(macos(26.0)) {
  const std::string text = error_text(e, "the command buffer failed");
  if ([e.domain isEqualToString:MTL4CommandQueueErrorDomain]) {
    if (e.code == NSInteger(MTL4CommandQueueErrorOutOfMemory)) {
      return OpStatus{code::OOM, "the GPU ran out of memory running the op: " + text};
    }
    if (e.code == NSInteger(MTL4CommandQueueErrorTimeout)) {
      return OpStatus{code::Backend, "the GPU took too long and the system stopped the op: " + text};
    }
  }
  return OpStatus{code::Backend, "the GPU failed running the op: " + text};
}

// Objects shared with the feedback handlers (which run on a Metal thread): what goes back to a
// free list once the GPU is done with a batch.
struct API_AVAILABLE(macos(26.0)) Recycler {
  std::mutex mu;
  std::vector<id<MTL4CommandAllocator>> allocators;
  std::vector<id<MTLBuffer>> param_blocks;
};

class API_AVAILABLE(macos(26.0)) Metal4Encoder final : public BatchEncoder {
 public:
  Metal4Encoder(id<MTLDevice> device, std::shared_ptr<ResidencyTracker> residency)
      : device_(device), residency_(std::move(residency)), recycler_(std::make_shared<Recycler>()) {
    queue_ = [device newMTL4CommandQueue];
    MTL4ArgumentTableDescriptor* td = [MTL4ArgumentTableDescriptor new];
    td.maxBufferBindCount = kBufferSlots;
    td.initializeBindings = YES;
    NSError* error = nil;
    table_ = [device newArgumentTableWithDescriptor:td error:&error];
    MTLResidencySetDescriptor* rd = [MTLResidencySetDescriptor new];
    rd.label = @"metal-tensorops";
    NSError* rerror = nil;
    set_ = [device newResidencySetWithDescriptor:rd error:&rerror];
    if (!queue_ || !table_ || !set_) {
      throw Error(code::Backend, "could not create the Metal 4 command queue, argument table or residency set: " +
                                     error_text(error ? error : rerror, "Metal returned nil"));
    }
    [queue_ addResidencySet:set_];
    [set_ requestResidency];
    residency_->enable();
  }
  const char* path() const override { return "metal4"; }
  bool is_open() const override { return batch_ != nil; }

  void begin() override {
    if (batch_) return;
    id<MTL4CommandAllocator> allocator = take_allocator();
    id<MTL4CommandBuffer> cb = allocator ? [device_ newCommandBuffer] : nil;
    if (!cb) throw Error(code::Backend, "could not create a Metal 4 command allocator or command buffer");
    [cb beginCommandBufferWithAllocator:allocator];
    id<MTL4ComputeCommandEncoder> enc = [cb computeCommandEncoder];
    if (!enc) {
      [cb endCommandBuffer];
      [allocator reset];  // nothing encoded from it was committed
      give_back(allocator);
      throw Error(code::Backend, "could not create a Metal 4 compute encoder");
    }
    // This batch's dispatches wait for the previous batches' (the queue orders nothing itself).
    [enc barrierAfterQueueStages:MTLStageDispatch beforeStages:MTLStageDispatch
               visibilityOptions:MTL4VisibilityOptionDevice];
    [enc setArgumentTable:table_];
    batch_ = cb;
    encoder_ = enc;
    allocator_ = allocator;
  }

  void set_pipeline(id<MTLComputePipelineState> pipeline) override { [encoder_ setComputePipelineState:pipeline]; }

  void set_bytes(const void* bytes, size_t length, uint32_t index) override {
    size_t offset = (param_used_ + kParamAlign - 1) / kParamAlign * kParamAlign;
    if (!param_block_ || offset + length > param_block_.length) {
      param_block_ = take_param_block(length);
      offset = 0;
    }
    std::memcpy(static_cast<char*>([param_block_ contents]) + offset, bytes, length);
    param_used_ = offset + length;
    [table_ setAddress:param_block_.gpuAddress + offset atIndex:index];
  }

  void set_buffer(id<MTLBuffer> buffer, uint32_t index) override { [table_ setAddress:buffer.gpuAddress atIndex:index]; }

  // On the encoder, not the argument table: threadgroup memory is no resource.
  void set_threadgroup_memory(uint32_t length, uint32_t index) override {
    [encoder_ setThreadgroupMemoryLength:length atIndex:index];
  }

  // By resource id into the argument table (MTL4ArgumentTable.h: tensors bind with
  // setResource:atBufferIndex:); the tensor is resident from when it was made (qtensor.mm adds it
  // to the residency set, applied before this batch commits).
  bool binds_tensors() const override { return true; }
  bool set_tensor(id tensor, uint32_t index) override {
    id<MTLTensor> t = tensor;
    [table_ setResource:t.gpuResourceID atBufferIndex:index];
    return true;
  }

  void dispatch(MTLSize groups, MTLSize threads) override {
    [encoder_ dispatchThreadgroups:groups threadsPerThreadgroup:threads];
  }

  // The dispatches after it wait for those before it in this encoder, and see their writes.
  void barrier() override {
    [encoder_ barrierAfterEncoderStages:MTLStageDispatch beforeEncoderStages:MTLStageDispatch
                      visibilityOptions:MTL4VisibilityOptionDevice];
  }

  void on_completed(Completion done) override { completions_.push_back(std::move(done)); }

  void commit() override {
    if (!batch_) return;
    [encoder_ endEncoding];
    [batch_ endCommandBuffer];
    apply_residency();
    MTL4CommitOptions* options = [MTL4CommitOptions new];
    // Everything the GPU may still use travels with the handler and goes back after it ran.
    auto completions = std::make_shared<std::vector<Completion>>(std::move(completions_));
    std::shared_ptr<Recycler> recycler = recycler_;
    id<MTL4CommandAllocator> allocator = allocator_;
    std::vector<id<MTLBuffer>> blocks = std::move(batch_blocks_);
    [options addFeedbackHandler:^(id<MTL4CommitFeedback> feedback) {
      NSError* e = feedback.error;
      const OpStatus status = e ? feedback_failure(e) : OpStatus{};
      {
        std::lock_guard<std::mutex> lock(recycler->mu);
        [allocator reset];  // every command buffer made from it has completed
        recycler->allocators.push_back(allocator);
        for (id<MTLBuffer> b : blocks) recycler->param_blocks.push_back(b);
      }
      for (Completion& done : *completions) done(status);
    }];
    id<MTL4CommandBuffer> buffers[1] = {batch_};
    [queue_ commit:buffers count:1 options:options];
    batch_ = nil;
    encoder_ = nil;
    allocator_ = nil;
    param_block_ = nil;
    param_used_ = 0;
    completions_.clear();
    batch_blocks_.clear();
  }

 private:
  id<MTL4CommandAllocator> take_allocator() {
    {
      std::lock_guard<std::mutex> lock(recycler_->mu);
      if (!recycler_->allocators.empty()) {
        id<MTL4CommandAllocator> a = recycler_->allocators.back();
        recycler_->allocators.pop_back();
        return a;
      }
    }
    return [device_ newCommandAllocator];
  }
  void give_back(id<MTL4CommandAllocator> allocator) {
    std::lock_guard<std::mutex> lock(recycler_->mu);
    recycler_->allocators.push_back(allocator);
  }

  // A shared block with room for `length` parameter bytes (the plans' parameters are a few
  // hundred bytes; Metal 3's setBytes allows 4 KiB), held by this batch until the GPU is done
  // with it, then reused. A new block becomes resident with the batch that first uses it.
  id<MTLBuffer> take_param_block(size_t length) {
    if (length > kParamBlock) {
      throw Error(code::Backend, "internal: " + std::to_string(length) + " bytes of kernel parameters (at most " +
                                     std::to_string(kParamBlock) + ")");
    }
    id<MTLBuffer> b = nil;
    {
      std::lock_guard<std::mutex> lock(recycler_->mu);
      if (!recycler_->param_blocks.empty()) {
        b = recycler_->param_blocks.back();
        recycler_->param_blocks.pop_back();
      }
    }
    if (!b) {
      b = [device_ newBufferWithLength:kParamBlock options:MTLResourceStorageModeShared];
      if (!b) throw Error(code::OOM, "could not allocate a buffer for kernel parameters");
      residency_->add(b);
    }
    batch_blocks_.push_back(b);
    return b;
  }

  // The pool's and our own additions and removals since the last commit, applied at once.
  void apply_residency() {
    const std::vector<ResidencyTracker::Change> changes = residency_->take();
    if (changes.empty()) return;
    std::vector<id<MTLAllocation>> adds, removes;
    for (const ResidencyTracker::Change& c : changes) (c.add ? adds : removes).push_back(c.allocation);
    if (!adds.empty()) [set_ addAllocations:adds.data() count:adds.size()];
    if (!removes.empty()) [set_ removeAllocations:removes.data() count:removes.size()];
    [set_ commit];
  }

  id<MTLDevice> device_;
  std::shared_ptr<ResidencyTracker> residency_;
  std::shared_ptr<Recycler> recycler_;
  id<MTL4CommandQueue> queue_ = nil;
  id<MTL4ArgumentTable> table_ = nil;
  id<MTLResidencySet> set_ = nil;
  id<MTL4CommandBuffer> batch_ = nil;
  id<MTL4ComputeCommandEncoder> encoder_ = nil;
  id<MTL4CommandAllocator> allocator_ = nil;
  id<MTLBuffer> param_block_ = nil;
  size_t param_used_ = 0;
  std::vector<id<MTLBuffer>> batch_blocks_;  // parameter blocks this batch uses
  std::vector<Completion> completions_;
};

}  // namespace

std::unique_ptr<BatchEncoder> make_metal4_encoder(id<MTLDevice> device, std::shared_ptr<ResidencyTracker> residency) {
  return std::make_unique<Metal4Encoder>(device, std::move(residency));
}

}  // namespace mto::metal

#endif  // MTO_HAVE_METAL4
