// AVX-512 (F, BW, VL) fused decode-and-dot kernels (dot.h), compiled with target attributes so
// the binary still runs on baseline x86-64; dot_kernels() calls them only where the CPU has them.
//
// 4-bit rows (mxfp4, mxint4, affine4) are read 64 bytes (128 codes, 4 blocks) at a time as 16
// dwords of 8 nibbles each: shifting the register by 4k puts nibble k of every dword in its low
// bits, and vpermps (which reads index bits 0-3 only, so nothing needs masking) turns 16 of them
// into floats through the 16-entry table held in one register. x is transposed to match once per
// call: for chunk c, vector k holds x[128c + 8L + k] in lane L. Lane L belongs to block 4c + L/4,
// so a chunk's partial sums are scaled by one permuted vector of the four block scales.
//
// 8-bit rows go a block (32 codes) at a time: int8 widened and converted; FP8 as float16 bits
// (the even elements from the low bytes, the odd ones from the high bytes, x split to match).
// With AVX512-VBMI (Ice Lake, Zen 4 and later) E4M3 rows go 64 codes at a time through two
// 128-entry byte tables instead (kAvx512Vbmi, at the end): see rows_e4m3_vbmi.
// Dense rows (float32 / float16 / bfloat16) go 16 weights at a time, the last step masked
// (half-precision rows for one or two rows of x: 32 at a time, then the 16-weight steps).
//
// Every kernel handles R weight rows at once (each x load serves all of them) and prefetches the
// same bytes of the next R rows, and for 4-bit and affine rows their scales (and biases): the
// hardware prefetchers stop at 4 KiB pages, which rows this short cross every few rows, and the
// scale streams are read in bursts they do not anticipate.
#include "../dot.h"
#include "../../core/portable.h"

#if MTO_X86_KERNELS
#include "avx512_common.h"

#include <algorithm>
#include <cstring>

namespace mto::kernels {
namespace {

using namespace avx512;

#define MTO_T512VBMI \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma,f16c")))

constexpr int64_t kChunk = 128;  // codes per 4-bit step (64 bytes)

int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }
bool is_nibbles(DotCodes k) { return k == DotCodes::Lut4 || k == DotCodes::Uint4; }
bool is_affine(DotCodes k) { return k == DotCodes::Uint4 || k == DotCodes::Uint8; }

// Prepared x: M rows of the codes' order (4-bit: padded with zeros to whole chunks), then for
// affine weights M rows of per-group sums of x (padded to 16 groups).
int64_t xrow_floats(const DotWeights& w) { return is_nibbles(w.kind) ? round_up(w.K, kChunk) : w.K; }
int64_t sums_floats(const DotWeights& w) {
  return is_affine(w.kind) ? round_up(w.K / w.group, 16) : 0;
}

size_t x_floats_avx512(const DotWeights& w, int M) {
  return size_t(M) * size_t(xrow_floats(w) + sums_floats(w));
}

MTO_T512 void prepare_x_avx512(const DotWeights& w, const float* x, int64_t ldx, int M,
                               float* xp) {
  const int64_t K = w.K, xr = xrow_floats(w), sr = sums_floats(w);
  const __m512i lane8 = _mm512_setr_epi32(0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104,
                                          112, 120);
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  // E4M3 codes decode as their value / 256 (float16 bits with a 7-bit magnitude field): x
  // carries the 256 (exact), so the scale needs no rebias that could overflow.
  const __m512 xmul = _mm512_set1_ps(w.kind == DotCodes::E4M3 ? 256.0f : 1.0f);
  for (int m = 0; m < M; ++m) {
    const float* xm = x + m * ldx;
    float* d = xp + m * xr;
    if (is_nibbles(w.kind)) {
      for (int64_t c = 0; c < xr; c += kChunk) {
        const int64_t valid = std::min<int64_t>(16, (K - c) / 8);  // dwords of codes present
        const __mmask16 mask = __mmask16((1u << valid) - 1u);
        for (int k = 0; k < 8; ++k)
          _mm512_storeu_ps(d + c + 16 * k,
                           _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, lane8, xm + c + k, 4));
      }
    } else if (w.kind == DotCodes::E4M3 || w.kind == DotCodes::E5M2) {
      for (int64_t k = 0; k < K; k += 32) {
        const __m512 a = _mm512_loadu_ps(xm + k), b = _mm512_loadu_ps(xm + k + 16);
        _mm512_storeu_ps(d + k, _mm512_mul_ps(_mm512_permutex2var_ps(a, even, b), xmul));
        _mm512_storeu_ps(d + k + 16, _mm512_mul_ps(_mm512_permutex2var_ps(a, odd, b), xmul));
      }
    } else {
      std::memcpy(d, xm, size_t(K) * sizeof(float));
    }
    if (is_affine(w.kind)) {
      float* s = xp + M * xr + m * sr;
      const int64_t ng = K / w.group;
      for (int64_t g = 0; g < sr; ++g) {
        __m512 acc = _mm512_setzero_ps();
        if (g < ng)
          for (int j = 0; j < w.group; j += 16)
            acc = _mm512_add_ps(acc, _mm512_loadu_ps(xm + g * w.group + j));
        s[g] = _mm512_reduce_add_ps(acc);
      }
    }
  }
}

