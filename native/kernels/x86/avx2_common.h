// Pieces the AVX2 dot kernels share (dot_avx2.cc: float32 x; dot_q8_avx2.cc: x quantized to
// int8): the target attribute, horizontal sums, float16 loads and block scales. Inline, in each
// including file, compiled with the AVX2 target attribute (callers must check the CPU first).
#pragma once
#include "../dot.h"
#include "../../core/portable.h"

#if MTO_X86_KERNELS
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#define MTO_T256 __attribute__((target("avx2,fma,f16c")))
#define MTO_INL inline __attribute__((always_inline))
#define MTO_UNROLL_ALL _Pragma("GCC unroll 16")

namespace mto::kernels::avx2 {

constexpr uint32_t kNaNBits = 0x7FC00000u;

MTO_T256 MTO_INL float hsum(__m256 v) {
  const __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 b = _mm_add_ps(a, _mm_movehl_ps(a, a));
  return _mm_cvtss_f32(_mm_add_ss(b, _mm_movehdup_ps(b)));
}

// n <= 8 float16 values at p (zeros after them), where `avail` values may be read.
MTO_T256 MTO_INL __m128i load_halves(const uint16_t* p, int64_t avail, int n) {
  if (avail >= 8) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  alignas(16) uint16_t h[8] = {};
  std::memcpy(h, p, size_t(n) * 2);
  return _mm_load_si128(reinterpret_cast<const __m128i*>(h));
}

// Scales of blocks b0 .. b0 + nb - 1 (nb <= 8), one per lane (lanes past nb: finite). MX:
// 2^(e - 127) (2^-127 for 0, NaN for 0xFF) times mul; affine: the group's float16 scale.
MTO_T256 MTO_INL __m256 block_scales(const DotWeights& w, int64_t row, int64_t b0, int nb,
                                     float mul) {
  if (w.e8m0) {
    const uint8_t* src = w.e8m0 + row * w.row_groups + b0;
    uint64_t raw = 0;
    if (nb == 8)
      std::memcpy(&raw, src, 8);
    else
      std::memcpy(&raw, src, size_t(nb));
    const __m256i v = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(raw)));
    __m256i bits = _mm256_slli_epi32(v, 23);
    bits = _mm256_blendv_epi8(bits, _mm256_set1_epi32(0x00400000),
                              _mm256_cmpeq_epi32(v, _mm256_setzero_si256()));
    bits = _mm256_blendv_epi8(bits, _mm256_set1_epi32(int(kNaNBits)),
                              _mm256_cmpeq_epi32(v, _mm256_set1_epi32(0xFF)));
    return _mm256_mul_ps(_mm256_castsi256_ps(bits), _mm256_set1_ps(mul));
  }
  const int shift = w.group == 128 ? 2 : w.group == 64 ? 1 : 0;
  const int64_t g0 = b0 >> shift;
  const int ng = (nb + (1 << shift) - 1) >> shift;
  const __m256 s = _mm256_mul_ps(_mm256_cvtph_ps(load_halves(w.scales + row * w.row_groups + g0,
                                                             w.row_groups - g0, ng)),
                                 _mm256_set1_ps(mul));
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_permutevar8x32_ps(s, _mm256_srli_epi32(lane, shift));
}

// Prefetches the scales (and biases) that block_scales will read for blocks b0.. of `row`.
MTO_T256 MTO_INL void prefetch_scales(const DotWeights& w, int64_t row, int64_t b0) {
  if (w.e8m0) {
    _mm_prefetch(reinterpret_cast<const char*>(w.e8m0 + row * w.row_groups + b0), _MM_HINT_T0);
    return;
  }
  const int64_t g = row * w.row_groups + b0 / (w.group / 32);
  _mm_prefetch(reinterpret_cast<const char*>(w.scales + g), _MM_HINT_T0);
  if (w.biases) _mm_prefetch(reinterpret_cast<const char*>(w.biases + g), _MM_HINT_T0);
}

// Affine: acc[m] += sum over groups of (bias[g] + offset * scale[g]) * xs[m * sr + g], xs the
// sums of x over each group (offset: what the kernel subtracted from every code, which moves that
// many scales into the bias: 128 where uint8 codes are read as int8). Centred biases (no plane)
// are w.centred_bias * scale[g]: the term is (centred_bias + offset) * scale[g], exactly the same
// floats (0 for affine8 read as int8: the term vanishes).
template <int M>
MTO_T256 MTO_INL void add_bias_terms(const DotWeights& w, int64_t row, const float* xs, int64_t sr,
                                     float offset, __m256 (&acc)[M]) {
  const int64_t ng = w.K / w.group;
  const uint16_t* b = w.biases + row * w.row_groups;
  const uint16_t* s = w.scales + row * w.row_groups;
  const float centred = w.biases ? 0.0f : w.centred_bias + offset;
  if (!w.biases && centred == 0) return;
  for (int64_t g = 0; g < ng; g += 8) {
    const int n = int(std::min<int64_t>(8, ng - g));
    __m256 bv;
    if (!w.biases) {
      bv = _mm256_mul_ps(_mm256_cvtph_ps(load_halves(s + g, ng - g, n)), _mm256_set1_ps(centred));
    } else {
      bv = _mm256_cvtph_ps(load_halves(b + g, ng - g, n));
      if (offset != 0)
        bv = _mm256_fmadd_ps(_mm256_cvtph_ps(load_halves(s + g, ng - g, n)), _mm256_set1_ps(offset), bv);
    }
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) acc[m] = _mm256_fmadd_ps(bv, _mm256_loadu_ps(xs + m * sr + g), acc[m]);
  }
}

}  // namespace mto::kernels::avx2

#endif
