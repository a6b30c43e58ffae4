// Host buffers from the size-class pool (buffers.h).
#include "buffers.h"

#include <mutex>

namespace mto::cpu {
namespace {

// A pooled block seen as a core Buffer: returns the block when the last tensor plane using it
// goes away.
class CpuBuffer final : public Buffer {
 public:
  CpuBuffer(std::shared_ptr<CpuBufferPool> owner, SizeClassPool* pool, SizeClassPool::Block block,
            size_t bytes)
      : Buffer(Adopt{}, block.handle, bytes), owner_(std::move(owner)), pool_(pool), block_(block) {}
  ~CpuBuffer() override { pool_->release(block_); }

 private:
  std::shared_ptr<CpuBufferPool> owner_;  // keeps pool_ alive
  SizeClassPool* pool_;
  SizeClassPool::Block block_;
};

}  // namespace

CpuBufferPool::CpuBufferPool(size_t cache_limit)
    : pool_(cache_limit, host_alloc, host_free),
      small_(kCpuSmallCacheLimit, host_alloc, host_free, 64) {}

std::shared_ptr<CpuBufferPool> CpuBufferPool::process_pool() {
  static std::mutex mutex;
  static std::weak_ptr<CpuBufferPool> current;
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<CpuBufferPool> pool = current.lock();
  if (!pool) {
    pool = std::make_shared<CpuBufferPool>(kCpuCacheLimit);
    current = pool;
  }
  return pool;
}

BufferPtr CpuBufferPool::allocate(size_t bytes) {
  SizeClassPool* pool = bytes < kCpuPoolMinBytes ? &small_ : &pool_;
  SizeClassPool::Block block = pool->acquire(bytes);  // throws Error(E_OOM)
  return std::make_shared<CpuBuffer>(shared_from_this(), pool, block, bytes);
}

}  // namespace mto::cpu