// Pointers to the codes of R weight rows from row0, and their accumulators (one per row of x)
// zeroed: the start of every kernel below.
template <int R, int M>
MTO_T512 MTO_INL void start_rows(const DotWeights& w, int64_t row0, const uint8_t* (&c)[R],
                                 __m512 (&acc)[R][M]) {
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    c[r] = w.codes + (row0 + r) * w.row_bytes;
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) acc[r][m] = _mm512_setzero_ps();
  }
}

// R rows of 4-bit codes from row0 (see the file comment for the layout).
template <int R, int M>
MTO_T512 void rows_nibbles(const DotWeights& w, int64_t row0, const float* xp, float* y,
                           int64_t ldy) {
  const bool affine = w.kind == DotCodes::Uint4;
  const int64_t K = w.K, xr = xrow_floats(w), nblocks = K / 32;
  const __m512 t = affine ? _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
                          : _mm512_loadu_ps(w.lut);
  const __m512i quarter = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const uint8_t* c[R];
  __m512 acc[R][M];
  start_rows<R, M>(w, row0, c, acc);
  const int64_t ahead = R * w.row_bytes;  // prefetch distance: the next R rows
  for (int64_t b0 = 0; b0 < nblocks; b0 += 16) {
    const int nb = int(std::min<int64_t>(16, nblocks - b0));
    __m512 S[R];
    MTO_UNROLL_ALL
    for (int r = 0; r < R; ++r) {
      prefetch_scales(w, row0 + R + r, b0);
      S[r] = block_scales(w, row0 + r, b0, nb, 1.0f);
    }
    for (int q = 0; 4 * q < nb; ++q) {
      const int64_t ch = b0 / 4 + q;
      const int left = nb - 4 * q;
      __m512i v[R];
      MTO_UNROLL_ALL
      for (int r = 0; r < R; ++r) {
        const uint8_t* p = c[r] + ch * 64;
        _mm_prefetch(reinterpret_cast<const char*>(p) + ahead, _MM_HINT_T0);
        v[r] = left >= 4 ? _mm512_loadu_si512(p)
                         : _mm512_maskz_loadu_epi32(__mmask16((1u << (4 * left)) - 1), p);
      }
      const float* xc = xp + ch * kChunk;
      __m512 p[R][M];
      MTO_UNROLL_ALL
      for (int k = 0; k < 8; ++k) {
        __m512 xk[M];
        MTO_UNROLL_ALL
        for (int m = 0; m < M; ++m) xk[m] = _mm512_loadu_ps(xc + m * xr + 16 * k);
        MTO_UNROLL_ALL
        for (int r = 0; r < R; ++r) {
          const __m512 wk = _mm512_permutexvar_ps(
              k == 0 ? v[r] : _mm512_srli_epi32(v[r], unsigned(4 * k)), t);
          MTO_UNROLL_ALL
          for (int m = 0; m < M; ++m)
            p[r][m] = k == 0 ? _mm512_mul_ps(wk, xk[m]) : _mm512_fmadd_ps(wk, xk[m], p[r][m]);
        }
      }
      const __m512i sidx = _mm512_add_epi32(quarter, _mm512_set1_epi32(4 * q));
      MTO_UNROLL_ALL
      for (int r = 0; r < R; ++r) {
        const __m512 sv = _mm512_permutexvar_ps(sidx, S[r]);
        MTO_UNROLL_ALL
        for (int m = 0; m < M; ++m) acc[r][m] = _mm512_fmadd_ps(p[r][m], sv, acc[r][m]);
      }
    }
  }
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    if (affine) add_bias_terms<M>(w, row0 + r, xp + M * xr, sums_floats(w), acc[r]);
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) y[m * ldy + r] = _mm512_reduce_add_ps(acc[r][m]);
  }
}

