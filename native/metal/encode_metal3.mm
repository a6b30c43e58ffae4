// The Metal 3 path of batch_encoder.h: an MTLCommandBuffer with one concurrent compute encoder
// (MTLDispatchTypeConcurrent: dispatches may overlap), ordered by memoryBarrierWithScope:
// MTLBarrierScopeBuffers where CommandStream finds a dependency (core/hazards.h); hazard tracking
// orders command buffers of the queue. EncoderOrder::Serial makes a serial encoder instead, whose
// dispatches run one after another (Metal ignores a barrier on it: MTLComputeCommandEncoder.h).
// Completion through the command buffer's completed handler.
#include "batch_encoder.h"

#import <Foundation/Foundation.h>

#include <string>

#include "core/error.h"
#include "objc_strings.h"

namespace mto::metal {
namespace {

// The status an errored command buffer reports to the op's Promise.
OpStatus gpu_failure(id<MTLCommandBuffer> buffer) {
  NSError* e = buffer.error;
  const std::string text = error_text(e, "the command buffer ended in an error state");
  if (e && [e.domain isEqualToString:MTLCommandBufferErrorDomain]) {
    if (e.code == NSInteger(MTLCommandBufferErrorOutOfMemory)) {
      return OpStatus{code::OOM, "the GPU ran out of memory running the op: " + text};
    }
    if (e.code == NSInteger(MTLCommandBufferErrorTimeout)) {
      return OpStatus{code::Backend, "the GPU took too long and the system stopped the op: " + text};
    }
  }
  return OpStatus{code::Backend, "the GPU failed running the op: " + text};
}

class Metal3Encoder final : public BatchEncoder {
 public:
  Metal3Encoder(id<MTLDevice> device, EncoderOrder order)
      : queue_([device newCommandQueue]),
        dispatch_type_(order == EncoderOrder::Serial ? MTLDispatchTypeSerial : MTLDispatchTypeConcurrent) {
    if (!queue_) throw Error(code::Backend, "could not create a Metal command queue");
    queue_.label = @"metal-tensorops";
  }
  const char* path() const override { return "metal3"; }
  bool is_open() const override { return batch_ != nil; }

  void begin() override {
    if (batch_) return;
    batch_ = [queue_ commandBuffer];
    encoder_ = batch_ ? [batch_ computeCommandEncoderWithDispatchType:dispatch_type_] : nil;
    if (!encoder_) {
      batch_ = nil;
      throw Error(code::Backend, "could not create a Metal command buffer or compute encoder");
    }
  }
  void set_pipeline(id<MTLComputePipelineState> pipeline) override { [encoder_ setComputePipelineState:pipeline]; }
  void set_bytes(const void* bytes, size_t length, uint32_t index) override {
    [encoder_ setBytes:bytes length:length atIndex:index];
  }
  void set_buffer(id<MTLBuffer> buffer, uint32_t index) override { [encoder_ setBuffer:buffer offset:0 atIndex:index]; }
  void set_threadgroup_memory(uint32_t length, uint32_t index) override {
    [encoder_ setThreadgroupMemoryLength:length atIndex:index];
  }
  bool binds_tensors() const override { return false; }
  bool set_tensor(id, uint32_t) override { return false; }
  void dispatch(MTLSize groups, MTLSize threads) override {
    [encoder_ dispatchThreadgroups:groups threadsPerThreadgroup:threads];
  }
  void barrier() override { [encoder_ memoryBarrierWithScope:MTLBarrierScopeBuffers]; }
  void on_completed(Completion done) override {
    // The block copies `done`; it is released with the block, after it ran.
    [batch_ addCompletedHandler:^(id<MTLCommandBuffer> buffer) {
      OpStatus status;
      if (buffer.status == MTLCommandBufferStatusError) status = gpu_failure(buffer);
      done(std::move(status));
    }];
  }
  void commit() override {
    if (!batch_) return;
    [encoder_ endEncoding];
    [batch_ commit];
    batch_ = nil;
    encoder_ = nil;
  }

 private:
  id<MTLCommandQueue> queue_;
  MTLDispatchType dispatch_type_;
  id<MTLCommandBuffer> batch_ = nil;
  id<MTLComputeCommandEncoder> encoder_ = nil;
};

}  // namespace

std::unique_ptr<BatchEncoder> make_metal3_encoder(id<MTLDevice> device, EncoderOrder order) {
  return std::make_unique<Metal3Encoder>(device, order);
}

}  // namespace mto::metal
