// AVX-512 VNNI fused decode-and-dot kernels with x quantized to int8 (dot.h, dot_q8_kernels):
// vpdpbusd multiplies 64 unsigned bytes by 64 signed bytes and adds each 4 adjacent products into
// an int32 lane, exact, in one instruction: AVX2's vpmaddubsw + vpmaddwd pair (dot_q8_avx2.cc) at
// twice the width and without its int16 step, so nothing needs to stay below the int16 limit.
// Ice Lake, Zen 4 and later have it; llama.cpp's CPU build runs its q8 dot products with it there.
//
// The codes are the unsigned operand. affine4 (0..15) and affine8 (0..255) codes go as they are
// (AVX2 reads affine8 as q - 128 to fit vpmaddubsw's int16 sums; here it need not), a 4-bit
// table's int8 values v (mxfp4: 2 x E2M1) are looked up as v + o (o = max |v|), the block then
// taking o times the sum of its x codes off, once; mxint8 codes go as |q| against x with q's sign,
// as AVX2 does (q + 128 with 128 sum(x) taken off would cancel most of a float32 partial sum).
// affine biases meet the group sums of the quantized x, as in dot_q8_avx2.cc (see there why).
//
// 4-bit rows go 64 bytes (4 blocks) at a time: each 128-bit lane holds one block, its low nibbles
// the even elements and its high nibbles the odd ones, and x is prepared to match (per 4 blocks:
// the even elements of each block, then the odd ones), so a block's 32 products land in the 4
// int32 lanes of its own 128-bit lane, scaled there by a permuted vector of the block scales.
// 8-bit rows go 64 bytes (2 blocks) at a time, x in its own order. x is quantized here too, 16
// lanes at a time (the same rule and bits as quantize_x_block).
#include "../dot.h"
#include "../../core/portable.h"

#if MTO_X86_KERNELS
#include "avx512_common.h"
#include "../dot_q8_common.h"

#include <cstring>

#define MTO_T512VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

namespace mto::kernels {
namespace {

using namespace avx512;

constexpr int kMaxPass = 4;  // rows of x per pass

using namespace q8;
// 4-bit rows go 4 blocks a step; scale vectors hold 16.
using Q8Layout = Layout<4, 16>;
using Q8Row = Row;
Q8Row q8_row(const Q8Layout& l, const float* xp, int m) { return row_of(l, xp, m); }

// Any int8 table: v + max|v| <= 255 fits vpdpbusd's unsigned operand.
bool supported_q8_avx512(const DotWeights& w) { return supported(w, 128); }

size_t x_words_q8_avx512(const DotWeights& w, int M) { return size_t(M) * size_t(Q8Layout(w).words()); }

MTO_T512 void prepare_x_q8_avx512(const DotWeights& w, const float* x, int64_t ldx, int M, float* xp) {
  const Q8Layout l(w);
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (int m = 0; m < M; ++m) {
    const float* xm = x + m * ldx;
    float* base = xp + m * l.words();
    int8_t* q = reinterpret_cast<int8_t*>(base);
    float* d = base + l.code_words;
    float* sums = d + l.d_words;
    std::memset(base, 0, size_t(l.words()) * 4);
    for (int64_t b = 0; b < l.blocks; ++b) {
      __m512i a, c;
      if (!quantize_x_block16(xm + b * 32, a, c, d[b])) {
        alignas(64) int8_t blk[32];
        quantize_x_block(xm + b * 32, blk, d + b);
        const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk));
        a = _mm512_cvtepi8_epi32(_mm256_castsi256_si128(v));
        c = _mm512_cvtepi8_epi32(_mm256_extracti128_si256(v, 1));
      }
      if (l.sum_words) {
        const float sum = float(_mm512_reduce_add_epi32(_mm512_add_epi32(a, c)));
        if (is_affine(w.kind)) sums[b * 32 / w.group] += d[b] * sum;
        else sums[b] = sum;
      }
      if (is_nibbles(w.kind)) {
        // Chunk b / 4: [even of its 4 blocks, 16 each | odd of its 4 blocks, 16 each].
        int8_t* ch = q + (b / 4) * 128 + (b % 4) * 16;
        _mm_storeu_si128(reinterpret_cast<__m128i*>(ch), _mm512_cvtepi32_epi8(_mm512_permutex2var_epi32(a, even, c)));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(ch + 64), _mm512_cvtepi32_epi8(_mm512_permutex2var_epi32(a, odd, c)));
      } else {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * 32), _mm512_cvtepi32_epi8(a));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * 32 + 16), _mm512_cvtepi32_epi8(c));
      }
    }
  }
}

