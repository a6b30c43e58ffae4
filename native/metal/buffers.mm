// Shared MTLBuffers from the size-class pool (buffers.h).
#include "buffers.h"

#include "core/error.h"

namespace mto::metal {
namespace {

// Shared storage: one allocation the CPU and GPU both address (unified memory). Hazard tracking
// stays on (the default) for the Metal 3 path, where Metal orders command buffers of the queue
// and the concurrent encoder's barriers (core/hazards.h) order the dispatches within one; the
// Metal 4 path tracks no hazards and orders everything with barriers (encode_metal4.mm).
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

MetalBufferPool::MetalBufferPool(id<MTLDevice> device, size_t cache_limit,
                                 std::shared_ptr<ResidencyTracker> residency)
    : pool_(
          cache_limit,
          [device, residency](size_t bytes) -> void* {
            id<MTLBuffer> b = [device newBufferWithLength:bytes options:kSharedOptions];
            if (b) residency->add(b);
            // The pool owns one retain count per block until free releases it.
            return b ? (__bridge_retained void*)b : nullptr;
          },
          [residency](void* handle, size_t) {
            // The tracker holds the buffer until its removal is applied.
            id<MTLBuffer> b = (__bridge_transfer id<MTLBuffer>)handle;  // released at scope end
            residency->remove(b);
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
