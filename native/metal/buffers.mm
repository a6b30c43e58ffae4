// Shared MTLBuffers from the size-class pool (buffers.h).
#include "buffers.h"

#include "core/error.h"

namespace mto::metal {
namespace {

// Shared storage: one allocation the CPU and GPU both address (unified memory). Hazard tracking
// stays on (the default): each op is one command buffer with a serial compute encoder, and Metal
// orders its dispatches and the ops that read a result after it.
constexpr MTLResourceOptions kSharedOptions =
    MTLResourceStorageModeShared | MTLResourceCPUCacheModeDefaultCache;

// A pooled block seen as a core Buffer. The pool holds the MTLBuffer (retained as an opaque
// handle); this object returns the block when the last tensor plane using it goes away.
class MetalBuffer final : public Buffer {
 public:
  MetalBuffer(std::shared_ptr<MetalBufferPool> owner, SizeClassPool* pool, SizeClassPool::Block block,
              size_t bytes)
      : Buffer(Adopt{}, [(__bridge id<MTLBuffer>)block.handle contents], bytes),
        owner_(std::move(owner)),
        pool_(pool),
        block_(block) {}
  ~MetalBuffer() override { pool_->release(block_); }

  id<MTLBuffer> mtl() const { return (__bridge id<MTLBuffer>)block_.handle; }

 private:
  std::shared_ptr<MetalBufferPool> owner_;  // keeps pool_ alive
  SizeClassPool* pool_;
  SizeClassPool::Block block_;
};

}  // namespace

MetalBufferPool::MetalBufferPool(id<MTLDevice> device, size_t cache_limit)
    : pool_(
          cache_limit,
          [device](size_t bytes) -> void* {
            id<MTLBuffer> b = [device newBufferWithLength:bytes options:kSharedOptions];
            // The pool owns one retain count per block until free releases it.
            return b ? (__bridge_retained void*)b : nullptr;
          },
          [](void* handle, size_t) {
            id<MTLBuffer> b = (__bridge_transfer id<MTLBuffer>)handle;  // released at scope end
            (void)b;
          }) {}

BufferPtr MetalBufferPool::allocate(size_t bytes) {
  SizeClassPool::Block block = pool_.acquire(bytes);  // throws Error(E_OOM)
  return std::make_shared<MetalBuffer>(shared_from_this(), &pool_, block, bytes);
}

id<MTLBuffer> mtl_buffer(const Buffer* buffer) {
  const auto* m = dynamic_cast<const MetalBuffer*>(buffer);
  return m ? m->mtl() : nil;
}

}  // namespace mto::metal
