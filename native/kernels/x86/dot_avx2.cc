// AVX2 (+FMA, F16C) fused decode-and-dot kernels (dot.h), compiled with target attributes
// and chosen at run time (dot_kernels()), so one binary runs everywhere.
//
// 4-bit rows go 32 bytes (64 codes, 2 blocks) at a time. AVX2 has no 16-entry float permute, but
// every 4-bit table here holds bfloat16 values (E2M1, int4 quarters, affine's 0..15: float32s
// whose low 16 bits are zero), so two vpshufb per 32 nibbles give the low and high bytes of their
// bfloat16s, one interleave makes 16 bfloat16 words, and a shift (even words) or a mask (odd
// words) makes each 8 of them floats: ~2.4 instructions per 8 codes besides the FMA, one of them
// a shuffle, where int8 lookups, a shift pair and an int-to-float conversion took ~3.4 (one row of
// x, from cache: 1.3x on Zen 5, 1.0-1.2x on Raptor Cove cores, where 4 rows of x run ~9% slower;
// float16 bytes through vcvtph2ps were no faster). Lane L of vector k = 4n + 2u + p is code
// 16u + 2p + n + 32(L / 4) + 4(L % 4) of the chunk (n: high nibble; u: high half of the
// interleave; p: odd word), so lanes 0-3 lie in the chunk's first block and 4-7 in its second, and
// x is rearranged to match, once per call.
//
// 8-bit rows go a block at a time: int8 widened from memory and converted; FP8 made float16 bits
// for the whole block in one register pair, converted 8 at a time (x split into the 8 even then
// the 8 odd elements of every 16). Dense rows (float32 / float16 / bfloat16) go 8 weights at a time.
//
// AVX2 has 16 registers: the kernels take at most 4 rows of x per pass and M > 4 runs in passes.
#include "../dot.h"
#include "../../core/portable.h"

#if MTO_X86_KERNELS
#include "avx2_common.h"

#include <algorithm>
#include <cstring>

