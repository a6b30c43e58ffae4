// Tensor storage on the metal backend: shared-storage MTLBuffers from a size-class pool
// (core/buffer_pool.h), so a loop that makes and drops tensors reuses a few buffers instead of
// approaching Metal's limits. On unified memory the CPU addresses the same bytes the GPU does:
// dev.tensor() writes and tensor.data() reads them with a plain memcpy, no blit, no copy on the
// GPU. Objective-C++ only: include from native/metal/*.mm.
#pragma once
#import <Metal/Metal.h>

#include <memory>

#include "core/buffer_pool.h"
#include "core/tensor.h"
#include "residency.h"

namespace mto::metal {

// The pool and the device it allocates from. Shared (shared_ptr) by every buffer it handed out,
// so a buffer freed after the backend is gone still has its pool.
class MetalBufferPool : public std::enable_shared_from_this<MetalBufferPool> {
 public:
  // `cache_limit` bytes of released buffers are kept for reuse. Each MTLBuffer the pool makes
  // is added to `residency` and removed when the pool frees it: pooled blocks stay resident.
  MetalBufferPool(id<MTLDevice> device, size_t cache_limit, std::shared_ptr<ResidencyTracker> residency);

  // A Buffer (core/tensor.h) whose data() is the MTLBuffer's contents. Throws Error(E_OOM).
  BufferPtr allocate(size_t bytes);
  SizeClassPool::Stats stats() const { return pool_.stats(); }

 private:
  SizeClassPool pool_;  // its alloc function holds the device
};

// The MTLBuffer behind a Buffer the metal backend allocated; nil for any other Buffer (host
// memory of the cpu backend), which the caller must then not bind.
id<MTLBuffer> mtl_buffer(const Buffer* buffer);

}  // namespace mto::metal