// A 4-bit row's table (values plus the offset) in every 128-bit lane, the power of two it is
// scaled by, and the offset.
struct Q8Table {
  __m512i q;
  float unit;
  float offset;
};

// Zeroed accumulators and the code pointers of R rows; the prepared x rows.
template <int R, int M>
MTO_T512 MTO_INL void start(const DotWeights& w, int64_t row0, const Q8Layout& l, const float* xp,
                            Q8Row (&xr)[M], const uint8_t* (&c)[R], __m512 (&acc)[R][M]) {
  MTO_UNROLL_ALL
  for (int m = 0; m < M; ++m) xr[m] = q8_row(l, xp, m);
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    c[r] = w.codes + (row0 + r) * w.row_bytes;
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) acc[r][m] = _mm512_setzero_ps();
  }
}

// Weight block scale times x's, per block b0 .. b0 + 15 (sd), and for 4-bit tables the offset
// times each block's code sum taken off at that scale.
template <int R, int M>
MTO_T512 MTO_INL void block_factors(const DotWeights& w, int64_t row0, int64_t b0, int nb, float mul, float offset,
                                    const Q8Row (&xr)[M], __m512 (&sd)[R][M], __m512 (&acc)[R][M]) {
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    prefetch_scales(w, row0 + R + r, b0);
    const __m512 s = block_scales(w, row0 + r, b0, nb, mul);
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) {
      sd[r][m] = _mm512_mul_ps(s, _mm512_loadu_ps(xr[m].d + b0));
      if (offset != 0)
        acc[r][m] = _mm512_fmadd_ps(sd[r][m], _mm512_mul_ps(_mm512_set1_ps(-offset), _mm512_loadu_ps(xr[m].sums + b0)),
                                    acc[r][m]);
    }
  }
}

// The row sums into y, with the affine bias terms.
template <int R, int M>
MTO_T512 MTO_INL void finish(const DotWeights& w, int64_t row0, const Q8Layout& l, const Q8Row (&xr)[M],
                             __m512 (&acc)[R][M], float* y, int64_t ldy) {
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    if (is_affine(w.kind)) add_bias_terms<M>(w, row0 + r, xr[0].sums, l.words(), acc[r]);
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) y[m * ldy + r] = _mm512_reduce_add_ps(acc[r][m]);
  }
}

