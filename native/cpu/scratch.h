// Per-thread scratch buffers of the cpu kernels, reused across calls (the pool's threads live as
// long as the device), so a kernel call allocates nothing once warm.
#pragma once
#include <cstdint>
#include <vector>

namespace mto::cpu {

// A 64-byte aligned view of at least n floats of a growable buffer.
inline float* aligned_scratch(std::vector<float>& v, size_t n) {
  if (v.size() < n + 16) v.resize(n + 16);
  uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
  return reinterpret_cast<float*>((p + 63) & ~uintptr_t(63));
}

}  // namespace mto::cpu
