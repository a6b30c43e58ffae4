// Whether the values of an MX block are exact in a 16-bit staging type, for kernels that stage a
// dequantized weight tile as half or bfloat (issue #27: matmul2d fed 16-bit operands, as MLX's NAX
// kernels and ggml feed it) and must stay exact, as the cpu backend is.
//
// A block's values are element * 2^e, e = scale byte - 127. Every MX element has at most 8
// significant bits (int8: 7 plus the sign) and is a multiple of its format's smallest step, so
// element * 2^e is exact in a type with 8 or more significant bits unless it leaves the type's
// range: the step 2^(lsb + e) must be a multiple of the type's smallest subnormal, and every
// magnitude (below 2^(top + e)) must be at most the type's largest finite value.
//   half:   subnormal 2^-24; 8-bit significands below 2^16 are at most 65280 <= 65504.
//   bfloat: subnormal 2^-133; float32's exponent range, so what overflows, overflows in float32 too.
// The NaN scale byte 0xFF reads as e = 128: it fits bfloat (NaN stays NaN), not half (a float32
// tile then; NaN either way).
#ifndef MTO_SHADERS_MX_STAGE_H
#define MTO_SHADERS_MX_STAGE_H

#include "mx_formats.h"

// The exponents of an MX format's smallest nonzero element magnitude and of the bound of all of
// them (mx_formats.h's element table).
constexpr int mto_element_lsb_exp(int f) { return mto_element_table(mto_format_table(f).element).lsb_exp; }
constexpr int mto_element_top_exp(int f) { return mto_element_table(mto_format_table(f).element).top_exp; }

#if defined(__METAL_VERSION__)
// The staging type's range: its smallest subnormal is 2^min_exp; magnitudes below 2^top_exp with 8
// significant bits are finite in it (bfloat: no bound beyond float32's own).
template <typename S>
struct mto_stage_range;
template <>
struct mto_stage_range<float> {
  static constexpr int min_exp = -149, top_exp = 1 << 20;
};
template <>
struct mto_stage_range<half> {
  static constexpr int min_exp = -24, top_exp = 16;
};
template <>
struct mto_stage_range<bfloat> {
  static constexpr int min_exp = -133, top_exp = 1 << 20;
};

// Whether every value of an MX block of format FMT with this E8M0 scale byte is exact in S.
template <int FMT, typename S>
inline bool mto_mx_block_fits(uint scale_byte) {
  const int e = int(scale_byte & 0xFFu) - 127;
  return e + mto_element_lsb_exp(FMT) >= mto_stage_range<S>::min_exp &&
         e + mto_element_top_exp(FMT) <= mto_stage_range<S>::top_exp;
}

// Whether every block of scales[0, count) fits S, the same answer in every thread of a threadgroup
// of SIMDGROUPS SIMD-groups (a kernel branches on it around barriers). Each thread reads every
// (32 * SIMDGROUPS)th byte; misfit holds a flag per SIMD-group, read after the barrier this passes.
template <int FMT, typename S, int SIMDGROUPS, typename Scale>
inline bool mto_mx_blocks_fit(device const Scale* scales, uint count, threadgroup int* misfit, uint tid, ushort simd,
                              ushort lane) {
  bool bad = false;
  for (uint e = tid; e < count; e += uint(32 * SIMDGROUPS)) bad = bad || !mto_mx_block_fits<FMT, S>(uint(scales[e]));
  bad = metal::simd_any(bad);
  if (lane == 0) misfit[simd] = bad ? 1 : 0;
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  bool fits = true;
  for (int s = 0; s < SIMDGROUPS; ++s) fits = fits && misfit[s] == 0;
  return fits;
}
#endif  // __METAL_VERSION__

#endif  // MTO_SHADERS_MX_STAGE_H