// One block of 16 FP8 E4M3 codes (as 16-bit words, code in the low byte) as value / 256, the NaN
// magnitude 0x7F as NaN: the slow path for blocks that hold a NaN code.
MTO_T512 MTO_INL __m512 e4m3_checked(__m256i lowbytes) {
  const __m256i h = _mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(lowbytes, 8), 1),
                                     _mm256_set1_epi16(int16_t(0xBF80)));
  const __m512 f = _mm512_cvtph_ps(h);
  const __mmask16 is_nan = _mm512_cmp_ps_mask(_mm512_abs_ps(f), _mm512_set1_ps(1.875f),
                                              _CMP_EQ_OQ);
  const __m512 nan = _mm512_castsi512_ps(_mm512_or_si512(
      _mm512_and_si512(_mm512_castps_si512(f), _mm512_set1_epi32(int(0x80000000u))),
      _mm512_set1_epi32(int(kNaNBits))));
  return _mm512_mask_mov_ps(f, is_nan, nan);
}

// One block of 32 8-bit codes at c as two registers of unscaled values, in x's order (int8:
// natural; FP8: even elements then odd ones; E4M3 as value / 256; kNanCheck false: its codes
// hold no NaN).
template <DotCodes KIND, bool kNanCheck = true>
MTO_T512 MTO_INL void decode8(const uint8_t* c, __m512& w0, __m512& w1) {
  if constexpr (KIND == DotCodes::Int8) {
    w0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c))));
    w1 = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + 16))));
  } else if constexpr (KIND == DotCodes::Uint8) {
    w0 = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c))));
    w1 = _mm512_cvtepi32_ps(
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + 16))));
  } else {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c));
    if constexpr (KIND == DotCodes::E5M2) {  // a code is the top byte of its float16
      w0 = _mm512_cvtph_ps(_mm256_slli_epi16(raw, 8));
      w1 = _mm512_cvtph_ps(_mm256_and_si256(raw, _mm256_set1_epi16(int16_t(0xFF00))));
    } else {
      // E4M3: float16 bits sign | magnitude << 7 (value / 256). The NaN code (magnitude 0x7F)
      // would read as 1.875: a block holding one takes the checking decoder.
      const __m256i all = _mm256_set1_epi8(-1);
      if (kNanCheck && _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_or_si256(raw, _mm256_set1_epi8(-128)),
                                                 all)) != 0) {
        w0 = e4m3_checked(raw);
        w1 = e4m3_checked(_mm256_srli_epi16(raw, 8));
        return;
      }
      const __m256i keep = _mm256_set1_epi16(int16_t(0xBF80));  // sign, magnitude
      w0 = _mm512_cvtph_ps(_mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(raw, 8), 1), keep));
      w1 = _mm512_cvtph_ps(_mm256_and_si256(_mm256_srai_epi16(raw, 1), keep));
    }
  }
}

// 16 half-precision weights (float16 or bfloat16 bits) as floats.
template <DotCodes KIND>
MTO_T512 MTO_INL __m512 halves16(__m256i h) {
  if constexpr (KIND == DotCodes::F16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));  // BF16
}

// 16 dense weights at p (the first n when n < 16) as floats.
template <DotCodes KIND>
MTO_T512 MTO_INL __m512 dense16(const uint8_t* p, int n) {
  const __mmask16 mask = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u);
  if constexpr (KIND == DotCodes::F32) {
    return _mm512_maskz_loadu_ps(mask, p);
  } else {
    return halves16<KIND>(_mm512_castsi512_si256(_mm512_maskz_loadu_epi16(mask, p)));
  }
}

