#include "buffer_pool.h"

#include <algorithm>
#include <string>

#include "error.h"

namespace mto {
namespace {

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

size_t size_pool_class(size_t bytes, size_t page) {
  if (bytes <= page) return page;
  if (bytes > kPoolLargeBytes) return round_up(bytes, page);
  // Smallest m * 2^k >= bytes with m in {4, 5, 6, 7}: take the octave [4 * 2^k, 8 * 2^k) that
  // holds bytes - 1, then the first quarter step at or above bytes.
  size_t k = 0;
  while ((size_t(8) << k) <= bytes - 1) ++k;
  const size_t step = size_t(1) << k;
  return round_up(round_up(bytes, step), page);
}

SizeClassPool::SizeClassPool(size_t cache_limit_bytes, AllocFn alloc, FreeFn free, size_t page)
    : page_(page), limit_(cache_limit_bytes), alloc_(std::move(alloc)), free_(std::move(free)) {}

SizeClassPool::~SizeClassPool() { clear_cache(); }

SizeClassPool::Block SizeClassPool::acquire(size_t bytes, bool* reused) {
  const size_t cls = size_pool_class(bytes, page_);
  std::lock_guard<std::mutex> lock(mu_);
  if (reused) *reused = false;
  auto it = by_class_.find(cls);
  if (it != by_class_.end() && !it->second.empty()) {
    auto node = it->second.back();  // most recently released of this class
    it->second.pop_back();
    Block b = *node;
    spare_.splice(spare_.begin(), lru_, node);
    stats_.cached_bytes -= b.bytes;
    stats_.cached_blocks -= 1;
    stats_.live_bytes += b.bytes;
    stats_.reuses += 1;
    if (reused) *reused = true;
    return b;
  }
  void* h = alloc_(cls);
  if (!h && !lru_.empty()) {  // memory held by the cache may be what is missing
    trim_locked(0);
    h = alloc_(cls);
  }
  if (!h) {
    throw Error(code::OOM, "could not allocate a buffer of " + std::to_string(cls) + " bytes (" +
                               std::to_string(bytes) + " requested)");
  }
  stats_.allocations += 1;
  stats_.live_bytes += cls;
  return Block{h, cls};
}

void SizeClassPool::release(Block b) {
  if (!b.handle) return;
  std::lock_guard<std::mutex> lock(mu_);
  stats_.live_bytes -= std::min(stats_.live_bytes, b.bytes);
  if (b.bytes > kPoolLargeBytes || b.bytes > limit_) {
    free_locked(b);
    return;
  }
  if (spare_.empty()) {
    lru_.push_front(b);
  } else {
    lru_.splice(lru_.begin(), spare_, spare_.begin());
    lru_.front() = b;
  }
  by_class_[b.bytes].push_back(lru_.begin());
  stats_.cached_bytes += b.bytes;
  stats_.cached_blocks += 1;
  trim_locked(limit_);
}

void SizeClassPool::set_cache_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  limit_ = bytes;
  trim_locked(limit_);
}

void SizeClassPool::clear_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  trim_locked(0);
}

SizeClassPool::Stats SizeClassPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void SizeClassPool::trim_locked(size_t limit) {
  while (stats_.cached_bytes > limit && !lru_.empty()) {
    auto oldest = std::prev(lru_.end());
    auto& same = by_class_[oldest->bytes];
    same.erase(std::find(same.begin(), same.end(), oldest));
    Block b = *oldest;
    lru_.erase(oldest);
    stats_.cached_bytes -= b.bytes;
    stats_.cached_blocks -= 1;
    free_locked(b);
  }
}

void SizeClassPool::free_locked(const Block& b) {
  free_(b.handle, b.bytes);
  stats_.frees += 1;
}

}  // namespace mto
