// AVX2 fused decode-and-dot kernels with x quantized to int8 (dot.h, dot_q8_kernels): vpmaddubsw
// multiplies unsigned by signed bytes into int16 pairs and vpmaddwd sums those into int32, so a
// block of 32 codes meets its 32 int8 x in two multiply-add instructions, exact, and one
// conversion and FMA apply the weight block's scale times x's block scale. Nothing of a code
// becomes a float: about half the instructions per code of the float kernels (dot_avx2.cc).
//
// vpmaddubsw wants its first operand unsigned: affine4 codes (0..15) are; a 4-bit table's int8
// values v (mxfp4: 2 x E2M1, -12..12) are looked up as v + o, o = max |v|, and o * sum(x codes)
// of the block is taken off once per block; 8-bit codes (mxint8, affine8's read as q - 128) go as
// |w| against x with w's sign (vpsignb), as llama.cpp does. A pair's sum stays below the int16
// limit: |w| <= 128 and |x| <= 127 give at most 32512 (tables are held to o <= 32, since their
// two nibble halves are added as int16 before vpmaddwd). affine8's shift by 128 moves 128 scales
// into the bias.
//
// Every weight meets the quantized x: an affine bias multiplies the sum of the group's
// quantized x (d times the sum of its codes), not of x itself, so the result is w . x' exactly
// (x' the dequantized x), whose error is sum(w * (x' - x)); pairing the bias with the exact sum
// would leave s * sum(q * (x' - x)) with codes q all positive (0..15, 0..255): up to 30 times
// larger for affine8 codes of Q8_0 files.
//
// 4-bit rows go 32 bytes (2 blocks) at a time: the low nibbles of those bytes are the even
// elements of both blocks, the high nibbles the odd ones, and x is prepared in that order (per 2
// blocks: the even elements of each, then the odd ones), so each 128-bit lane holds one block.
// 8-bit rows go a block at a time, x in its own order.
#include "../dot.h"
#include "../../core/portable.h"

#if MTO_X86_KERNELS
#include "avx2_common.h"
#include "../dot_q8_common.h"

#include <algorithm>
#include <cstring>

