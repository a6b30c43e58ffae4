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
// Smaller requests come from a second pool of 64-byte-line classes instead (rounding them to
// 16 KiB pages, Metal's granule, would waste most of each). malloc served them before, but a
// decode step makes and drops several such outputs per op, and glibc's aligned allocation and the
// consolidation that frees of ~1-64 KiB blocks trigger were a third of the JS thread's cost of
// queueing an op (perf, decode step).
constexpr size_t kCpuPoolMinBytes = size_t(64) << 10;
// What the small pool keeps cached: a decode step's outputs many times over.
constexpr size_t kCpuSmallCacheLimit = size_t(16) << 20;

// The pool. Shared (shared_ptr) by every buffer it handed out, so a buffer freed after the
// backend is gone (a tensor kept past its device) still has its pool.
class CpuBufferPool : public std::enable_shared_from_this<CpuBufferPool> {
 public:
  explicit CpuBufferPool(size_t cache_limit);
  // The process's pool, shared by every cpu device (worker threads' included), so that the cache
  // is bounded per process, not per device; made again once no device or buffer holds it.
  static std::shared_ptr<CpuBufferPool> process_pool();

  // A Buffer of `bytes` (its contents undefined, as a fresh allocation's): from the page pool
  // from kCpuPoolMinBytes on, else from the small pool. Throws Error(E_OOM).
  BufferPtr allocate(size_t bytes);
  // The page pool's counters (what dev's internal bufferStats reports).
  SizeClassPool::Stats stats() const { return pool_.stats(); }

 private:
  SizeClassPool pool_;
  SizeClassPool small_;
};

}  // namespace mto::cpu