namespace mto::kernels {
namespace {

using namespace avx2;

constexpr int64_t kChunk = 64;  // codes per 4-bit step (32 bytes)
constexpr int kMaxPass = 4;  // rows of x per pass

// The code of a 4-bit chunk in lane L of its vector k (see the file comment).
constexpr int nibble_code(int k, int L) {
  return 16 * ((k >> 1) & 1) + 2 * (k & 1) + (k >> 2) + 32 * (L / 4) + 4 * (L % 4);
}

int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }
bool is_nibbles(DotCodes k) { return k == DotCodes::Lut4 || k == DotCodes::Uint4; }
bool is_affine(DotCodes k) { return k == DotCodes::Uint4 || k == DotCodes::Uint8; }

int64_t xrow_floats(const DotWeights& w) { return is_nibbles(w.kind) ? round_up(w.K, kChunk) : w.K; }
int64_t sums_floats(const DotWeights& w) { return is_affine(w.kind) ? round_up(w.K / w.group, 8) : 0; }

size_t x_floats_avx2(const DotWeights& w, int M) {
  return size_t(M) * size_t(xrow_floats(w) + sums_floats(w));
}

MTO_T256 void prepare_x_avx2(const DotWeights& w, const float* x, int64_t ldx, int M, float* xp) {
  const int64_t K = w.K, xr = xrow_floats(w), sr = sums_floats(w);
  const float xmul = w.kind == DotCodes::E4M3 ? 256.0f : 1.0f;  // E4M3 decodes as value / 256
  for (int m = 0; m < M; ++m) {
    const float* xm = x + m * ldx;
    float* d = xp + m * xr;
    if (is_nibbles(w.kind)) {
      for (int64_t c = 0; c < xr; c += kChunk)
        for (int k = 0; k < 8; ++k)
          for (int L = 0; L < 8; ++L) {
            const int64_t code = c + nibble_code(k, L);
            d[c + 8 * k + L] = code < K ? xm[code] : 0.0f;
          }
    } else if (w.kind == DotCodes::E4M3 || w.kind == DotCodes::E5M2) {
      for (int64_t k = 0; k < K; k += 16)
        for (int j = 0; j < 8; ++j) {
          d[k + j] = xm[k + 2 * j] * xmul;
          d[k + 8 + j] = xm[k + 2 * j + 1] * xmul;
        }
    } else {
      std::memcpy(d, xm, size_t(K) * sizeof(float));
    }
    if (is_affine(w.kind)) {
      float* s = xp + M * xr + m * sr;
      const int64_t ng = K / w.group;
      for (int64_t g = 0; g < sr; ++g) {
        __m256 acc = _mm256_setzero_ps();
        if (g < ng)
          for (int j = 0; j < w.group; j += 8)
            acc = _mm256_add_ps(acc, _mm256_loadu_ps(xm + g * w.group + j));
        alignas(32) float t[8];
        _mm256_store_ps(t, acc);
        s[g] = ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
      }
    }
  }
}

// Where one pass of the kernels reads its rows of x.
struct XPass {
  const float* x;   // prepared rows of this pass, stride xr
  int64_t xr;
  const float* xs;  // affine: their group sums, stride sr
  int64_t sr;
};

// The bfloat16 bytes of a 4-bit table, low and high, in both 128-bit lanes (vpshufb looks up
// within each lane).
struct NibbleTable {
  __m256i lo, hi;
};

// 32 4-bit values (bytes of nibble indices, one per byte) as 32 bfloat16 words: byte j of each
// lane's half u goes to word j of out[u].
MTO_T256 MTO_INL void nibbles_bf16(const NibbleTable& t, __m256i idx, __m256i (&out)[2]) {
  const __m256i lo = _mm256_shuffle_epi8(t.lo, idx), hi = _mm256_shuffle_epi8(t.hi, idx);
  out[0] = _mm256_unpacklo_epi8(lo, hi);
  out[1] = _mm256_unpackhi_epi8(lo, hi);
}

// R rows of 4-bit codes from row0, M rows of x (see the file comment for the layout).
template <int R, int M>
MTO_T256 void rows_nibbles(const DotWeights& w, const NibbleTable& t, int64_t row0, const XPass& xq,
                           float* y, int64_t ldy) {
  const bool affine = w.kind == DotCodes::Uint4;
  const int64_t nblocks = w.K / 32;
  const __m256i lo4 = _mm256_set1_epi8(0x0F);
  const __m256i high16 = _mm256_set1_epi32(int(0xFFFF0000u));
  const __m256i half = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  const uint8_t* c[R];
  __m256 acc[R][M];
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    c[r] = w.codes + (row0 + r) * w.row_bytes;
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) acc[r][m] = _mm256_setzero_ps();
  }
  const int64_t ahead = R * w.row_bytes;  // prefetch the next R rows (see dot_avx512.cc)
  for (int64_t b0 = 0; b0 < nblocks; b0 += 8) {
    const int nb = int(std::min<int64_t>(8, nblocks - b0));
    __m256 S[R];
    MTO_UNROLL_ALL
    for (int r = 0; r < R; ++r) {
      prefetch_scales(w, row0 + R + r, b0);
      S[r] = block_scales(w, row0 + r, b0, nb, 1.0f);
    }
    for (int q = 0; 2 * q < nb; ++q) {
      const int64_t ch = b0 / 2 + q;
      __m256i v[R];
      MTO_UNROLL_ALL
      for (int r = 0; r < R; ++r) {
        const uint8_t* p = c[r] + ch * 32;
        _mm_prefetch(reinterpret_cast<const char*>(p) + ahead, _MM_HINT_T0);
        v[r] = nb - 2 * q >= 2 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                               : _mm256_maskload_epi32(reinterpret_cast<const int*>(p),
                                                       _mm256_setr_epi32(-1, -1, -1, -1, 0, 0, 0, 0));
      }
      const float* xc = xq.x + ch * kChunk;
      __m256 part[R][M];
      // The low nibbles (n = 0: vectors 0-3), then the high ones (4-7): 2 registers of words per
      // row at a time.
      MTO_UNROLL_ALL
      for (int n = 0; n < 2; ++n) {
        __m256i words[R][2];  // [row][interleave half u]: 16 bfloat16 each
        MTO_UNROLL_ALL
        for (int r = 0; r < R; ++r)
          nibbles_bf16(t, _mm256_and_si256(n ? _mm256_srli_epi16(v[r], 4) : v[r], lo4), words[r]);
        MTO_UNROLL_ALL
        for (int k = 4 * n; k < 4 * n + 4; ++k) {
          __m256 xk[M];
          MTO_UNROLL_ALL
          for (int m = 0; m < M; ++m) xk[m] = _mm256_loadu_ps(xc + m * xq.xr + 8 * k);
          MTO_UNROLL_ALL
          for (int r = 0; r < R; ++r) {
            // Vector k = 4n + 2u + p: the even (p = 0) or odd words of words[r][u] as floats.
            const __m256i b = words[r][(k >> 1) & 1];
            const __m256 wk = _mm256_castsi256_ps((k & 1) ? _mm256_and_si256(b, high16)
                                                          : _mm256_slli_epi32(b, 16));
            MTO_UNROLL_ALL
            for (int m = 0; m < M; ++m)
              part[r][m] = k == 0 ? _mm256_mul_ps(wk, xk[m]) : _mm256_fmadd_ps(wk, xk[m], part[r][m]);
          }
        }
      }
      const __m256i sidx = _mm256_add_epi32(half, _mm256_set1_epi32(2 * q));
      MTO_UNROLL_ALL
      for (int r = 0; r < R; ++r) {
        const __m256 sv = _mm256_permutevar8x32_ps(S[r], sidx);
        MTO_UNROLL_ALL
        for (int m = 0; m < M; ++m) acc[r][m] = _mm256_fmadd_ps(part[r][m], sv, acc[r][m]);
      }
    }
  }
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    if (affine) add_bias_terms<M>(w, row0 + r, xq.xs, xq.sr, 0.0f, acc[r]);
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) y[m * ldy + r] = hsum(acc[r][m]);
  }
}

