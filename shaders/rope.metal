// Rotary position embedding on the GPU (simdgroup tier, MSL 3.1): one thread per rotated pair or
// passed-through feature, over every row of x in memory order. Shapes and slots: rope_params.h;
// plan: native/core/plan/rope.cc.
//
// The angle. The cpu backend (native/cpu/rope.cc) works out pos * inv_freq in double; in float32
// the product is off by about pos * 2^-24 radians (2.4e-4 at position 4096), far beyond the
// tolerance. MLX and ggml take that error (a float32 theta into cos/sin). Here the angle is
// counted in turns and only its fraction kept: inv_freq / (2 pi) is held as a 64-bit fixed-point
// fraction (the host tabulates base^(-2i/dims) in double; an explicit float32 freq is turned
// into one on the GPU from a three-float 1 / (2 pi)), so pos * turns mod 1 is one wrapping 64-bit
// integer product, exact for every int32 position, negative ones too. Its top bits become a
// float32 in [-1/2, 1/2) turn (one rounding, 2^-25 relative), times 2 pi as a float pair: about
// 1e-7 rad at any position, and precise::cos/sin of an angle in [-pi, pi] add about one unit in
// the last place.
#include <metal_stdlib>

#include "rope_params.h"

using namespace metal;

// 1 / (2 pi) as three float32 (to ~2^-76 relative) and 2 pi as two.
#define ROPE_INV_2PI_1 0.159154936671257019f
#define ROPE_INV_2PI_2 6.42063824329852650e-09f
#define ROPE_INV_2PI_3 7.34273869907888750e-17f
#define ROPE_2PI_HI 6.28318548202514648f
#define ROPE_2PI_LO (-1.74845553146951715e-07f)

// x mod 1 in units of 2^-64 (two's complement). x - rint(x) is exact and within [-1/2, 1/2], so
// r * 2^62 fits a long; below 2^-38 it truncates by less than 2^-62.
inline ulong rope_fixed(float x) {
  const float r = x - rint(x);
  return as_type<ulong>(long(r * 4611686018427387904.0f)) << 2;
}

// The fraction of f / (2 pi), turns per position of an explicit frequency f (radians per
// position), in units of 2^-64: each of f's products with the three parts of 1 / (2 pi) split
// into its rounded value and its exact error (fma), every part reduced mod 1 and added wrapping.
// Exact to ~f * 2^-72 turns, for |f| below ~2^30.
inline ulong rope_turns_of(float f) {
  const float a1 = f * ROPE_INV_2PI_1, e1 = fma(f, ROPE_INV_2PI_1, -a1);
  const float a2 = f * ROPE_INV_2PI_2, e2 = fma(f, ROPE_INV_2PI_2, -a2);
  const float a3 = f * ROPE_INV_2PI_3;
  return rope_fixed(a1) + rope_fixed(e1) + rope_fixed(a2) + rope_fixed(e2) + rope_fixed(a3);
}

// pos turns-per-position times `turns` (units of 2^-64), mod 1, in radians in [-pi, pi).
inline float rope_angle(int pos, ulong turns) {
  const ulong t = as_type<ulong>(long(pos)) * turns;
  const float r = float(as_type<long>(t)) * 5.42101086242752217e-20f;  // 2^-64
  return fma(r, ROPE_2PI_HI, r * ROPE_2PI_LO);
}

template <typename T>
[[kernel]] void rope_rows(
    device const T* x [[buffer(ROPE_BUFFER_X)]],
    device const int* positions [[buffer(ROPE_BUFFER_POSITIONS)]],
    device const float* freqs [[buffer(ROPE_BUFFER_FREQS)]],
    device T* y [[buffer(ROPE_BUFFER_Y)]],
    constant RopeKernelParams& p [[buffer(ROPE_BUFFER_PARAMS)]],
    uint gid [[thread_position_in_grid]]) {
  if (gid >= uint(p.total)) return;  // the last threadgroup's tail; no barrier follows
  const uint per_row = uint(p.per_row), half = uint(p.half);
  const uint row = gid / per_row, t = gid % per_row;
  const ulong base = ulong(row) * uint(p.D);
  if (t >= half) {  // feature 2 * half + (t - half) >= dims: unchanged
    const ulong i = base + half + t;
    y[i] = x[i];
    return;
  }
  // Rows are in memory order: (b, h, l) for bhld, (b, l, h) for blhd.
  const uint l = p.blhd != 0 ? (row / uint(p.H)) % uint(p.L) : row % uint(p.L);
  const int pos = p.has_positions != 0 ? positions[l] : p.offset + int(l);
  float a;
  if (p.has_freqs != 0) {
    const float f = freqs[t];
    a = isfinite(f) ? rope_angle(pos, rope_turns_of(f)) : f - f;  // pos * inf or NaN: NaN, as on the cpu
  } else {
    a = rope_angle(pos, (ulong(uint(p.turns_hi[t])) << 32) | ulong(uint(p.turns_lo[t])));
  }
  const float cs = precise::cos(a), sn = precise::sin(a);
  const ulong i1 = base + (p.neox != 0 ? t : 2 * t);
  const ulong i2 = p.neox != 0 ? i1 + half : i1 + 1;
  const float x1 = float(x[i1]), x2 = float(x[i2]);
  y[i1] = T(x1 * cs - x2 * sn);
  y[i2] = T(x2 * cs + x1 * sn);
}

MTO_KERNEL_INSTANCE("rope_rows_f32", rope_rows, float)
MTO_KERNEL_INSTANCE("rope_rows_f16", rope_rows, half)
MTO_KERNEL_INSTANCE("rope_rows_bf16", rope_rows, bfloat)
