// Tensor storage on the cpu backend: host memory (core/tensor.h's host_alloc) from a size-class
// pool (core/buffer_pool.h), as the metal backend's MTLBuffers come from one (metal/buffers.h).
// A loop that makes and drops tensors of the same sizes (each op's output, dequantized weights)
// then reuses warm memory instead of faulting in fresh pages every time. On the 2-core virtual
// machine here, writing a fresh 16 MiB buffer (attention prefill's output) took 1.6-2.6 ms with
// huge pages, 10-14 ms without and ~57 ms where the guest had never touched the memory, against
// 1.0-1.4 ms for a reused one; attention prefill (L 1024, 2 threads) went from ~117-124 to ~98-105
// ms, the page zeroing having been ~20% of its profile.
#pragma once
#include <memory>

#include "../core/buffer_pool.h"
#include "../core/tensor.h"

namespace mto::cpu {

// Released buffers kept for reuse: at most this many bytes per process (kPoolLargeBytes, the
// largest block the pool caches, so one such block fits).
constexpr size_t kCpuCacheLimit = kPoolLargeBytes;
// Smaller requests skip the pool: it rounds every block up to whole 16 KiB pages (Metal's
// granularity), where malloc packs small blocks tightly and keeps them in its heap, warm.
constexpr size_t kCpuPoolMinBytes = size_t(64) << 10;

// The pool. Shared (shared_ptr) by every buffer it handed out, so a buffer freed after the
// backend is gone (a tensor kept past its device) still has its pool.
class CpuBufferPool : public std::enable_shared_from_this<CpuBufferPool> {
 public:
  explicit CpuBufferPool(size_t cache_limit);
  // The process's pool, shared by every cpu device (worker threads' included), so that the cache
  // is bounded per process, not per device; made again once no device or buffer holds it.
  static std::shared_ptr<CpuBufferPool> process_pool();

  // A Buffer of `bytes` (its contents undefined, as a fresh allocation's): from the pool from
  // kCpuPoolMinBytes on. Throws Error(E_OOM).
  BufferPtr allocate(size_t bytes);
  SizeClassPool::Stats stats() const { return pool_.stats(); }

 private:
  SizeClassPool pool_;
};

}  // namespace mto::cpu