// R rows of 4-bit codes from row0, M rows of x. kTable: codes index t.q (values + offset);
// otherwise they are their own values (affine4).
template <bool kTable, int R, int M>
MTO_T512VNNI void rows_q8_nibbles(const DotWeights& w, const Q8Table& t, int64_t row0, const Q8Layout& l,
                                  const float* xp, float* y, int64_t ldy) {
  const __m512i lo4 = _mm512_set1_epi8(0x0F);
  const __m512i quarter = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  Q8Row xr[M];
  const uint8_t* c[R];
  __m512 acc[R][M];
  start<R, M>(w, row0, l, xp, xr, c, acc);
  const int64_t ahead = R * w.row_bytes;  // prefetch the next R rows
  for (int64_t b0 = 0; b0 < l.blocks; b0 += 16) {
    const int nb = int(std::min<int64_t>(16, l.blocks - b0));
    __m512 sd[R][M];
    block_factors<R, M>(w, row0, b0, nb, kTable ? t.unit : 1.0f, kTable ? t.offset : 0.0f, xr, sd, acc);
    for (int q = 0; 4 * q < nb; ++q) {
      const int64_t ch = b0 / 4 + q;
      const int left = nb - 4 * q;
      __m512i xe[M], xo[M];
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) {
        xe[m] = _mm512_loadu_si512(xr[m].q + ch * 128);
        xo[m] = _mm512_loadu_si512(xr[m].q + ch * 128 + 64);
      }
      const __m512i sidx = _mm512_add_epi32(quarter, _mm512_set1_epi32(4 * q));
      MTO_UNROLL_ALL
      for (int r = 0; r < R; ++r) {
        const uint8_t* p = c[r] + ch * 64;
        _mm_prefetch(reinterpret_cast<const char*>(p) + ahead, _MM_HINT_T0);
        const __m512i v = left >= 4 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8(__mmask64((1ull << (16 * left)) - 1), p);
        __m512i even = _mm512_and_si512(v, lo4);
        __m512i odd = _mm512_and_si512(_mm512_srli_epi16(v, 4), lo4);
        if constexpr (kTable) {
          even = _mm512_shuffle_epi8(t.q, even);
          odd = _mm512_shuffle_epi8(t.q, odd);
        }
        MTO_UNROLL_ALL
        for (int m = 0; m < M; ++m) {
          const __m512i sum = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), even, xe[m]), odd, xo[m]);
          acc[r][m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_permutexvar_ps(sidx, sd[r][m]), acc[r][m]);
        }
      }
    }
  }
  finish<R, M>(w, row0, l, xr, acc, y, ldy);
}

// R rows of 8-bit codes from row0, M rows of x: mxint8 (value q * 2^-6, as |q| against x times
// q's sign) or affine8 (q as it is).
template <DotCodes KIND, int R, int M>
MTO_T512VNNI void rows_q8_bytes(const DotWeights& w, const Q8Table&, int64_t row0, const Q8Layout& l,
                                const float* xp, float* y, int64_t ldy) {
  constexpr bool kSigned = KIND == DotCodes::Int8;
  const __m512i half = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  Q8Row xr[M];
  const uint8_t* c[R];
  __m512 acc[R][M];
  start<R, M>(w, row0, l, xp, xr, c, acc);
  const int64_t ahead = R * w.row_bytes;
  for (int64_t b0 = 0; b0 < l.blocks; b0 += 16) {
    const int nb = int(std::min<int64_t>(16, l.blocks - b0));
    __m512 sd[R][M];
    block_factors<R, M>(w, row0, b0, nb, kSigned ? 0.015625f : 1.0f, 0.0f, xr, sd, acc);
    for (int q = 0; 2 * q < nb; ++q) {
      const int64_t blk = b0 + 2 * q;
      __m512i xv[M];
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) xv[m] = _mm512_loadu_si512(xr[m].q + blk * 32);
      const __m512i sidx = _mm512_add_epi32(half, _mm512_set1_epi32(2 * q));
      MTO_UNROLL_ALL
      for (int r = 0; r < R; ++r) {
        const uint8_t* p = c[r] + blk * 32;
        _mm_prefetch(reinterpret_cast<const char*>(p) + ahead, _MM_HINT_T0);
        const __m512i v = nb - 2 * q >= 2 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8(__mmask64(0xFFFFFFFFull), p);
        // mxint8: |q| (-128 gives 0x80, read unsigned: 128) against x negated where q < 0.
        const __m512i u = kSigned ? _mm512_abs_epi8(v) : v;
        const __mmask64 neg = kSigned ? _mm512_movepi8_mask(v) : 0;
        MTO_UNROLL_ALL
        for (int m = 0; m < M; ++m) {
          const __m512i xs = kSigned ? _mm512_mask_sub_epi8(xv[m], neg, _mm512_setzero_si512(), xv[m]) : xv[m];
          const __m512i sum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, xs);
          acc[r][m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_permutexvar_ps(sidx, sd[r][m]), acc[r][m]);
        }
      }
    }
  }
  finish<R, M>(w, row0, l, xr, acc, y, ldy);
}

