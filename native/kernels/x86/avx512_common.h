// Pieces the AVX-512 dot kernels share (dot_avx512.cc: float32 x; dot_q8_avx512.cc: x quantized
// to int8): the target attributes, block scales, their prefetch and the affine bias terms. Inline,
// in each including file, compiled with the AVX-512 target attribute (callers check the CPU first);
// and one block of x quantized to int8 by the rule of quantize_x_block (dot_q8_avx512.cc, gemm_q8).
#pragma once
#include "../dot.h"
#include "../../core/portable.h"

#if MTO_X86_KERNELS
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's avx512fintrin.h trips a false -Wmaybe-uninitialized (GCC PR 105593, fixed in 12.3).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#define MTO_T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define MTO_INL inline __attribute__((always_inline))
#define MTO_UNROLL_ALL _Pragma("GCC unroll 16")

namespace mto::kernels::avx512 {

constexpr uint32_t kNaNBits = 0x7FC00000u;

// The scales of blocks b0 .. b0 + nb - 1 (nb <= 16) of a row, one per lane (lanes past nb: a
// finite value). MX: 2^(e - 127) (2^-127 for e = 0, NaN for 0xFF) times `mul`; affine: the
// float16 scale of the group holding each block.
MTO_T512 MTO_INL __m512 block_scales(const DotWeights& w, int64_t row, int64_t b0, int nb,
                                     float mul) {
  if (w.e8m0) {
    const __m128i raw = _mm512_castsi512_si128(
        _mm512_maskz_loadu_epi8(__mmask64((1ull << nb) - 1), w.e8m0 + row * w.row_groups + b0));
    const __m512i v = _mm512_cvtepu8_epi32(raw);
    __m512i bits = _mm512_slli_epi32(v, 23);
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(v, _mm512_setzero_si512()),
                                 _mm512_set1_epi32(0x00400000));
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(v, _mm512_set1_epi32(0xFF)),
                                 _mm512_set1_epi32(int(kNaNBits)));
    return _mm512_mul_ps(_mm512_castsi512_ps(bits), _mm512_set1_ps(mul));
  }
  const int shift = w.group == 128 ? 2 : w.group == 64 ? 1 : 0;  // log2(blocks per group)
  const int64_t g0 = b0 >> shift;
  const int ng = (nb + (1 << shift) - 1) >> shift;
  const __m256i raw = _mm512_castsi512_si256(
      _mm512_maskz_loadu_epi16(__mmask32((1u << ng) - 1), w.scales + row * w.row_groups + g0));
  const __m512 s = _mm512_cvtph_ps(raw);
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  return _mm512_permutexvar_ps(_mm512_srli_epi32(lane, unsigned(shift)), s);
}

// Prefetches the scales (and biases) that block_scales will read for blocks b0.. of `row`.
MTO_T512 MTO_INL void prefetch_scales(const DotWeights& w, int64_t row, int64_t b0) {
  if (w.e8m0) {
    _mm_prefetch(reinterpret_cast<const char*>(w.e8m0 + row * w.row_groups + b0), _MM_HINT_T0);
    return;
  }
  const int64_t g = row * w.row_groups + b0 / (w.group / 32);
  _mm_prefetch(reinterpret_cast<const char*>(w.scales + g), _MM_HINT_T0);
  if (w.biases) _mm_prefetch(reinterpret_cast<const char*>(w.biases + g), _MM_HINT_T0);
}

// Affine: acc[m] += sum over groups of bias[g] * sum(x[m] over group g); centred biases (no plane)
// are w.centred_bias * scale[g], the same floats.
template <int M>
MTO_T512 MTO_INL void add_bias_terms(const DotWeights& w, int64_t row, const float* xs,
                                     int64_t sr, __m512 (&acc)[M]) {
  const int64_t ng = w.K / w.group;
  const uint16_t* b = (w.biases ? w.biases : w.scales) + row * w.row_groups;
  const __m512 mul = _mm512_set1_ps(w.biases ? 1.0f : w.centred_bias);
  for (int64_t g = 0; g < ng; g += 16) {
    const int n = int(std::min<int64_t>(16, ng - g));
    const __m512 bv = _mm512_mul_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(
        _mm512_maskz_loadu_epi16(__mmask32((1u << n) - 1), b + g))), mul);
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) acc[m] = _mm512_fmadd_ps(bv, _mm512_loadu_ps(xs + m * sr + g), acc[m]);
  }
}

// One block of 32 x as quantize_x_block does it (same float32 product, rounded half to even), its
// codes as int32 in a (elements 0-15) and b (16-31); false where 127 / max|x| overflows float32
// (the caller then uses quantize_x_block, which goes through float64 there).
MTO_T512 MTO_INL bool quantize_x_block16(const float* x, __m512i& a, __m512i& b, float& d) {
  const __m512 xa = _mm512_loadu_ps(x), xb = _mm512_loadu_ps(x + 16);
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(xa), _mm512_abs_ps(xb)));
  const float id = amax > 0 ? 127.0f / amax : 0.0f;
  if (std::isinf(id)) return false;
  d = amax / 127.0f;
  const __m512 f = _mm512_set1_ps(id);
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  a = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvt_roundps_epi32(_mm512_mul_ps(xa, f), kNearest), lo), hi);
  b = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvt_roundps_epi32(_mm512_mul_ps(xb, f), kNearest), lo), hi);
  return true;
}

}  // namespace mto::kernels::avx512

#endif