// A value decoded from E4M3 float16 bits (below) with the NaN magnitude, which reads as 1.875
// (as value / 256), turned into NaN of its sign.
MTO_T256 MTO_INL __m256 e4m3_nan(__m256 w) {
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(int(0x80000000u)));
  const __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32(int(kNaNBits)));
  return _mm256_blendv_ps(w, _mm256_or_ps(_mm256_and_ps(w, sign), qnan),
                          _mm256_cmp_ps(_mm256_andnot_ps(sign, w), _mm256_set1_ps(1.875f), _CMP_EQ_OQ));
}

// One block of 32 FP8 codes at c as four registers: for codes 0-15 the 8 even elements, then the
// 8 odd ones, and the same for codes 16-31 (E4M3 as value / 256, its NaN code as NaN: kNanCheck
// false when the codes hold none). The codes become float16 bits 32 at a time (the even ones from
// the low byte of each word, the odd ones from the high byte) and convert 8 at a time.
template <DotCodes KIND, bool kNanCheck = true>
MTO_T256 MTO_INL void fp8_32(const uint8_t* c, __m256 (&w)[4]) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c));
  __m256i even, odd;
  if constexpr (KIND == DotCodes::E5M2) {  // a code is the top byte of its float16
    even = _mm256_slli_epi16(raw, 8);
    odd = _mm256_and_si256(raw, _mm256_set1_epi16(int16_t(0xFF00)));
  } else {  // E4M3: float16 bits sign | magnitude << 7
    const __m256i keep = _mm256_set1_epi16(int16_t(0xBF80));
    even = _mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(raw, 8), 1), keep);
    odd = _mm256_and_si256(_mm256_srai_epi16(raw, 1), keep);
  }
  w[0] = _mm256_cvtph_ps(_mm256_castsi256_si128(even));
  w[1] = _mm256_cvtph_ps(_mm256_castsi256_si128(odd));
  w[2] = _mm256_cvtph_ps(_mm256_extracti128_si256(even, 1));
  w[3] = _mm256_cvtph_ps(_mm256_extracti128_si256(odd, 1));
  if constexpr (KIND == DotCodes::E4M3 && kNanCheck) {
    const __m256i nan7f =
        _mm256_cmpeq_epi8(_mm256_or_si256(raw, _mm256_set1_epi8(-128)), _mm256_set1_epi8(-1));
    if (_mm256_movemask_epi8(nan7f) != 0)
      for (__m256& v : w) v = e4m3_nan(v);
  }
}

