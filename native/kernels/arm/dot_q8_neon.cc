// NEON (AArch64) fused decode-and-dot kernels with x quantized to int8 (dot.h, dot_q8_kernels):
// a block's weight codes as int8 (4-bit tables and affine4 through one vqtbl1q per 16 nibbles,
// mxint8 as it is, affine8 as q - 128) meet its 32 int8 x in widening multiplies (vmull_s8 /
// vmlal_high_s8: two products per int16 lane, at most 2 x 128 x 127 = 32512) and pairwise adds
// into int32, exact; one conversion and multiply-add apply the weight block's scale times x's.
// Baseline ARMv8 NEON (no dot-product extension), so it runs on every AArch64 CPU.
//
// x is prepared per block in the order the nibbles unpack: the 16 even elements, then the 16 odd
// ones (8-bit rows: in order). Every weight meets the quantized x (affine biases the sums of the
// quantized x), as in dot_q8_avx2.cc: the result is w . x'.
//
// Checked under qemu-user (test/native: cpu_kernels_check on arm64); not yet timed on arm64
// hardware.
#include "../dot.h"
#include "../dot_q8_common.h"
#include "../../core/portable.h"

#if defined(__aarch64__) && MTO_GNU_EXTENSIONS && !defined(_MSC_VER)
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "../../../shaders/mx_formats.h"
#include "../../core/dtype.h"

namespace mto::kernels {
namespace {

#define MTO_INL inline __attribute__((always_inline))
#define MTO_UNROLL_ALL _Pragma("GCC unroll 16")

constexpr int kMaxPass = 4;  // rows of x per pass
constexpr int kRows = 2;     // weight rows sharing each pass over x

using q8::is_affine;
using q8::is_nibbles;

// One prepared row of x, in 4-byte words: K int8 codes, the blocks' scales d, and for affine
// weights the sums of the quantized x over each group (d times the sum of the codes).
struct Q8Layout {
  int64_t blocks, code_words, sum_words;
  explicit Q8Layout(const DotWeights& w)
      : blocks(w.K / 32), code_words(w.K / 4), sum_words(is_affine(w.kind) ? w.K / w.group : 0) {}
  int64_t words() const { return code_words + blocks + sum_words; }
};

// Any 4-bit table of int8 values: vmull_s8 takes the looked-up values as they are.
bool supported_q8_neon(const DotWeights& w) { return q8::supported(w, 127); }

size_t x_words_q8_neon(const DotWeights& w, int M) { return size_t(M) * size_t(Q8Layout(w).words()); }

void prepare_x_q8_neon(const DotWeights& w, const float* x, int64_t ldx, int M, float* xp) {
  const Q8Layout l(w);
  for (int m = 0; m < M; ++m) {
    const float* xm = x + m * ldx;
    float* base = xp + m * l.words();
    int8_t* q = reinterpret_cast<int8_t*>(base);
    float* d = base + l.code_words;
    float* sums = d + l.blocks;
    std::fill(sums, sums + l.sum_words, 0.0f);
    for (int64_t b = 0; b < l.blocks; ++b) {
      int8_t blk[32];
      quantize_x_block(xm + b * 32, blk, d + b);
      if (l.sum_words) {
        int sum = 0;
        for (int8_t v : blk) sum += v;
        sums[b * 32 / w.group] += d[b] * float(sum);
      }
      int8_t* out = q + b * 32;
      if (is_nibbles(w.kind)) {
        for (int j = 0; j < 16; ++j) {
          out[j] = blk[2 * j];
          out[16 + j] = blk[2 * j + 1];
        }
      } else {
        std::memcpy(out, blk, 32);
      }
    }
  }
}

// The scale of block b of a row: MX 2^(e - 127) (NaN for 0xFF) times `unit`; affine the float16
// scale of the block's group.
MTO_INL float block_scale(const DotWeights& w, int64_t row, int64_t b, float unit) {
  if (w.e8m0) return mto_decode_e8m0(w.e8m0[row * w.row_groups + b]) * unit;
  return half_to_float(w.scales[row * w.row_groups + b / (w.group / 32)]);
}

// Block b's 32 codes of one row as int8 in x's prepared order: e the first 16, o the last 16.
template <DotCodes KIND>
MTO_INL void codes_block(const uint8_t* c, int8x16_t tbl, int8x16_t& e, int8x16_t& o) {
  if constexpr (KIND == DotCodes::Lut4 || KIND == DotCodes::Uint4) {
    const uint8x16_t v = vld1q_u8(c);
    e = vqtbl1q_s8(tbl, vandq_u8(v, vdupq_n_u8(0x0F)));  // even elements
    o = vqtbl1q_s8(tbl, vshrq_n_u8(v, 4));                // odd elements
  } else if constexpr (KIND == DotCodes::Int8) {
    e = vld1q_s8(reinterpret_cast<const int8_t*>(c));
    o = vld1q_s8(reinterpret_cast<const int8_t*>(c) + 16);
  } else {  // Uint8 read as q - 128
    e = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(c), vdupq_n_u8(0x80)));
    o = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(c + 16), vdupq_n_u8(0x80)));
  }
}