namespace mto::kernels {
namespace {

using namespace avx2;

constexpr int kMaxPass = 4;   // rows of x per pass
constexpr int kMaxTable = 32; // largest |value| of a 4-bit int8 table (see the file comment)

using namespace q8;
// 4-bit rows go 2 blocks a step; scale vectors hold 8.
using Q8Layout = Layout<2, 8>;
using Q8Row = Row;
Q8Row q8_row(const Q8Layout& l, const float* xp, int m) { return row_of(l, xp, m); }

bool supported_q8_avx2(const DotWeights& w) { return supported(w, kMaxTable); }

size_t x_words_q8_avx2(const DotWeights& w, int M) { return size_t(M) * size_t(Q8Layout(w).words()); }

void prepare_x_q8_avx2(const DotWeights& w, const float* x, int64_t ldx, int M, float* xp) {
  const Q8Layout l(w);
  for (int m = 0; m < M; ++m) {
    const float* xm = x + m * ldx;
    float* base = xp + m * l.words();
    int8_t* q = reinterpret_cast<int8_t*>(base);
    float* d = base + l.code_words;
    float* sums = d + l.d_words;
    std::memset(base, 0, size_t(l.words()) * 4);
    for (int64_t b = 0; b < l.blocks; ++b) {
      int8_t blk[32];
      quantize_x_block(xm + b * 32, blk, d + b);
      if (l.sum_words) {
        int sum = 0;
        for (int8_t v : blk) sum += v;
        if (w.kind == DotCodes::Lut4) sums[b] = float(sum);
        else sums[b * 32 / w.group] += d[b] * float(sum);
      }
      if (is_nibbles(w.kind)) {
        // Chunk c = b / 2: [even of block 2c | even of 2c+1 | odd of 2c | odd of 2c+1], 16 each.
        int8_t* ch = q + (b / 2) * 64 + (b % 2) * 16;
        for (int j = 0; j < 16; ++j) {
          ch[j] = blk[2 * j];
          ch[32 + j] = blk[2 * j + 1];
        }
      } else {
        std::memcpy(q + b * 32, blk, 32);
      }
    }
  }
}

// A 4-bit row's table in both 128-bit lanes (values plus the offset), the power of two it is
// scaled by, and the offset.
struct Q8Table {
  __m256i q;
  float unit;
  float offset;
};

// R rows of 4-bit codes from row0, M rows of x. kTable: codes index t.q (values + offset);
// otherwise they are their own values (affine4).
template <bool kTable, int R, int M>
MTO_T256 void rows_q8_nibbles(const DotWeights& w, const Q8Table& t, int64_t row0, const Q8Layout& l,
                              const float* xp, float* y, int64_t ldy) {
  const int64_t nblocks = l.blocks;
  const __m256i lo4 = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i half = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  Q8Row xr[M];
  MTO_UNROLL_ALL
  for (int m = 0; m < M; ++m) xr[m] = q8_row(l, xp, m);
  const uint8_t* c[R];
  __m256 acc[R][M];
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    c[r] = w.codes + (row0 + r) * w.row_bytes;
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) acc[r][m] = _mm256_setzero_ps();
  }
  const int64_t ahead = R * w.row_bytes;  // prefetch the next R rows
  for (int64_t b0 = 0; b0 < nblocks; b0 += 8) {
    const int nb = int(std::min<int64_t>(8, nblocks - b0));
    __m256 sd[R][M];  // weight block scale times x's, per block of these 8
    MTO_UNROLL_ALL
    for (int r = 0; r < R; ++r) {
      prefetch_scales(w, row0 + R + r, b0);
      const __m256 s = block_scales(w, row0 + r, b0, nb, kTable ? t.unit : 1.0f);
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) {
        sd[r][m] = _mm256_mul_ps(s, _mm256_loadu_ps(xr[m].d + b0));
        // The offset the table added: - offset * sum(x codes) of each block, scaled like the block.
        if constexpr (kTable)
          acc[r][m] = _mm256_fmadd_ps(sd[r][m], _mm256_mul_ps(_mm256_set1_ps(-t.offset), _mm256_loadu_ps(xr[m].sums + b0)), acc[r][m]);
      }
    }
    for (int q = 0; 2 * q < nb; ++q) {
      const int64_t ch = b0 / 2 + q;
      __m256i xe[M], xo[M];
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) {
        xe[m] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[m].q + ch * 64));
        xo[m] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[m].q + ch * 64 + 32));
      }
      const __m256i sidx = _mm256_add_epi32(half, _mm256_set1_epi32(2 * q));
      MTO_UNROLL_ALL
      for (int r = 0; r < R; ++r) {
        const uint8_t* p = c[r] + ch * 32;
        _mm_prefetch(reinterpret_cast<const char*>(p) + ahead, _MM_HINT_T0);
        const __m256i v = nb - 2 * q >= 2
                              ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                              : _mm256_set_m128i(_mm_setzero_si128(), _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        __m256i even = _mm256_and_si256(v, lo4);
        __m256i odd = _mm256_and_si256(_mm256_srli_epi16(v, 4), lo4);
        if constexpr (kTable) {
          even = _mm256_shuffle_epi8(t.q, even);
          odd = _mm256_shuffle_epi8(t.q, odd);
        }
        MTO_UNROLL_ALL
        for (int m = 0; m < M; ++m) {
          const __m256i pe = _mm256_maddubs_epi16(even, xe[m]);
          const __m256i po = _mm256_maddubs_epi16(odd, xo[m]);
          const __m256i sum = _mm256_madd_epi16(_mm256_add_epi16(pe, po), ones);
          acc[r][m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_permutevar8x32_ps(sd[r][m], sidx), acc[r][m]);
        }
      }
    }
  }
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    if (!kTable) add_bias_terms<M>(w, row0 + r, xr[0].sums, l.words(), 0.0f, acc[r]);
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) y[m * ldy + r] = hsum(acc[r][m]);
  }
}

