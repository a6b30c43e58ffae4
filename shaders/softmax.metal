// softmax over the last axis on the GPU (simdgroup tier, MSL 3.1): one threadgroup per row, two
// passes over the row as MLX's looped softmax: an online pass keeps each thread's running max m
// and its sum of exp(x - m) (rescaled when m grows), combined across the SIMD-group and the
// threadgroup; then y = exp(x - max) / sum. float32 throughout. Shapes and slots:
// softmax_params.h; plan: native/core/plan/softmax.cc.
//
// NaN and inf as the cpu backend (native/cpu/softmax.cc, plain float arithmetic): a NaN anywhere
// in the row, a +inf (inf - inf) or a row of only -inf (0 / 0) make the whole row NaN; a -inf
// among finite values gives exactly 0.
#include <metal_stdlib>

#include "softmax_params.h"

using namespace metal;

inline float softmax_inf() { return as_type<float>(0x7f800000u); }

// The running sum s of a max m, rescaled to the larger max M. A part that saw no finite value
// (m = -inf) holds s = 0 and stays 0 (exp(-inf - -inf) would be NaN).
inline float softmax_rescale(float s, float m, float M) { return m == -softmax_inf() ? 0.0f : s * precise::exp(m - M); }

template <typename T>
[[kernel]] void softmax_rows(
    device const T* x [[buffer(SOFTMAX_BUFFER_X)]],
    device T* y [[buffer(SOFTMAX_BUFFER_Y)]],
    constant SoftmaxKernelParams& p [[buffer(SOFTMAX_BUFFER_PARAMS)]],
    uint row [[threadgroup_position_in_grid]],
    ushort tid [[thread_index_in_threadgroup]],
    ushort nthreads [[threads_per_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]],
    ushort nsimd [[simdgroups_per_threadgroup]]) {
  threadgroup float part_max[32];
  threadgroup float part_sum[32];
  threadgroup uint part_nan[32];
  const float ninf = -softmax_inf();
  const uint cols = uint(p.cols);
  device const T* xr = x + ulong(row) * cols;
  device T* yr = y + ulong(row) * cols;

  // Pass 1, online: m only ever takes values that compared greater (never NaN); a NaN is noted
  // instead and -inf adds nothing.
  float m = ninf, s = 0.0f;
  uint nan = 0;
  for (uint c = tid; c < cols; c += nthreads) {
    const float v = float(xr[c]);
    if (v > m) {
      s = s * precise::exp(m - v) + 1.0f;
      m = v;
    } else if (v > ninf) {
      s += precise::exp(v - m);
    } else if (v != v) {
      nan = 1;
    }
  }
  float M = simd_max(m);
  s = simd_sum(softmax_rescale(s, m, M));
  nan = simd_max(nan);
  if (lane == 0) {
    part_max[simd] = M;
    part_sum[simd] = s;
    part_nan[simd] = nan;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);  // every SIMD-group's (max, sum) is in place
  const float pm = lane < nsimd ? part_max[lane] : ninf;
  const float ps = lane < nsimd ? part_sum[lane] : 0.0f;
  const uint pn = lane < nsimd ? part_nan[lane] : 0u;
  M = simd_max(pm);
  const float sum = simd_sum(softmax_rescale(ps, pm, M));
  nan = simd_max(pn);

  // Pass 2. M is finite unless the row is all -inf, holds +inf, or is empty of numbers: NaN then.
  const bool poisoned = nan != 0 || !isfinite(M);
  const float inv = 1.0f / sum;
  for (uint c = tid; c < cols; c += nthreads) {
    const float v = poisoned ? as_type<float>(0x7fc00000u) : precise::exp(float(xr[c]) - M) * inv;
    yr[c] = T(v);
  }
}

MTO_KERNEL_INSTANCE("softmax_rows_f32", softmax_rows, float)
MTO_KERNEL_INSTANCE("softmax_rows_f16", softmax_rows, half)
MTO_KERNEL_INSTANCE("softmax_rows_bf16", softmax_rows, bfloat)