// R rows of codes from row0 against M rows of prepared x.
template <DotCodes KIND, int R, int M>
void rows_kind(const DotWeights& w, int8x16_t tbl, float unit, int64_t row0, const Q8Layout& l,
               const float* xp, float* y, int64_t ldy) {
  constexpr int64_t kBlockBytes = KIND == DotCodes::Lut4 || KIND == DotCodes::Uint4 ? 16 : 32;
  const int8_t* xq[M];
  const float* xd[M];
  MTO_UNROLL_ALL
  for (int m = 0; m < M; ++m) {
    xq[m] = reinterpret_cast<const int8_t*>(xp + m * l.words());
    xd[m] = xp + m * l.words() + l.code_words;
  }
  float32x4_t acc[R][M];
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r)
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) acc[r][m] = vdupq_n_f32(0.f);
  for (int64_t b = 0; b < l.blocks; ++b) {
    int8x16_t xe[M], xo[M];
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) {
      xe[m] = vld1q_s8(xq[m] + b * 32);
      xo[m] = vld1q_s8(xq[m] + b * 32 + 16);
    }
    MTO_UNROLL_ALL
    for (int r = 0; r < R; ++r) {
      int8x16_t we, wo;
      codes_block<KIND>(w.codes + (row0 + r) * w.row_bytes + b * kBlockBytes, tbl, we, wo);
      const float s = block_scale(w, row0 + r, b, unit);
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) {
        int16x8_t pe = vmull_s8(vget_low_s8(we), vget_low_s8(xe[m]));
        int16x8_t po = vmull_s8(vget_low_s8(wo), vget_low_s8(xo[m]));
        pe = vmlal_high_s8(pe, we, xe[m]);
        po = vmlal_high_s8(po, wo, xo[m]);
        const int32x4_t sum = vpadalq_s16(vpaddlq_s16(pe), po);
        acc[r][m] = vfmaq_n_f32(acc[r][m], vcvtq_f32_s32(sum), s * xd[m][b]);
      }
    }
  }
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) {
      float sum = vaddvq_f32(acc[r][m]);
      if (is_affine(KIND)) {  // + (bias + 128 scale for affine8) * the group's sum of x'
        const int64_t g0 = (row0 + r) * w.row_groups;
        const float* xs = xd[m] + l.blocks;
        for (int64_t g = 0; g < l.sum_words; ++g) {
          float bias = bias_of(w, g0 + g);
          if (KIND == DotCodes::Uint8) bias += 128.0f * half_to_float(w.scales[g0 + g]);
          sum += bias * xs[g];
        }
      }
      y[m * ldy + r] = sum;
    }
  }
}

template <DotCodes KIND, int M>
void rows_pass(const DotWeights& w, int8x16_t tbl, float unit, int64_t row0, int64_t nrows,
               const Q8Layout& l, const float* xp, float* y, int64_t ldy) {
  int64_t r = 0;
  for (; r + kRows <= nrows; r += kRows) rows_kind<KIND, kRows, M>(w, tbl, unit, row0 + r, l, xp, y + r, ldy);
  for (; r < nrows; ++r) rows_kind<KIND, 1, M>(w, tbl, unit, row0 + r, l, xp, y + r, ldy);
}

template <DotCodes KIND>
void rows_m(const DotWeights& w, int8x16_t tbl, float unit, int64_t row0, int64_t nrows,
            const Q8Layout& l, const float* xp, int M, float* y, int64_t ldy) {
  switch (M) {
    case 1: return rows_pass<KIND, 1>(w, tbl, unit, row0, nrows, l, xp, y, ldy);
    case 2: return rows_pass<KIND, 2>(w, tbl, unit, row0, nrows, l, xp, y, ldy);
    case 3: return rows_pass<KIND, 3>(w, tbl, unit, row0, nrows, l, xp, y, ldy);
    default: return rows_pass<KIND, 4>(w, tbl, unit, row0, nrows, l, xp, y, ldy);
  }
}

void rows_q8_neon(const DotWeights& w, int64_t row0, int64_t nrows, const float* xp, int M,
                  float* y, int64_t ldy) {
  int8_t q[16] = {};
  float unit = 1.f;  // a power of two the block sums are scaled by besides the block scale
  if (is_nibbles(w.kind)) dot_int8_table(w, q, &unit);
  if (w.kind == DotCodes::Int8) unit = 0.015625f;  // q * 2^-6 (exact)
  const int8x16_t tbl = vld1q_s8(q);
  const Q8Layout l(w);
  const auto rows = w.kind == DotCodes::Lut4    ? rows_m<DotCodes::Lut4>
                    : w.kind == DotCodes::Uint4 ? rows_m<DotCodes::Uint4>
                    : w.kind == DotCodes::Int8  ? rows_m<DotCodes::Int8>
                                                : rows_m<DotCodes::Uint8>;
  for (int m0 = 0; m0 < M; m0 += kMaxPass) {  // passes of up to kMaxPass rows of x
    const int mp = std::min(kMaxPass, M - m0);
    rows(w, tbl, unit, row0, nrows, l, xp + m0 * l.words(), mp, y + m0 * ldy, ldy);
  }
}

constexpr DotKernels kQ8Neon{"neon-q8", supported_q8_neon, x_words_q8_neon, prepare_x_q8_neon, rows_q8_neon};

}  // namespace

const DotKernels* dot_q8_kernels_neon() { return &kQ8Neon; }

}  // namespace mto::kernels

#else

namespace mto::kernels {
const DotKernels* dot_q8_kernels_neon() { return nullptr; }
}  // namespace mto::kernels

#endif
