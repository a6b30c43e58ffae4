// NEON (AArch64) fused decode-and-dot kernels (dot.h) for the MX and affine codes: 4-bit
// tables of small integers times a power of two (mxfp4: halves, mxint4: quarters, affine4:
// 0..15), int8 (mxint8), uint8 (affine8) and FP8 (mxfp8 E4M3 and E5M2), and dense float16 /
// bfloat16 rows (16 weights a step, any K: the last few in scalar code).
//
// A block of 32 codes becomes 8 vectors of 4 floats: 4-bit codes through one vqtbl1q lookup per
// 16 nibbles (the table as int8, its power of two joined to the block scale), then widened
// (int8 -> int16 -> int32 -> float). The low nibbles hold the even elements and the high ones the
// odd elements of the block, so x is prepared in that order (16 even, then 16 odd) once per call;
// 8-bit codes keep their order. FP8 codes become float16 bits (E5M2: the code is the top byte;
// E4M3: sign | magnitude << 7, its value / 256, x carrying the 256) widened by the FP conversion
// instructions. Each row's block sum meets its scale in one multiply-add.
//
// Checked under qemu-user (test/native: cpu_kernels_check on arm64); not yet timed on arm64
// hardware.
#include "../dot.h"
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

bool is_nibbles(DotCodes k) { return k == DotCodes::Lut4 || k == DotCodes::Uint4; }
bool is_affine(DotCodes k) { return k == DotCodes::Uint4 || k == DotCodes::Uint8; }

bool supported_neon(const DotWeights& w) {
  switch (w.kind) {
    case DotCodes::Lut4: {
      int8_t q[16];
      float unit;
      return dot_int8_table(w, q, &unit);
    }
    case DotCodes::Uint4:
    case DotCodes::Int8:
    case DotCodes::Uint8:
    case DotCodes::E4M3:
    case DotCodes::E5M2:
    case DotCodes::F16:
    case DotCodes::BF16: return true;
    // float32 rows need no decoding: gemv_t reads them in place, 8 rows per load of x (not timed
    // against this kernel on arm64 hardware yet, so the tested path stays).
    default: return false;
  }
}

int64_t sums_floats(const DotWeights& w) { return is_affine(w.kind) ? w.K / w.group : 0; }

size_t x_floats_neon(const DotWeights& w, int M) {
  return size_t(M) * size_t(w.K + sums_floats(w));
}

void prepare_x_neon(const DotWeights& w, const float* x, int64_t ldx, int M, float* xp) {
  const int64_t K = w.K, sr = sums_floats(w);
  for (int m = 0; m < M; ++m) {
    const float* xm = x + m * ldx;
    float* d = xp + m * K;
    if (is_nibbles(w.kind)) {
      for (int64_t k = 0; k < K; k += 32)
        for (int j = 0; j < 16; ++j) {
          d[k + j] = xm[k + 2 * j];
          d[k + 16 + j] = xm[k + 2 * j + 1];
        }
    } else if (w.kind == DotCodes::E4M3) {  // E4M3 decodes as value / 256: x carries the 256
      for (int64_t k = 0; k < K; ++k) d[k] = xm[k] * 256.0f;
    } else {
      std::memcpy(d, xm, size_t(K) * sizeof(float));
    }
    float* s = xp + M * K + m * sr;
    for (int64_t g = 0; g < sr; ++g) {
      float32x4_t acc = vdupq_n_f32(0.f);
      for (int j = 0; j < w.group; j += 4) acc = vaddq_f32(acc, vld1q_f32(xm + g * w.group + j));
      s[g] = vaddvq_f32(acc);
    }
  }
}

// 16 values widened to int16 (lo: the first 8, hi: the last 8) as 4 vectors of floats, in order.
MTO_INL void widen_s16(int16x8_t lo, int16x8_t hi, float32x4_t* f) {
  f[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)));
  f[1] = vcvtq_f32_s32(vmovl_high_s16(lo));
  f[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)));
  f[3] = vcvtq_f32_s32(vmovl_high_s16(hi));
}

