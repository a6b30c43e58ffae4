// Size-class buffer pool, as backend-neutral logic. The metal backend hands it MTLBuffers (as
// opaque handles) so that a loop that creates and disposes tensors reuses a few buffers instead of
// creating one per iteration and approaching Metal's limits; the cpu backend, host memory, so
// that such a loop reuses warm pages instead of faulting in new ones (cpu/buffers.h). Tests drive
// it with fake handles (test/metal-host.test.ts) and through the cpu backend
// (test/cpu-buffers.test.ts).
//
// Why classes: MLX's BufferCache reuses a cached buffer only if it is smaller than
// min(2 * size, size + 2 pages) (mlx/backend/common/buffer_cache.h), so a growing allocation
// (a KV cache appended one row per step) misses every time (mlx issue #3886). Rounding every
// request up to one of four classes per octave makes sizes within ~25% share a class, at a cost
// of at most 25% (on average ~12%) unused tail per buffer.
#pragma once
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace mto {

// Apple silicon's VM page (16 KiB): Metal buffers are whole pages, so no class is smaller.
constexpr size_t kPoolPageBytes = 16384;
// Above this a request is rounded to pages only and is never cached: holding hundreds of MiB idle
// costs more than the rare allocation (weights are allocated once and kept).
constexpr size_t kPoolLargeBytes = size_t(256) << 20;

// The allocation size for a request of `bytes`: one page for 0..16 KiB; up to kPoolLargeBytes
// the smallest of {4, 5, 6, 7} * 2^k that holds it, rounded up to whole pages; above, whole pages.
// Monotone, and size_pool_class(size_pool_class(n)) == size_pool_class(n).
// `page` generalises the 16 KiB granule for pools of host memory (cpu/buffers.h: 64-byte lines).
size_t size_pool_class(size_t bytes, size_t page = kPoolPageBytes);

// A pool of blocks keyed by class. Thread-safe (the metal backend releases from completion
// handlers). Reuse policy: a request takes the most recently released block of its class (warm
// in caches); a released block is cached unless it is large; while cached bytes exceed the limit
// the least recently released blocks are freed.
class SizeClassPool {
 public:
  struct Block {
    void* handle = nullptr;  // what alloc returned (an MTLBuffer on the metal backend)
    size_t bytes = 0;        // the class size: the block's real capacity
  };
  struct Stats {
    size_t live_bytes = 0, cached_bytes = 0, cached_blocks = 0;
    size_t allocations = 0, reuses = 0, frees = 0;
  };
  using AllocFn = std::function<void*(size_t bytes)>;  // returns nullptr on failure
  using FreeFn = std::function<void(void* handle, size_t bytes)>;  // bytes: the block's class size

  // `page`: the granule every class is a multiple of (size_pool_class).
  SizeClassPool(size_t cache_limit_bytes, AllocFn alloc, FreeFn free, size_t page = kPoolPageBytes);
  ~SizeClassPool();  // frees every cached block (live ones belong to their holders)
  SizeClassPool(const SizeClassPool&) = delete;
  SizeClassPool& operator=(const SizeClassPool&) = delete;

  // A block of at least `bytes`. When allocation fails, the cache is emptied and it is tried
  // once more; then throws Error(E_OOM).
  Block acquire(size_t bytes, bool* reused = nullptr);
  void release(Block b);
  void set_cache_limit(size_t bytes);  // trims at once
  void clear_cache();
  Stats stats() const;

 private:
  void trim_locked(size_t limit);
  void free_locked(const Block& b);

  mutable std::mutex mu_;
  const size_t page_;
  size_t limit_;
  AllocFn alloc_;
  FreeFn free_;
  std::list<Block> lru_;  // cached blocks, most recently released first
  // Nodes of lru_ whose blocks were handed out, kept for the next release: a tensor made and
  // dropped per op then allocates and frees no list node (each cost the JS thread ~0.1 us when
  // queueing an op, where the other thread's frees leave malloc's fast paths empty).
  std::list<Block> spare_;
  std::unordered_map<size_t, std::vector<std::list<Block>::iterator>> by_class_;
  Stats stats_;
};

}  // namespace mto