// R dense rows from row0: 16 weights per step, the last step masked (any K).
template <DotCodes KIND, int R, int M>
MTO_T512 void rows_dense(const DotWeights& w, int64_t row0, const float* xp, float* y,
                         int64_t ldy) {
  constexpr int kSize = KIND == DotCodes::F32 ? 4 : 2;
  const int64_t K = w.K;
  const uint8_t* c[R];
  __m512 acc[R][M];
  start_rows<R, M>(w, row0, c, acc);
  const int64_t ahead = R * w.row_bytes;  // prefetch distance: the next R rows
  int64_t k = 0;
  if constexpr (KIND != DotCodes::F32 && M <= 2) {
    // Half-precision rows for one or two rows of x: 32 weights (a cache line) per step, one load
    // and two conversions, into a second set of accumulators (the masked 16-weight step below ran
    // ~2.3 cycles per 16 weights from cache on Zen 5, this one ~1.7).
    __m512 acc2[R][M];
    MTO_UNROLL_ALL
    for (int r = 0; r < R; ++r)
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) acc2[r][m] = _mm512_setzero_ps();
    for (; k + 32 <= K; k += 32) {
      __m512 xa[M], xb[M];
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) {
        xa[m] = _mm512_loadu_ps(xp + m * K + k);
        xb[m] = _mm512_loadu_ps(xp + m * K + k + 16);
      }
      MTO_UNROLL_ALL
      for (int r = 0; r < R; ++r) {
        const uint8_t* p = c[r] + k * kSize;
        _mm_prefetch(reinterpret_cast<const char*>(p) + ahead, _MM_HINT_T0);
        const __m512i h = _mm512_loadu_si512(p);
        const __m512 wa = halves16<KIND>(_mm512_castsi512_si256(h));
        const __m512 wb = halves16<KIND>(_mm512_extracti64x4_epi64(h, 1));
        MTO_UNROLL_ALL
        for (int m = 0; m < M; ++m) {
          acc[r][m] = _mm512_fmadd_ps(wa, xa[m], acc[r][m]);
          acc2[r][m] = _mm512_fmadd_ps(wb, xb[m], acc2[r][m]);
        }
      }
    }
    MTO_UNROLL_ALL
    for (int r = 0; r < R; ++r)
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) acc[r][m] = _mm512_add_ps(acc[r][m], acc2[r][m]);
  }
  for (; k < K; k += 16) {
    const int n = int(std::min<int64_t>(16, K - k));
    __m512 xk[M];
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m)
      xk[m] = _mm512_maskz_loadu_ps(n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u),
                                    xp + m * K + k);
    MTO_UNROLL_ALL
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = c[r] + k * kSize;
      _mm_prefetch(reinterpret_cast<const char*>(p) + ahead, _MM_HINT_T0);
      const __m512 wk = dense16<KIND>(p, n);
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) acc[r][m] = _mm512_fmadd_ps(wk, xk[m], acc[r][m]);
    }
  }
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) y[m * ldy + r] = _mm512_reduce_add_ps(acc[r][m]);
  }
}

// R rows of 8-bit codes from row0.
template <DotCodes KIND, int R, int M, bool kNanCheck = true>
MTO_T512 void rows_bytes(const DotWeights& w, int64_t row0, const float* xp, float* y,
                         int64_t ldy) {
  const int64_t K = w.K, nblocks = K / 32;
  // MX int8: the element value is q * 2^-6; the power of two joins the scale (exact).
  const float mul = KIND == DotCodes::Int8 ? 0.015625f : 1.0f;
  const uint8_t* c[R];
  __m512 acc[R][M];
  start_rows<R, M>(w, row0, c, acc);
  alignas(64) float sv[R][16];
  const int64_t ahead = R * w.row_bytes;  // prefetch distance: the next R rows
  for (int64_t b0 = 0; b0 < nblocks; b0 += 16) {
    const int nb = int(std::min<int64_t>(16, nblocks - b0));
    MTO_UNROLL_ALL
    for (int r = 0; r < R; ++r) {
      if (KIND == DotCodes::Uint8) prefetch_scales(w, row0 + R + r, b0);
      _mm512_store_ps(sv[r], block_scales(w, row0 + r, b0, nb, mul));
    }
    for (int j = 0; j < nb; ++j) {
      const int64_t blk = b0 + j;
      __m512 x0[M], x1[M];
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) {
        x0[m] = _mm512_loadu_ps(xp + m * K + blk * 32);
        x1[m] = _mm512_loadu_ps(xp + m * K + blk * 32 + 16);
      }
      MTO_UNROLL_ALL
      for (int r = 0; r < R; ++r) {
        const uint8_t* p = c[r] + blk * 32;
        _mm_prefetch(reinterpret_cast<const char*>(p) + ahead, _MM_HINT_T0);
        __m512 w0, w1;
        decode8<KIND, kNanCheck>(p, w0, w1);
        const __m512 s = _mm512_set1_ps(sv[r][j]);
        MTO_UNROLL_ALL
        for (int m = 0; m < M; ++m)
          acc[r][m] = _mm512_fmadd_ps(
              _mm512_fmadd_ps(w1, x1[m], _mm512_mul_ps(w0, x0[m])), s, acc[r][m]);
      }
    }
  }
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    if (KIND == DotCodes::Uint8) add_bias_terms<M>(w, row0 + r, xp + M * K, sums_floats(w), acc[r]);
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) y[m * ldy + r] = _mm512_reduce_add_ps(acc[r][m]);
  }
}

