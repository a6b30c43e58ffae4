// Float32 runs in and out of dense tensors of any float dtype, for the cpu kernels of the model
// ops (elementwise, norms, rope, softmax), which compute in float32 whatever they read or write.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#endif

#include "../core/dtype.h"
#include "../core/tensor.h"

namespace mto::cpu {

// Elements a kernel converts at a time (on the stack), and the smallest share of an op's
// elements worth a pool thread (below it, the wake-up costs more than the work).
constexpr int64_t kRun = 1024;
constexpr int64_t kParallelGrain = 16384;

// A float32 row buffer of at least n elements owned by the calling thread and reused across
// ops: a 128256-wide row allocated per op came from fresh pages each time (mmap'd by malloc),
// and faulting them in cost as much as the softmax.
inline float* row_scratch(int64_t n) {
  thread_local std::vector<float> scratch;
  if (scratch.size() < size_t(n)) scratch.resize(size_t(n));
  return scratch.data();
}

inline void load_f32(const Tensor& t, int64_t at, int64_t n, float* out) {
  const auto* base = static_cast<const uint8_t*>(t.buffer->data()) + size_t(at) * dtype_size(t.dtype);
  to_float32(t.dtype, base, out, size_t(n));
}

inline void store_f32(Tensor& t, int64_t at, int64_t n, const float* in) {
  auto* base = static_cast<uint8_t*>(t.buffer->data()) + size_t(at) * dtype_size(t.dtype);
  from_float32(t.dtype, in, base, size_t(n));
}

// Outputs this large leave the caches before anything reads them: float32 ones are written with
// non-temporal stores, so that each output line crosses to memory once instead of being read for
// ownership first (3 -> 2 transfers an element in a memory-bound op). The kernels store their
// vectors so (simd::store_stream: elementwise, norms; add 4096 x 4096 ~7.4 -> ~3.8-4.3 ms, rmsNorm
// ~4.5 -> ~4.0 ms on Zen 5); staging results in a buffer and streaming it out from there cost a
// third of that gain (the loads and the streamed stores then come in bursts, not interleaved).
constexpr int64_t kStreamBytes = int64_t(1) << 25;
inline bool streams_output(const Tensor& out, int64_t elements) {
  return out.dtype == DType::Float32 && elements * 4 >= kStreamBytes;
}

// Orders this thread's non-temporal stores before what it does next (the pool's join): a thread
// that streamed calls it after its last one.
inline void stream_fence() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_sfence();
#endif
}

}  // namespace mto::cpu