// 16 int8 (uint8: 0..255 fits int16 exactly) values as 4 vectors of floats, in order.
MTO_INL void widen_s8(int8x16_t v, float32x4_t* f) {
  widen_s16(vmovl_s8(vget_low_s8(v)), vmovl_high_s8(v), f);
}
MTO_INL void widen_u8(uint8x16_t v, float32x4_t* f) {
  widen_s16(vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(v))),
            vreinterpretq_s16_u16(vmovl_high_u8(v)), f);
}

// 16 FP8 codes as 4 vectors of floats, in order (E4M3 as value / 256, its NaN code as NaN).
template <DotCodes KIND>
MTO_INL void widen_fp8(uint8x16_t v, float32x4_t* f) {
  uint16x8_t h[2] = {vshll_n_u8(vget_low_u8(v), 8), vshll_high_n_u8(v, 8)};  // code in the top byte
  if constexpr (KIND == DotCodes::E4M3) {  // float16 sign | magnitude << 7
    for (uint16x8_t& b : h)
      b = vandq_u16(vreinterpretq_u16_s16(vshrq_n_s16(vreinterpretq_s16_u16(b), 1)),
                    vdupq_n_u16(0xBF80));
  }
  for (int i = 0; i < 2; ++i) {
    const float16x8_t hf = vreinterpretq_f16_u16(h[i]);
    f[2 * i] = vcvt_f32_f16(vget_low_f16(hf));
    f[2 * i + 1] = vcvt_high_f32_f16(hf);
  }
  // The NaN magnitude 0x7F reads as 1.875: rare, so checked once for the 16 codes.
  if (KIND == DotCodes::E4M3 && vmaxvq_u8(vceqq_u8(vorrq_u8(v, vdupq_n_u8(0x80)), vdupq_n_u8(0xFF)))) {
    for (int i = 0; i < 4; ++i) {
      const uint32x4_t bits = vreinterpretq_u32_f32(f[i]);
      const float32x4_t nan = vreinterpretq_f32_u32(
          vorrq_u32(vandq_u32(bits, vdupq_n_u32(0x80000000u)), vdupq_n_u32(0x7FC00000u)));
      f[i] = vbslq_f32(vceqq_f32(vabsq_f32(f[i]), vdupq_n_f32(1.875f)), nan, f[i]);
    }
  }
}

// Block b's codes (32) of one row as 8 float vectors in x's prepared order, unscaled.
template <DotCodes KIND>
MTO_INL void decode_block(const uint8_t* c, int8x16_t tbl, float32x4_t (&w)[8]) {
  float32x4_t* a = w;
  float32x4_t* b = w + 4;
  if constexpr (KIND == DotCodes::Lut4 || KIND == DotCodes::Uint4) {
    const uint8x16_t v = vld1q_u8(c);
    widen_s8(vqtbl1q_s8(tbl, vandq_u8(v, vdupq_n_u8(0x0F))), a);  // even elements
    widen_s8(vqtbl1q_s8(tbl, vshrq_n_u8(v, 4)), b);                 // odd elements
  } else if constexpr (KIND == DotCodes::Int8) {
    widen_s8(vld1q_s8(reinterpret_cast<const int8_t*>(c)), a);
    widen_s8(vld1q_s8(reinterpret_cast<const int8_t*>(c) + 16), b);
  } else if constexpr (KIND == DotCodes::E4M3 || KIND == DotCodes::E5M2) {
    widen_fp8<KIND>(vld1q_u8(c), a);
    widen_fp8<KIND>(vld1q_u8(c + 16), b);
  } else {
    widen_u8(vld1q_u8(c), a);
    widen_u8(vld1q_u8(c + 16), b);
  }
}

// The scale of block b of a row: MX 2^(e - 127) (NaN for 0xFF) times `unit`; affine the float16
// scale of the block's group.
MTO_INL float block_scale(const DotWeights& w, int64_t row, int64_t b, float unit) {
  if (w.e8m0) return mto_decode_e8m0(w.e8m0[row * w.row_groups + b]) * unit;
  return half_to_float(w.scales[row * w.row_groups + b / (w.group / 32)]);
}