// Rows sharing each x load: as many as the accumulators (R x M, plus the 4-bit kernels' partial
// sums) fit the 32 registers.
template <int M> constexpr int kRows = M <= 2 ? 4 : M <= 4 ? 2 : 1;

template <int M>
MTO_T512 void rows_m(const DotWeights& w, int64_t row0, int64_t nrows, const float* xp, float* y,
                     int64_t ldy) {
  constexpr int R = kRows<M>;
  using Fn = void (*)(const DotWeights&, int64_t, const float*, float*, int64_t);
  Fn group = nullptr, single = nullptr;
  switch (w.kind) {
    case DotCodes::Lut4:
    case DotCodes::Uint4: group = rows_nibbles<R, M>; single = rows_nibbles<1, M>; break;
    case DotCodes::Int8: group = rows_bytes<DotCodes::Int8, R, M>; single = rows_bytes<DotCodes::Int8, 1, M>; break;
    case DotCodes::Uint8: group = rows_bytes<DotCodes::Uint8, R, M>; single = rows_bytes<DotCodes::Uint8, 1, M>; break;
    case DotCodes::E4M3:
      group = w.nan_codes ? rows_bytes<DotCodes::E4M3, R, M> : rows_bytes<DotCodes::E4M3, R, M, false>;
      single = w.nan_codes ? rows_bytes<DotCodes::E4M3, 1, M> : rows_bytes<DotCodes::E4M3, 1, M, false>;
      break;
    case DotCodes::E5M2: group = rows_bytes<DotCodes::E5M2, R, M>; single = rows_bytes<DotCodes::E5M2, 1, M>; break;
    case DotCodes::F32: group = rows_dense<DotCodes::F32, R, M>; single = rows_dense<DotCodes::F32, 1, M>; break;
    case DotCodes::F16: group = rows_dense<DotCodes::F16, R, M>; single = rows_dense<DotCodes::F16, 1, M>; break;
    case DotCodes::BF16: group = rows_dense<DotCodes::BF16, R, M>; single = rows_dense<DotCodes::BF16, 1, M>; break;
  }
  int64_t r = 0;
  for (; r + R <= nrows; r += R) group(w, row0 + r, xp, y + r, ldy);
  for (; r < nrows; ++r) single(w, row0 + r, xp, y + r, ldy);
}

MTO_T512 void rows_avx512(const DotWeights& w, int64_t row0, int64_t nrows, const float* xp, int M,
                          float* y, int64_t ldy) {
  switch (M) {
    case 1: return rows_m<1>(w, row0, nrows, xp, y, ldy);
    case 2: return rows_m<2>(w, row0, nrows, xp, y, ldy);
    case 3: return rows_m<3>(w, row0, nrows, xp, y, ldy);
    case 4: return rows_m<4>(w, row0, nrows, xp, y, ldy);
    case 5: return rows_m<5>(w, row0, nrows, xp, y, ldy);
    case 6: return rows_m<6>(w, row0, nrows, xp, y, ldy);
    case 7: return rows_m<7>(w, row0, nrows, xp, y, ldy);
    default: return rows_m<8>(w, row0, nrows, xp, y, ldy);
  }
}

