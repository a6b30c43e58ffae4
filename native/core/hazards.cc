#include "hazards.h"

#include <cstring>
#include <string>

#include "error.h"

namespace mto {
namespace {

// The first byte past the range, saturating (kWholeBuffer and huge offsets reach UINT64_MAX).
uint64_t range_end(const BufferRange& r) {
  return r.length > UINT64_MAX - r.offset ? UINT64_MAX : r.offset + r.length;
}

}  // namespace

bool ranges_overlap(const BufferRange& a, const BufferRange& b) {
  if (a.buffer != b.buffer || a.length == 0 || b.length == 0) return false;
  return a.offset < range_end(b) && b.offset < range_end(a);
}

BufferRange strided_range(const void* buffer, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                          int64_t offset, uint64_t element_bytes) {
  const BufferRange whole{buffer, 0, kWholeBuffer};
  if (dims.size() != strides.size() || offset < 0 || element_bytes == 0) return whole;
  // Each (dims - 1) * stride and each partial sum stays within 2^61 (else: the whole buffer), so
  // nothing overflows int64_t; a valid copy's indices are below 2^53 (kMaxElements).
  int64_t lo = offset, hi = offset;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] <= 0) return BufferRange{buffer, 0, 0};
    const int64_t limit = int64_t(1) << 60, steps = dims[i] - 1;
    const int64_t magnitude = strides[i] < 0 ? -strides[i] : strides[i];
    if (strides[i] < -limit || (steps > 0 && magnitude > limit / steps)) return whole;
    const int64_t reach = (dims[i] - 1) * strides[i];
    (reach < 0 ? lo : hi) += reach;
    if (lo < 0 || hi > (int64_t(1) << 60)) return whole;
  }
  if (uint64_t(hi) + 1 > (uint64_t(1) << 60) / element_bytes) return whole;
  return BufferRange{buffer, uint64_t(lo) * element_bytes, uint64_t(hi - lo + 1) * element_bytes};
}

EncoderOrder encoder_order(const char* env_serial) {
  if (!env_serial || !*env_serial || std::strcmp(env_serial, "0") == 0) return EncoderOrder::Concurrent;
  if (std::strcmp(env_serial, "1") == 0) return EncoderOrder::Serial;
  throw Error(code::Arg, std::string("METAL_TENSOROPS_SERIAL_ENCODER must be 0 or 1; got '") + env_serial + "'");
}

bool HazardTracker::any_overlap(const std::vector<BufferRange>& recorded, const BufferRange& r) {
  for (const BufferRange& x : recorded) {
    if (ranges_overlap(x, r)) return true;
  }
  return false;
}

bool HazardTracker::needs_barrier(const std::vector<BufferRange>& reads, const std::vector<BufferRange>& writes) const {
  for (const BufferRange& r : reads) {
    auto it = ranges_.find(r.buffer);
    if (it != ranges_.end() && any_overlap(it->second.writes, r)) return true;  // read after write
  }
  for (const BufferRange& w : writes) {
    auto it = ranges_.find(w.buffer);
    if (it == ranges_.end()) continue;
    if (any_overlap(it->second.writes, w)) return true;  // write after write
    if (any_overlap(it->second.reads, w)) return true;   // write after read
  }
  return false;
}

void HazardTracker::record(const std::vector<BufferRange>& reads, const std::vector<BufferRange>& writes) {
  for (const BufferRange& r : reads) {
    if (r.length) ranges_[r.buffer].reads.push_back(r);
  }
  for (const BufferRange& w : writes) {
    if (w.length) ranges_[w.buffer].writes.push_back(w);
  }
}

void HazardTracker::clear() { ranges_.clear(); }

bool HazardTracker::add(const std::vector<BufferRange>& reads, const std::vector<BufferRange>& writes) {
  const bool barrier = needs_barrier(reads, writes);
  if (barrier) clear();
  record(reads, writes);
  return barrier;
}

bool BarrierPlanner::before_dispatch(const std::vector<BufferRange>& reads, const std::vector<BufferRange>& writes) {
  const bool barrier = order_ == EncoderOrder::Serial ? dispatched_ : hazards_.add(reads, writes);
  dispatched_ = true;
  return barrier;
}

void BarrierPlanner::end_batch() {
  hazards_.clear();
  dispatched_ = false;
}

}  // namespace mto