// R rows of codes from row0 against M rows of x (prepared, row stride K; affine sums after them).
template <DotCodes KIND, int R, int M>
void rows_kind(const DotWeights& w, int8x16_t tbl, float unit, int64_t row0, const float* xp,
               const float* xs, int64_t sr, float* y, int64_t ldy) {
  constexpr int64_t kBlockBytes = KIND == DotCodes::Lut4 || KIND == DotCodes::Uint4 ? 16 : 32;
  const int64_t K = w.K, nblocks = K / 32;
  float32x4_t acc[R][M];
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r)
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) acc[r][m] = vdupq_n_f32(0.f);
  for (int64_t b = 0; b < nblocks; ++b) {
    MTO_UNROLL_ALL
    for (int r = 0; r < R; ++r) {
      float32x4_t wv[8];
      decode_block<KIND>(w.codes + (row0 + r) * w.row_bytes + b * kBlockBytes, tbl, wv);
      const float s = block_scale(w, row0 + r, b, unit);
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) {
        const float* xb = xp + m * K + b * 32;
        // Two chains of four multiply-adds, so each waits on half as many.
        float32x4_t p0 = vmulq_f32(wv[0], vld1q_f32(xb));
        float32x4_t p1 = vmulq_f32(wv[1], vld1q_f32(xb + 4));
        MTO_UNROLL_ALL
        for (int j = 2; j < 8; j += 2) {
          p0 = vfmaq_f32(p0, wv[j], vld1q_f32(xb + 4 * j));
          p1 = vfmaq_f32(p1, wv[j + 1], vld1q_f32(xb + 4 * j + 4));
        }
        acc[r][m] = vfmaq_n_f32(acc[r][m], vaddq_f32(p0, p1), s);
      }
    }
  }
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) {
      float sum = vaddvq_f32(acc[r][m]);
      if (is_affine(KIND)) {  // + sum over groups of bias[g] * sum(x[m] over group g)
        const int64_t g0 = (row0 + r) * w.row_groups;
        for (int64_t g = 0; g < sr; ++g) sum += bias_of(w, g0 + g) * xs[m * sr + g];
      }
      y[m * ldy + r] = sum;
    }
  }
}

// 4 consecutive float16 / bfloat16 weights at p as floats.
template <DotCodes KIND>
MTO_INL float32x4_t dense4(const uint8_t* p) {
  const uint16x4_t h = vld1_u16(reinterpret_cast<const uint16_t*>(p));
  if constexpr (KIND == DotCodes::F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
  return vreinterpretq_f32_u32(vshll_n_u16(h, 16));  // bfloat16: the top half of a float32
}

// One float16 / bfloat16 weight as a float (the scalar tail of a row).
template <DotCodes KIND>
MTO_INL float dense1(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return KIND == DotCodes::F16 ? half_to_float(h) : bf16_to_float(h);
}

// R float16 / bfloat16 rows from row0 against M rows of x (row stride K).
template <DotCodes KIND, int R, int M>
void rows_dense(const DotWeights& w, int64_t row0, const float* xp, float* y, int64_t ldy) {
  constexpr int64_t kSize = 2;  // bytes per weight
  const int64_t K = w.K, K16 = K / 16 * 16;
  float32x4_t acc[R][M][2];
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r)
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) acc[r][m][0] = acc[r][m][1] = vdupq_n_f32(0.f);
  for (int64_t k = 0; k < K16; k += 16) {
    MTO_UNROLL_ALL
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = w.codes + (row0 + r) * w.row_bytes + k * kSize;
      float32x4_t wv[4];
      MTO_UNROLL_ALL
      for (int j = 0; j < 4; ++j) wv[j] = dense4<KIND>(p + 4 * j * kSize);
      MTO_UNROLL_ALL
      for (int m = 0; m < M; ++m) {  // two chains per (row, x row)
        const float* xb = xp + m * K + k;
        acc[r][m][0] = vfmaq_f32(acc[r][m][0], wv[0], vld1q_f32(xb));
        acc[r][m][1] = vfmaq_f32(acc[r][m][1], wv[1], vld1q_f32(xb + 4));
        acc[r][m][0] = vfmaq_f32(acc[r][m][0], wv[2], vld1q_f32(xb + 8));
        acc[r][m][1] = vfmaq_f32(acc[r][m][1], wv[3], vld1q_f32(xb + 12));
      }
    }
  }
  MTO_UNROLL_ALL
  for (int r = 0; r < R; ++r) {
    const uint8_t* row = w.codes + (row0 + r) * w.row_bytes;
    MTO_UNROLL_ALL
    for (int m = 0; m < M; ++m) {
      float sum = vaddvq_f32(vaddq_f32(acc[r][m][0], acc[r][m][1]));
      for (int64_t k = K16; k < K; ++k) sum += dense1<KIND>(row + k * kSize) * xp[m * K + k];
      y[m * ldy + r] = sum;
    }
  }
}