// 8 codes at c as floats in x's order (int8 / uint8: natural).
template <DotCodes KIND>
MTO_T256 MTO_INL __m256 int8_8(const uint8_t* c) {
  const __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(c));
  return _mm256_cvtepi32_ps(KIND == DotCodes::Int8 ? _mm256_cvtepi8_epi32(raw)
                                                   : _mm256_cvtepu8_epi32(raw));
}

// R rows of 8-bit codes from row0, M rows of x.
template <DotCodes KIND, int R, int M, bool kNanCheck = true>
MTO_T256 void rows_bytes(const DotWeights& w, const NibbleTable&, int64_t row0, const XPass& xq,
                         float* y, int64_t ldy) {
  const int64_t nblocks = w.K / 32;
  const float mul = KIND == DotCodes::Int8 ? 0.015625f : 1.0f;  // MX int8: q * 2^-6
  const uint8_t* c[R];
  __m256 acc[R][M];
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    c[r] = w.codes + (row0 + r) * w.row_bytes;
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) acc[r][m] = _mm256_setzero_ps();
  }
  const int64_t ahead = R * w.row_bytes;
  alignas(32) float sv[R][8];
  for (int64_t b0 = 0; b0 < nblocks; b0 += 8) {
    const int nb = int(std::min<int64_t>(8, nblocks - b0));
    MTO_UNROLL_ALL
    for (int r = 0; r < R; ++r) {
      if (KIND == DotCodes::Uint8) prefetch_scales(w, row0 + R + r, b0);
      _mm256_store_ps(sv[r], block_scales(w, row0 + r, b0, nb, mul));
    }
    for (int j = 0; j < nb; ++j) {
      const int64_t blk = b0 + j;
      MTO_UNROLL_ALL
      for (int r = 0; r < R; ++r) {
        const uint8_t* p = c[r] + blk * 32;
        _mm_prefetch(reinterpret_cast<const char*>(p) + ahead, _MM_HINT_T0);
        __m256 wv[4];  // the block's 32 codes in x's order
        if constexpr (KIND == DotCodes::E4M3 || KIND == DotCodes::E5M2) {
          fp8_32<KIND, kNanCheck>(p, wv);
        } else {
          MTO_UNROLL_ALL
          for (int h = 0; h < 4; ++h) wv[h] = int8_8<KIND>(p + 8 * h);
        }
        __m256 part[M];
        MTO_UNROLL_ALL
        for (int m = 0; m < M; ++m) {
          const float* xb = xq.x + m * xq.xr + blk * 32;
          part[m] = _mm256_mul_ps(wv[0], _mm256_loadu_ps(xb));
          MTO_UNROLL_ALL
          for (int h = 1; h < 4; ++h) part[m] = _mm256_fmadd_ps(wv[h], _mm256_loadu_ps(xb + 8 * h), part[m]);
        }
        const __m256 s = _mm256_set1_ps(sv[r][j]);
        MTO_UNROLL_ALL
        for (int m = 0; m < M; ++m) acc[r][m] = _mm256_fmadd_ps(part[m], s, acc[r][m]);
      }
    }
  }
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    if (KIND == DotCodes::Uint8) add_bias_terms<M>(w, row0 + r, xq.xs, xq.sr, 0.0f, acc[r]);
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) y[m * ldy + r] = hsum(acc[r][m]);
  }
}

// One dense weight as float (tails shorter than a vector).
template <DotCodes KIND>
MTO_T256 MTO_INL float dense1(const uint8_t* p) {
  if constexpr (KIND == DotCodes::F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  } else {
    uint16_t h;
    std::memcpy(&h, p, 2);
    if constexpr (KIND == DotCodes::F16) return _cvtsh_ss(h);
    const uint32_t u = uint32_t(h) << 16;  // BF16
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
}

// 8 dense weights at p as floats.
template <DotCodes KIND>
MTO_T256 MTO_INL __m256 dense8(const uint8_t* p) {
  if constexpr (KIND == DotCodes::F32) return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (KIND == DotCodes::F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));  // BF16
}