using RowsFn = void (*)(const DotWeights&, const Q8Table&, int64_t, const Q8Layout&, const float*, float*, int64_t);

// Weight rows sharing each load of x (R x M accumulators and scale vectors within 32 registers).
// 8-bit rows of one x go one row at a time: their step is light enough that the loads decide, and
// one contiguous stream a thread reads DRAM faster than 4 rows side by side (4 streams 2 KiB or
// more apart): 1 x 128256 x 2048 affine8, the same run alternating, 1.16-1.33x. The 4-bit kernels'
// heavier step (unpack, two vpdpbusd) keeps 4 rows: one row at a time was 0.88x there.
template <int M> constexpr int kRows = M <= 2 ? 4 : 2;
template <int M> constexpr int kByteRows = M == 1 ? 1 : kRows<M>;

template <int M>
MTO_T512 void pass_q8(const DotWeights& w, const Q8Table& t, int64_t row0, int64_t nrows, const Q8Layout& l,
                      const float* xp, float* y, int64_t ldy) {
  constexpr int R = kRows<M>, RB = kByteRows<M>;
  RowsFn group = nullptr, single = nullptr;
  int rows = R;
  switch (w.kind) {
    case DotCodes::Lut4: group = rows_q8_nibbles<true, R, M>; single = rows_q8_nibbles<true, 1, M>; break;
    case DotCodes::Uint4: group = rows_q8_nibbles<false, R, M>; single = rows_q8_nibbles<false, 1, M>; break;
    case DotCodes::Int8: group = rows_q8_bytes<DotCodes::Int8, RB, M>; single = rows_q8_bytes<DotCodes::Int8, 1, M>; rows = RB; break;
    case DotCodes::Uint8: group = rows_q8_bytes<DotCodes::Uint8, RB, M>; single = rows_q8_bytes<DotCodes::Uint8, 1, M>; rows = RB; break;
    default: return;  // supported_q8_avx512 refused it
  }
  int64_t r = 0;
  for (; r + rows <= nrows; r += rows) group(w, t, row0 + r, l, xp, y + r, ldy);
  for (; r < nrows; ++r) single(w, t, row0 + r, l, xp, y + r, ldy);
}

MTO_T512 void rows_q8_avx512(const DotWeights& w, int64_t row0, int64_t nrows, const float* xp, int M,
                             float* y, int64_t ldy) {
  Q8Table t{_mm512_setzero_si512(), 1.0f, 0.0f};
  if (w.kind == DotCodes::Lut4) {
    int8_t q[16];
    dot_int8_table(w, q, &t.unit);  // supported_q8_avx512 checked it
    const int o = table_offset(q);
    uint8_t u[16];
    for (int i = 0; i < 16; ++i) u[i] = uint8_t(q[i] + o);  // 0 .. 2 o <= 255
    t.offset = float(o);
    t.q = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(u)));
  }
  const Q8Layout l(w);
  for (int m0 = 0; m0 < M; m0 += kMaxPass) {
    const int mp = std::min(kMaxPass, M - m0);
    const float* xm = xp + m0 * l.words();
    float* yp = y + m0 * ldy;
    switch (mp) {
      case 1: pass_q8<1>(w, t, row0, nrows, l, xm, yp, ldy); break;
      case 2: pass_q8<2>(w, t, row0, nrows, l, xm, yp, ldy); break;
      case 3: pass_q8<3>(w, t, row0, nrows, l, xm, yp, ldy); break;
      default: pass_q8<4>(w, t, row0, nrows, l, xm, yp, ldy); break;
    }
  }
}

constexpr DotKernels kQ8Avx512{"avx512-vnni-q8", supported_q8_avx512, x_words_q8_avx512, prepare_x_q8_avx512,
                               rows_q8_avx512};

}  // namespace

const DotKernels* dot_q8_kernels_avx512() { return &kQ8Avx512; }

}  // namespace mto::kernels

#else

namespace mto::kernels {
const DotKernels* dot_q8_kernels_avx512() { return nullptr; }
}  // namespace mto::kernels

#endif