template <DotCodes KIND, int M>
void rows_pass(const DotWeights& w, int8x16_t tbl, float unit, int64_t row0, int64_t nrows,
               const float* xp, const float* xs, int64_t sr, float* y, int64_t ldy) {
  constexpr bool kDense = KIND == DotCodes::F16 || KIND == DotCodes::BF16;
  int64_t r = 0;
  for (; r + kRows <= nrows; r += kRows) {
    if constexpr (kDense) rows_dense<KIND, kRows, M>(w, row0 + r, xp, y + r, ldy);
    else rows_kind<KIND, kRows, M>(w, tbl, unit, row0 + r, xp, xs, sr, y + r, ldy);
  }
  for (; r < nrows; ++r) {
    if constexpr (kDense) rows_dense<KIND, 1, M>(w, row0 + r, xp, y + r, ldy);
    else rows_kind<KIND, 1, M>(w, tbl, unit, row0 + r, xp, xs, sr, y + r, ldy);
  }
}

template <DotCodes KIND>
void rows_m(const DotWeights& w, int8x16_t tbl, float unit, int64_t row0, int64_t nrows,
            const float* xp, const float* xs, int64_t sr, int M, float* y, int64_t ldy) {
  switch (M) {
    case 1: return rows_pass<KIND, 1>(w, tbl, unit, row0, nrows, xp, xs, sr, y, ldy);
    case 2: return rows_pass<KIND, 2>(w, tbl, unit, row0, nrows, xp, xs, sr, y, ldy);
    case 3: return rows_pass<KIND, 3>(w, tbl, unit, row0, nrows, xp, xs, sr, y, ldy);
    default: return rows_pass<KIND, 4>(w, tbl, unit, row0, nrows, xp, xs, sr, y, ldy);
  }
}

using RowsFn = void (*)(const DotWeights&, int8x16_t, float, int64_t, int64_t, const float*,
                        const float*, int64_t, int, float*, int64_t);

RowsFn rows_for(DotCodes kind) {
  switch (kind) {
    case DotCodes::Lut4: return rows_m<DotCodes::Lut4>;
    case DotCodes::Uint4: return rows_m<DotCodes::Uint4>;
    case DotCodes::Int8: return rows_m<DotCodes::Int8>;
    case DotCodes::Uint8: return rows_m<DotCodes::Uint8>;
    case DotCodes::E4M3: return rows_m<DotCodes::E4M3>;
    case DotCodes::E5M2: return rows_m<DotCodes::E5M2>;
    case DotCodes::F16: return rows_m<DotCodes::F16>;
    default: return rows_m<DotCodes::BF16>;
  }
}

void rows_neon(const DotWeights& w, int64_t row0, int64_t nrows, const float* xp, int M, float* y,
               int64_t ldy) {
  int8_t q[16] = {};
  float unit = 1.f;  // a power of two the block sums are scaled by besides the block scale
  if (is_nibbles(w.kind)) dot_int8_table(w, q, &unit);
  if (w.kind == DotCodes::Int8) unit = 0.015625f;  // q * 2^-6 (exact)
  const int8x16_t tbl = vld1q_s8(q);
  const int64_t sr = sums_floats(w);
  const float* xs = xp + M * w.K;
  const RowsFn rows = rows_for(w.kind);
  for (int m0 = 0; m0 < M; m0 += kMaxPass) {  // passes of up to kMaxPass rows of x
    const int mp = std::min(kMaxPass, M - m0);
    rows(w, tbl, unit, row0, nrows, xp + m0 * w.K, xs + m0 * sr, sr, mp, y + m0 * ldy, ldy);
  }
}

constexpr DotKernels kNeon{"neon", supported_neon, x_floats_neon, prepare_x_neon, rows_neon};

}  // namespace

const DotKernels* dot_kernels_neon() { return &kNeon; }

}  // namespace mto::kernels

#else

namespace mto::kernels {
const DotKernels* dot_kernels_neon() { return nullptr; }
}  // namespace mto::kernels

#endif