bool supported_avx512(const DotWeights&) { return true; }

constexpr DotKernels kAvx512{"avx512", supported_avx512, x_floats_avx512, prepare_x_avx512, rows_avx512};

// ---- E4M3 through byte tables (AVX512-VBMI) ----------------------------------------------------
// Every E4M3 value, subnormals and NaN included, is exactly a bfloat16, and a bfloat16 is the top
// half of its float32. So a step of 64 codes is: two vpermi2b lookups of the 7-bit magnitude (the
// bfloat16's high byte, sign still clear, and its low byte), the sign OR'ed in, the byte pairs
// interleaved into words and the words under zero halves into floats: 9 shuffles per 64 weights,
// where the float16 route spends ~2x that (and its conversions are slow on AMD) plus a NaN check
// per block. No block holds a NaN code differently: the table maps magnitude 0x7F to NaN.
//
// The interleaves work within 128-bit lanes: float vector q (0..3) of a step holds, in lane
// 4j + t, code 16j + 4q + t, and x is prepared in that order (zeros past K: a row of K = 32 mod 64
// ends with a half step whose upper codes load as zero). Lanes 0-7 of every vector belong to the
// step's first block and lanes 8-15 to its second, so one permute of the block scales serves all.

constexpr int64_t kE4m3Step = 64;

size_t x_floats_vbmi(const DotWeights& w, int M) {
  if (w.kind != DotCodes::E4M3) return x_floats_avx512(w, M);
  return size_t(M) * size_t(round_up(w.K, kE4m3Step));
}

MTO_T512VBMI void prepare_x_vbmi(const DotWeights& w, const float* x, int64_t ldx, int M,
                                 float* xp) {
  if (w.kind != DotCodes::E4M3) return prepare_x_avx512(w, x, ldx, M, xp);
  const int64_t K = w.K, xr = round_up(K, kE4m3Step);
  // Lane 4j + t of vector q <- x[16j + 4q + t]: a 4x4 transpose of 4-float groups per step.
  const __m512i order = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51);
  for (int m = 0; m < M; ++m) {
    const float* xm = x + m * ldx;
    float* d = xp + m * xr;
    for (int64_t k = 0; k < xr; k += kE4m3Step) {
      alignas(64) float step[kE4m3Step] = {};
      std::memcpy(step, xm + k, size_t(std::min<int64_t>(kE4m3Step, K - k)) * sizeof(float));
      for (int q = 0; q < 4; ++q)
        _mm512_storeu_ps(d + k + 16 * q, _mm512_i32gather_ps(
            _mm512_add_epi32(order, _mm512_set1_epi32(4 * q)), step, 4));
    }
  }
}

