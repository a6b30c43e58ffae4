// rmsNorm and layerNorm over the last axis on the GPU (simdgroup tier, MSL 3.1): one threadgroup
// per row, every thread striding through the row, float32 sums reduced with simd_sum across each
// SIMD-group and through threadgroup memory across SIMD-groups (as MLX's rms_norm and ggml's
// kernel_rms_norm do). Shapes and slots: norm_params.h; plan: native/core/plan/norm.cc.
//
// The cpu backend (native/cpu/norm.cc) sums in double, so its statistics neither overflow nor
// underflow for any float32 row. Here a first pass also finds the row's largest magnitude, and
// rows whose squares would leave float32's normal range (|x| up to 2^128 squared, or tiny values
// with eps = 0) are scaled by a power of two first: exact, and the results match the cpu's for
// rows holding 1e30 or 1e-30 too. NaN and inf follow plain float arithmetic, as on the cpu: an inf
// makes rmsNorm's scale 0 (the inf element NaN, the others 0) and layerNorm's row NaN.
#include <metal_stdlib>

#include "norm_params.h"

using namespace metal;

inline float norm_load(device const uchar* p, int dtype, uint i) {
  switch (dtype) {
    case NORM_DTYPE_F16: return float(((device const half*)p)[i]);
    case NORM_DTYPE_BF16: return float(((device const bfloat*)p)[i]);
    default: return float(((device const float*)p)[i]);
  }
}

// The power of two 2^k a row is multiplied by before its sums (norm.metal's header): 0 when the
// largest magnitude is 0, inf or NaN (plain arithmetic is the cpu's answer there) or in
// [2^-60, 2^47), where squares and their sum over fewer than 2^31 elements stay normal floats;
// else the k that brings it into [0.5, 1), within float32's normal exponents.
inline int norm_prescale(uint amax_bits) {
  if (amax_bits == 0u || amax_bits >= 0x7f800000u) return 0;
  const int biased = int(amax_bits >> 23);  // 0: subnormal
  if (biased >= 127 - 60 && biased < 127 + 47) return 0;
  return clamp(126 - max(biased, 1), -126, 126);
}

inline float norm_pow2(int k) { return as_type<float>(uint(127 + k) << 23); }

// Pass 1's reduction, in every thread: the row's largest magnitude (float bits: NaN and inf above
// every finite value) and its plain sums. The scratch's first use: nothing to wait for before
// writing it.
inline void norm_reduce_first(thread uint& amax, thread float2& s, threadgroup uint* maxes, threadgroup float* sums,
                              ushort simd, ushort lane, ushort nsimd) {
  amax = simd_max(amax);
  s = simd_sum(s);
  if (lane == 0) {
    maxes[simd] = amax;
    sums[simd] = s.x;
    sums[32 + simd] = s.y;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);  // every SIMD-group's partials are in place
  const uint m = lane < nsimd ? maxes[lane] : 0u;
  const float2 t = lane < nsimd ? float2(sums[lane], sums[32 + lane]) : float2(0.0f);
  amax = simd_max(m);
  s = simd_sum(t);
}

// A later sum over the threadgroup, in every thread, through the same scratch (64 floats).
inline float norm_sum(float v, threadgroup float* scratch, ushort simd, ushort lane, ushort nsimd) {
  v = simd_sum(v);
  threadgroup_barrier(mem_flags::mem_threadgroup);  // the scratch's previous readers are done
  if (lane == 0) scratch[simd] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);  // every SIMD-group's sum is in place
  return simd_sum(lane < nsimd ? scratch[lane] : 0.0f);
}

template <typename T>
[[kernel]] void norm_rows(
    device const T* x [[buffer(NORM_BUFFER_X)]],
    device const uchar* weight [[buffer(NORM_BUFFER_WEIGHT)]],
    device const uchar* bias [[buffer(NORM_BUFFER_BIAS)]],
    device T* y [[buffer(NORM_BUFFER_Y)]],
    constant NormKernelParams& p [[buffer(NORM_BUFFER_PARAMS)]],
    uint row [[threadgroup_position_in_grid]],
    ushort tid [[thread_index_in_threadgroup]],
    ushort nthreads [[threads_per_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]],
    ushort nsimd [[simdgroups_per_threadgroup]]) {
  threadgroup float sums[64];
  threadgroup uint maxes[32];
  const uint cols = uint(p.cols);
  device const T* xr = x + ulong(row) * cols;
  device T* yr = y + ulong(row) * cols;

  // Pass 1: the largest magnitude, and the plain sums of x and x^2 (final for most rows).
  uint amax = 0;
  float2 s = float2(0.0f);
  for (uint c = tid; c < cols; c += nthreads) {
    const float v = float(xr[c]);
    amax = max(amax, as_type<uint>(v) & 0x7fffffffu);
    s += float2(v, v * v);
  }
  norm_reduce_first(amax, s, maxes, sums, simd, lane, nsimd);

  const int k = norm_prescale(amax);  // the same in every thread: the branches below are uniform
  const float f = norm_pow2(k);
  float mean = 0.0f;
  if (p.layer != 0) {
    if (k != 0) {
      float t = 0.0f;
      for (uint c = tid; c < cols; c += nthreads) t += float(xr[c]) * f;
      s.x = norm_sum(t, sums, simd, lane, nsimd);
    }
    mean = s.x / float(cols);
  }
  float ss = s.y;
  if (p.layer != 0 || k != 0) {  // layerNorm's squares are of x - mean; a scaled row's of x * f
    float t = 0.0f;
    for (uint c = tid; c < cols; c += nthreads) {
      const float d = float(xr[c]) * f - mean;
      t += d * d;
    }
    ss = norm_sum(t, sums, simd, lane, nsimd);
  }

  // 1 / sqrt(var + eps) of the scaled row is r / f; where eps * f^2 overflows (a tiny row, eps
  // > 0) eps alone decides it and the row is scaled back first.
  const float eps_f = (p.eps * f) * f;
  float pre = 1.0f, r;
  if (isinf(eps_f)) {
    pre = norm_pow2(-k);
    r = precise::rsqrt(p.eps);
  } else {
    r = precise::rsqrt(ss / float(cols) + eps_f);
  }
  for (uint c = tid; c < cols; c += nthreads) {
    float v = (float(xr[c]) * f - mean) * pre * r;
    if (p.weight_dtype != NORM_DTYPE_NONE) v *= norm_load(weight, p.weight_dtype, c);
    if (p.bias_dtype != NORM_DTYPE_NONE) v += norm_load(bias, p.bias_dtype, c);
    yr[c] = T(v);
  }
}

MTO_KERNEL_INSTANCE("norm_rows_f32", norm_rows, float)
MTO_KERNEL_INSTANCE("norm_rows_f16", norm_rows, half)
MTO_KERNEL_INSTANCE("norm_rows_bf16", norm_rows, bfloat)