// R rows of 8-bit codes from row0, M rows of x: mxint8 (value q * 2^-6) or affine8 (read as
// q - 128).
template <DotCodes KIND, int R, int M>
MTO_T256 void rows_q8_bytes(const DotWeights& w, const Q8Table&, int64_t row0, const Q8Layout& l,
                            const float* xp, float* y, int64_t ldy) {
  const int64_t nblocks = l.blocks;
  const float mul = KIND == DotCodes::Int8 ? 0.015625f : 1.0f;
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i flip = _mm256_set1_epi8(int8_t(0x80));
  Q8Row xr[M];
  MTO_UNROLL_ALL
  for (int m = 0; m < M; ++m) xr[m] = q8_row(l, xp, m);
  const uint8_t* c[R];
  __m256 acc[R][M];
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    c[r] = w.codes + (row0 + r) * w.row_bytes;
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) acc[r][m] = _mm256_setzero_ps();
  }
  const int64_t ahead = R * w.row_bytes;
  alignas(32) float sv[R][M][8];
  for (int64_t b0 = 0; b0 < nblocks; b0 += 8) {
    const int nb = int(std::min<int64_t>(8, nblocks - b0));
    MTO_UNROLL_ALL
    for (int r = 0; r < R; ++r) {
      if (KIND == DotCodes::Uint8) prefetch_scales(w, row0 + R + r, b0);
      const __m256 s = block_scales(w, row0 + r, b0, nb, mul);
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) _mm256_store_ps(sv[r][m], _mm256_mul_ps(s, _mm256_loadu_ps(xr[m].d + b0)));
    }
    for (int j = 0; j < nb; ++j) {
      const int64_t blk = b0 + j;
      __m256i xv[M];
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) xv[m] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[m].q + blk * 32));
      MTO_UNROLL_ALL
      for (int r = 0; r < R; ++r) {
        const uint8_t* p = c[r] + blk * 32;
        _mm_prefetch(reinterpret_cast<const char*>(p) + ahead, _MM_HINT_T0);
        __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        if constexpr (KIND == DotCodes::Uint8) v = _mm256_xor_si256(v, flip);
        const __m256i av = _mm256_abs_epi8(v);
        MTO_UNROLL_ALL
        for (int m = 0; m < M; ++m) {
          const __m256i sum = _mm256_madd_epi16(_mm256_maddubs_epi16(av, _mm256_sign_epi8(xv[m], v)), ones);
          acc[r][m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(sv[r][m][j]), acc[r][m]);
        }
      }
    }
  }
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    if (KIND == DotCodes::Uint8) add_bias_terms<M>(w, row0 + r, xr[0].sums, l.words(), 128.0f, acc[r]);
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) y[m * ldy + r] = hsum(acc[r][m]);
  }
}

using RowsFn = void (*)(const DotWeights&, const Q8Table&, int64_t, const Q8Layout&, const float*, float*, int64_t);

// Weight rows sharing each load of x (R x M accumulators and scale vectors within 16 registers).
template <int M> constexpr int kRows = M == 1 ? 4 : M == 2 ? 2 : 1;

template <int M>
MTO_T256 void pass_q8(const DotWeights& w, const Q8Table& t, int64_t row0, int64_t nrows, const Q8Layout& l,
                      const float* xp, float* y, int64_t ldy) {
  constexpr int R = kRows<M>;
  RowsFn group = nullptr, single = nullptr;
  switch (w.kind) {
    case DotCodes::Lut4: group = rows_q8_nibbles<true, R, M>; single = rows_q8_nibbles<true, 1, M>; break;
    case DotCodes::Uint4: group = rows_q8_nibbles<false, R, M>; single = rows_q8_nibbles<false, 1, M>; break;
    case DotCodes::Int8: group = rows_q8_bytes<DotCodes::Int8, R, M>; single = rows_q8_bytes<DotCodes::Int8, 1, M>; break;
    case DotCodes::Uint8: group = rows_q8_bytes<DotCodes::Uint8, R, M>; single = rows_q8_bytes<DotCodes::Uint8, 1, M>; break;
    default: return;  // supported_q8_avx2 refused it
  }
  int64_t r = 0;
  for (; r + R <= nrows; r += R) group(w, t, row0 + r, l, xp, y + r, ldy);
  for (; r < nrows; ++r) single(w, t, row0 + r, l, xp, y + r, ldy);
}

MTO_T256 void rows_q8_avx2(const DotWeights& w, int64_t row0, int64_t nrows, const float* xp, int M,
                           float* y, int64_t ldy) {
  Q8Table t{_mm256_setzero_si256(), 1.0f, 0.0f};
  if (w.kind == DotCodes::Lut4) {
    int8_t q[16];
    dot_int8_table(w, q, &t.unit);  // supported_q8_avx2 checked it
    const int o = table_offset(q);
    for (int8_t& v : q) v = int8_t(v + o);  // 0 .. 2 o <= 64
    t.offset = float(o);
    t.q = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
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

constexpr DotKernels kQ8Avx2{"avx2-q8", supported_q8_avx2, x_words_q8_avx2, prepare_x_q8_avx2, rows_q8_avx2};

}  // namespace

const DotKernels* dot_q8_kernels_avx2() { return &kQ8Avx2; }

}  // namespace mto::kernels

#else

namespace mto::kernels {
const DotKernels* dot_q8_kernels_avx2() { return nullptr; }
}  // namespace mto::kernels

#endif