// R rows of E4M3 codes from row0.
template <int R, int M>
MTO_T512VBMI void rows_e4m3_vbmi(const DotWeights& w, int64_t row0, const float* xp, float* y,
                                 int64_t ldy) {
  const int64_t K = w.K, xr = round_up(K, kE4m3Step), nblocks = K / 32;
  const E4m3Bf16Bytes& tb = e4m3_bf16_bytes();
  const __m512i hi0 = _mm512_load_si512(tb.hi), hi1 = _mm512_load_si512(tb.hi + 64);
  const __m512i lo0 = _mm512_load_si512(tb.lo), lo1 = _mm512_load_si512(tb.lo + 64);
  const __m512i sign = _mm512_set1_epi8(-128), zero = _mm512_setzero_si512();
  const __m512i pair = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const uint8_t* c[R];
  __m512 acc[R][M];
  start_rows<R, M>(w, row0, c, acc);
  const int64_t ahead = R * w.row_bytes;  // prefetch distance: the next R rows
  for (int64_t b0 = 0; b0 < nblocks; b0 += 16) {
    const int nb = int(std::min<int64_t>(16, nblocks - b0));
    __m512 S[R];
    MTO_UNROLL_ALL
    for (int r = 0; r < R; ++r) S[r] = block_scales(w, row0 + r, b0, nb, 1.0f);
    for (int j = 0; j < nb; j += 2) {
      const int64_t k = (b0 + j) * 32;
      const __mmask64 bytes = j + 1 < nb ? ~__mmask64(0) : __mmask64(0xFFFFFFFFu);
      const __m512i sidx = _mm512_add_epi32(pair, _mm512_set1_epi32(j));
      __m512 xq[4][M];
      MTO_UNROLL_ALL
      for (int q = 0; q < 4; ++q) {
        MTO_UNROLL_ALL
        for (int m = 0; m < M; ++m) xq[q][m] = _mm512_loadu_ps(xp + m * xr + k + 16 * q);
      }
      MTO_UNROLL_ALL
      for (int r = 0; r < R; ++r) {
        const uint8_t* p = c[r] + k;
        _mm_prefetch(reinterpret_cast<const char*>(p) + ahead, _MM_HINT_T0);
        const __m512i raw = _mm512_maskz_loadu_epi8(bytes, p);
        // vpermi2b reads index bits 0-6: the sign bit does not disturb the lookup.
        const __m512i hi = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(hi0, raw, hi1), raw,
                                                     sign, 0xF8);  // a | (b & c)
        const __m512i lo = _mm512_permutex2var_epi8(lo0, raw, lo1);
        const __m512i h0 = _mm512_unpacklo_epi8(lo, hi), h1 = _mm512_unpackhi_epi8(lo, hi);
        const __m512 f[4] = {_mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, h0)),
                             _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, h0)),
                             _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, h1)),
                             _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, h1))};
        const __m512 sv = _mm512_permutexvar_ps(sidx, S[r]);
        MTO_UNROLL_ALL
        for (int m = 0; m < M; ++m) {
          __m512 part = _mm512_mul_ps(f[0], xq[0][m]);
          part = _mm512_fmadd_ps(f[1], xq[1][m], part);
          part = _mm512_fmadd_ps(f[2], xq[2][m], part);
          part = _mm512_fmadd_ps(f[3], xq[3][m], part);
          acc[r][m] = _mm512_fmadd_ps(part, sv, acc[r][m]);
        }
      }
    }
  }
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) y[m * ldy + r] = _mm512_reduce_add_ps(acc[r][m]);
  }
}

template <int M>
MTO_T512VBMI void e4m3_rows_m(const DotWeights& w, int64_t row0, int64_t nrows, const float* xp,
                              float* y, int64_t ldy) {
  constexpr int R = kRows<M>;
  int64_t r = 0;
  for (; r + R <= nrows; r += R) rows_e4m3_vbmi<R, M>(w, row0 + r, xp, y + r, ldy);
  for (; r < nrows; ++r) rows_e4m3_vbmi<1, M>(w, row0 + r, xp, y + r, ldy);
}

MTO_T512VBMI void rows_vbmi(const DotWeights& w, int64_t row0, int64_t nrows, const float* xp,
                            int M, float* y, int64_t ldy) {
  if (w.kind != DotCodes::E4M3) return rows_avx512(w, row0, nrows, xp, M, y, ldy);
  switch (M) {
    case 1: return e4m3_rows_m<1>(w, row0, nrows, xp, y, ldy);
    case 2: return e4m3_rows_m<2>(w, row0, nrows, xp, y, ldy);
    case 3: return e4m3_rows_m<3>(w, row0, nrows, xp, y, ldy);
    case 4: return e4m3_rows_m<4>(w, row0, nrows, xp, y, ldy);
    case 5: return e4m3_rows_m<5>(w, row0, nrows, xp, y, ldy);
    case 6: return e4m3_rows_m<6>(w, row0, nrows, xp, y, ldy);
    case 7: return e4m3_rows_m<7>(w, row0, nrows, xp, y, ldy);
    default: return e4m3_rows_m<8>(w, row0, nrows, xp, y, ldy);
  }
}

constexpr DotKernels kAvx512Vbmi{"avx512vbmi", supported_avx512, x_floats_vbmi, prepare_x_vbmi,
                                 rows_vbmi};

}  // namespace

const DotKernels* dot_kernels_avx512() { return &kAvx512; }
const DotKernels* dot_kernels_avx512_vbmi() { return &kAvx512Vbmi; }

}  // namespace mto::kernels

#else

namespace mto::kernels {
const DotKernels* dot_kernels_avx512() { return nullptr; }
const DotKernels* dot_kernels_avx512_vbmi() { return nullptr; }
}  // namespace mto::kernels

#endif