// R dense rows from row0, M rows of x: 8 weights per step, then a scalar tail (any K).
template <DotCodes KIND, int R, int M>
MTO_T256 void rows_dense(const DotWeights& w, const NibbleTable&, int64_t row0, const XPass& xq,
                         float* y, int64_t ldy) {
  constexpr int kSize = KIND == DotCodes::F32 ? 4 : 2;
  const int64_t K = w.K;
  const uint8_t* c[R];
  __m256 acc[R][M];
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    c[r] = w.codes + (row0 + r) * w.row_bytes;
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) acc[r][m] = _mm256_setzero_ps();
  }
  const int64_t ahead = R * w.row_bytes;
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 xk[M];
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) xk[m] = _mm256_loadu_ps(xq.x + m * xq.xr + k);
    MTO_UNROLL_ALL
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = c[r] + k * kSize;
      _mm_prefetch(reinterpret_cast<const char*>(p) + ahead, _MM_HINT_T0);
      const __m256 wk = dense8<KIND>(p);
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) acc[r][m] = _mm256_fmadd_ps(wk, xk[m], acc[r][m]);
    }
  }
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) {
      float s = hsum(acc[r][m]);
      for (int64_t t = k; t < K; ++t) s += dense1<KIND>(c[r] + t * kSize) * xq.x[m * xq.xr + t];
      y[m * ldy + r] = s;
    }
  }
}

using RowsFn = void (*)(const DotWeights&, const NibbleTable&, int64_t, const XPass&, float*, int64_t);

// Weight rows sharing each load of x, as registers allow (16: the 4-bit kernels hold a code and
// two bfloat16 registers per row besides the R x M partial and total sums).
template <int M> constexpr int kNibbleRows = M == 1 ? 2 : 1;
template <int M> constexpr int kByteRows = M == 1 ? 4 : M == 2 ? 2 : 1;

template <int M>
MTO_T256 void pass_m(const DotWeights& w, const NibbleTable& t, int64_t row0, int64_t nrows,
                     const XPass& xq, float* y, int64_t ldy) {
  constexpr int R = kByteRows<M>, RN = kNibbleRows<M>;
  RowsFn group = nullptr, single = nullptr;
  int rows = R;
  switch (w.kind) {
    case DotCodes::Lut4:
    case DotCodes::Uint4: group = rows_nibbles<RN, M>; single = rows_nibbles<1, M>; rows = RN; break;
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
  for (; r + rows <= nrows; r += rows) group(w, t, row0 + r, xq, y + r, ldy);
  for (; r < nrows; ++r) single(w, t, row0 + r, xq, y + r, ldy);
}

MTO_T256 void rows_avx2(const DotWeights& w, int64_t row0, int64_t nrows, const float* xp, int M,
                        float* y, int64_t ldy) {
  NibbleTable t{_mm256_setzero_si256(), _mm256_setzero_si256()};
  if (is_nibbles(w.kind)) {
    uint8_t lo[16], hi[16];
    dot_bf16_table(w, lo, hi);  // supported() checked it
    t.lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lo)));
    t.hi = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(hi)));
  }
  const int64_t xr = xrow_floats(w), sr = sums_floats(w);
  for (int m0 = 0; m0 < M; m0 += kMaxPass) {
    const int mp = std::min(kMaxPass, M - m0);
    const XPass xq{xp + m0 * xr, xr, xp + M * xr + m0 * sr, sr};
    float* yp = y + m0 * ldy;
    switch (mp) {
      case 1: pass_m<1>(w, t, row0, nrows, xq, yp, ldy); break;
      case 2: pass_m<2>(w, t, row0, nrows, xq, yp, ldy); break;
      case 3: pass_m<3>(w, t, row0, nrows, xq, yp, ldy); break;
      default: pass_m<4>(w, t, row0, nrows, xq, yp, ldy); break;
    }
  }
}

bool supported_avx2(const DotWeights& w) {
  if (w.kind != DotCodes::Lut4) return true;
  uint8_t lo[16], hi[16];
  return dot_bf16_table(w, lo, hi);
}

constexpr DotKernels kAvx2{"avx2", supported_avx2, x_floats_avx2, prepare_x_avx2, rows_avx2};

}  // namespace

const DotKernels* dot_kernels_avx2() { return &kAvx2; }

}  // namespace mto::kernels

#else

namespace mto::kernels {
const DotKernels* dot_kernels_avx2() { return nullptr; }
}  // namespace mto::kernels

#endif
