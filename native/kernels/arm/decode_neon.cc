// The aarch64 NEON kernels behind decode.h (float16 conversion through FCVT, dequantization
// through TBL byte lookups and FCVTL), compiled wherever GCC or clang targets aarch64 (NEON is
// part of the base architecture). Exactness: decode_shared.h.
#include "../decode_shared.h"

#if defined(MTO_CORE_NEON)
#include <arm_neon.h>

#include "../../../shaders/mx_formats.h"
#endif

namespace mto::kernels {

#if defined(MTO_CORE_NEON)
namespace {

using namespace decode_detail;

// NEON float16 conversion (FCVT: exact widening, RNE narrowing under the default FPCR); vectors
// holding a NaN go to the portable code, which keeps signaling NaNs signaling.
void h2f_neon(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint16x8_t h = vld1q_u16(src + i);
    const float32x4_t a = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h)));
    const float32x4_t b = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h)));
    if (vminvq_u32(vandq_u32(vceqq_f32(a, a), vceqq_f32(b, b))) == 0) {
      h2f_scalar(src + i, dst + i, 8);
      continue;
    }
    vst1q_f32(dst + i, a);
    vst1q_f32(dst + i + 4, b);
  }
  h2f_scalar(src + i, dst + i, n - i);
}

void f2h_neon(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float32x4_t a = vld1q_f32(src + i);
    const float32x4_t b = vld1q_f32(src + i + 4);
    if (vminvq_u32(vandq_u32(vceqq_f32(a, a), vceqq_f32(b, b))) == 0) {
      f2h_scalar(src + i, dst + i, 8);
      continue;
    }
    vst1_u16(dst + i, vreinterpret_u16_f16(vcvt_f16_f32(a)));
    vst1_u16(dst + i + 4, vreinterpret_u16_f16(vcvt_f16_f32(b)));
  }
  f2h_scalar(src + i, dst + i, n - i);
}

// Table lookups: a 16-float table is 64 bytes (four registers for TBL), a 4-float one 16 bytes;
// float k of the output takes bytes 4c..4c+3 of the table for its code c.
inline uint8x16_t tbl(const uint8x16x4_t& t, uint8x16_t i) { return vqtbl4q_u8(t, i); }
inline uint8x16_t tbl(const uint8x16_t& t, uint8x16_t i) { return vqtbl1q_u8(t, i); }

// out[0..16) = table float of codes[0..16) (each code < the table's size).
template <class Table>
inline void lookup16_neon(uint8x16_t codes, const Table& t, float* out) {
  static const uint8_t kSpread[4][16] = {
      {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3},
      {4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7},
      {8, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 10, 11, 11, 11, 11},
      {12, 12, 12, 12, 13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15, 15}};
  static const uint8_t kByte[16] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
  const uint8x16_t c4 = vshlq_n_u8(codes, 2), byte = vld1q_u8(kByte);
  for (int q = 0; q < 4; ++q) {
    const uint8x16_t idx = vorrq_u8(vqtbl1q_u8(c4, vld1q_u8(kSpread[q])), byte);
    vst1q_u8(reinterpret_cast<uint8_t*>(out + 4 * q), tbl(t, idx));
  }
}

// 32 nibble codes (16 bytes at c; element 2j in the low nibble of byte j) through table t.
template <class Table>
inline void nibbles32_neon(const uint8_t* c, const Table& t, float* out) {
  const uint8x16_t b = vld1q_u8(c);
  const uint8x16x2_t z = vzipq_u8(vandq_u8(b, vdupq_n_u8(15)), vshrq_n_u8(b, 4));
  lookup16_neon(z.val[0], t, out);
  lookup16_neon(z.val[1], t, out + 16);
}

// The 16 floats v[0..16) as table bytes.
inline uint8x16x4_t table16(float32x4_t a, float32x4_t b, float32x4_t c, float32x4_t d) {
  return {{vreinterpretq_u8_f32(a), vreinterpretq_u8_f32(b), vreinterpretq_u8_f32(c),
           vreinterpretq_u8_f32(d)}};
}

// 8 codes as float16 bits to floats times `mul` (FCVTL widening is exact).
inline void halves8_neon(uint16x8_t h, float32x4_t mul, float* out) {
  vst1q_f32(out, vmulq_f32(vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h))), mul));
  vst1q_f32(out + 4, vmulq_f32(vcvt_high_f32_f16(vreinterpretq_f16_u16(h)), mul));
}

// The 32 six-bit codes of 24 bytes (4 per 3 bytes, LSB first) as bytes: 3-byte groups
// de-interleaved, the 4 codes of each cut out, interleaved back.
inline uint8x16x2_t fp6_codes_neon(const uint8_t* c) {
  const uint8x8x3_t g = vld3_u8(c);
  const uint8x8_t m63 = vdup_n_u8(63);
  uint8x8x4_t k;
  k.val[0] = vand_u8(g.val[0], m63);
  k.val[1] = vorr_u8(vshr_n_u8(g.val[0], 6), vand_u8(vshl_n_u8(g.val[1], 2), m63));
  k.val[2] = vorr_u8(vshr_n_u8(g.val[1], 4), vand_u8(vshl_n_u8(g.val[2], 4), m63));
  k.val[3] = vshr_n_u8(g.val[2], 2);
  uint8_t codes[32];
  vst4_u8(codes, k);
  return {{vld1q_u8(codes), vld1q_u8(codes + 16)}};
}

void deq_mx_neon(DeqMode mode, const float* lut, const uint8_t* codes, const uint8_t* scales,
                 int64_t nblocks, float* out) {
  const int bytes_per_block = block_bytes(mode);
  const uint32x4_t sign = vdupq_n_u32(0x80000000u);
  for (int64_t blk = 0; blk < nblocks; ++blk, codes += bytes_per_block, out += kMxBlock) {
    const uint32_t sb = scales[blk];
    if (sb == uint32_t(MTO_E8M0_NAN)) {
      const float32x4_t nan = vreinterpretq_f32_u32(vdupq_n_u32(kNaNBits));
      for (int j = 0; j < kMxBlock; j += 4) vst1q_f32(out + j, nan);
      continue;
    }
    const float s = mto_decode_e8m0(sb);
    const float32x4_t vs = vdupq_n_f32(s);
    switch (mode) {
      case DeqMode::Int8: {
        const float32x4_t vs64 = vdupq_n_f32(s * 0.015625f);  // see the file comment
        for (int j = 0; j < kMxBlock; j += 8) {
          const int16x8_t x = vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(codes + j)));
          vst1q_f32(out + j, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(x))), vs64));
          vst1q_f32(out + j + 4, vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(x)), vs64));
        }
        break;
      }
      case DeqMode::E4M3:
      case DeqMode::E5M2: {
        // Codes sign-extended to 16 bits, then float16 bits: E5M2 the code << 8, E4M3
        // sign | magnitude << 7 (the value / 2^8; its NaN magnitude 0x7F reads 1.875).
        const bool e4m3 = mode == DeqMode::E4M3;
        const uint8x16_t b0 = vld1q_u8(codes), b1 = vld1q_u8(codes + 16);
        const uint8x16_t top = vdupq_n_u8(0x80);
        const bool has_nan =
            e4m3 && vmaxvq_u8(vorrq_u8(vceqq_u8(vorrq_u8(b0, top), vdupq_n_u8(0xFF)),
                                       vceqq_u8(vorrq_u8(b1, top), vdupq_n_u8(0xFF)))) != 0;
        // 2^8 folded into the scale where that is exact and no NaN code needs patching.
        const bool fold = !e4m3 || (!has_nan && s < 0x1p119f);
        const float32x4_t mul = e4m3 && fold ? vdupq_n_f32(s * 256.0f) : vs;
        for (int j = 0; j < kMxBlock; j += 8) {
          const uint16x8_t x =
              vreinterpretq_u16_s16(vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(codes + j))));
          if (!e4m3) {
            halves8_neon(vshlq_n_u16(x, 8), vs, out + j);
            continue;
          }
          const uint16x8_t h = vandq_u16(vshlq_n_u16(x, 7), vdupq_n_u16(0xBF80));
          if (fold) {
            halves8_neon(h, mul, out + j);
            continue;
          }
          const float32x4_t f[2] = {vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h))),
                                    vcvt_high_f32_f16(vreinterpretq_f16_u16(h))};
          for (int q = 0; q < 2; ++q) {
            const float32x4_t v = vmulq_f32(vmulq_f32(f[q], vdupq_n_f32(256.0f)), vs);
            const uint32x4_t is_nan = vceqq_f32(vabsq_f32(f[q]), vdupq_n_f32(1.875f));
            const uint32x4_t nan =
                vorrq_u32(vandq_u32(vreinterpretq_u32_f32(f[q]), sign), vdupq_n_u32(kNaNBits));
            vst1q_f32(out + j + 4 * q, vbslq_f32(is_nan, vreinterpretq_f32_u32(nan), v));
          }
        }
        break;
      }
      case DeqMode::E3M2:
      case DeqMode::E2M3: {
        // float16 bits: sign to bit 15, the magnitude placed so the exponent fields line up;
        // times 2^(15 - bias) (exact) makes the value.
        const bool e3m2 = mode == DeqMode::E3M2;
        const float32x4_t rebias = vdupq_n_f32(e3m2 ? 4096.0f : 16384.0f);
        const uint8x16x2_t c = fp6_codes_neon(codes);
        for (int h = 0; h < 2; ++h) {
          const uint16x8_t w[2] = {vmovl_u8(vget_low_u8(c.val[h])), vmovl_high_u8(c.val[h])};
          for (int q = 0; q < 2; ++q) {
            const uint16x8_t sgn = vshlq_n_u16(vandq_u16(w[q], vdupq_n_u16(32)), 10);
            const uint16x8_t mag = vandq_u16(w[q], vdupq_n_u16(31));
            const uint16x8_t bits =
                vorrq_u16(sgn, e3m2 ? vshlq_n_u16(mag, 8) : vshlq_n_u16(mag, 7));
            const float32x4_t f[2] = {vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(bits))),
                                      vcvt_high_f32_f16(vreinterpretq_f16_u16(bits))};
            float* o = out + 16 * h + 8 * q;
            vst1q_f32(o, vmulq_f32(vmulq_f32(f[0], rebias), vs));
            vst1q_f32(o + 4, vmulq_f32(vmulq_f32(f[1], rebias), vs));
          }
        }
        break;
      }
      case DeqMode::Lut4: {
        const float32x4_t t[4] = {vmulq_f32(vld1q_f32(lut), vs), vmulq_f32(vld1q_f32(lut + 4), vs),
                                  vmulq_f32(vld1q_f32(lut + 8), vs),
                                  vmulq_f32(vld1q_f32(lut + 12), vs)};
        nibbles32_neon(codes, table16(t[0], t[1], t[2], t[3]), out);
        break;
      }
      case DeqMode::Lut2: {
        // Byte j holds elements 4j..4j+3 in bits 0-1, 2-3, 4-5, 6-7: each byte spread to 4 lanes,
        // shifted right by 0, 2, 4, 6.
        static const uint8_t kSpread[2][16] = {{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3},
                                               {4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7}};
        static const int8_t kShift[16] = {0, -2, -4, -6, 0, -2, -4, -6,
                                          0, -2, -4, -6, 0, -2, -4, -6};
        const uint8x16_t t = vreinterpretq_u8_f32(vmulq_f32(vld1q_f32(lut), vs));
        const uint8x16_t b = vcombine_u8(vld1_u8(codes), vdup_n_u8(0));
        for (int h = 0; h < 2; ++h) {
          const uint8x16_t spread = vqtbl1q_u8(b, vld1q_u8(kSpread[h]));
          const uint8x16_t c = vandq_u8(vshlq_u8(spread, vld1q_s8(kShift)), vdupq_n_u8(3));
          lookup16_neon(c, t, out + 16 * h);
        }
        break;
      }
    }
  }
}

// float16 bits to float (exact; FCVT keeps a NaN's sign and payload, quieting it, as F16C does).
inline float widen_half(uint16_t h) {
  return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

void deq_affine_neon(int bits, int group, const uint8_t* codes, const uint16_t* scales,
                     const uint16_t* biases, int64_t ngroups, float* out) {
  static const float kIota[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  for (int64_t g = 0; g < ngroups; ++g, out += group) {
    const float32x4_t vs = vdupq_n_f32(widen_half(scales[g]));
    const float32x4_t vb = vdupq_n_f32(widen_half(biases[g]));
    const bool nan_in = nan_group(scales[g], biases[g]);
    // s * q, then + b: two roundings; the product where it is NaN in a NaN group.
    auto affine = [&](float32x4_t q) {
      float32x4_t p = vmulq_f32(q, vs);
      MTO_NO_CONTRACT(p);
      const float32x4_t r = vaddq_f32(p, vb);
      return nan_in ? vbslq_f32(vceqq_f32(p, p), r, p) : r;
    };
    if (bits == 4) {
      const uint8x16x4_t t = table16(affine(vld1q_f32(kIota)), affine(vld1q_f32(kIota + 4)),
                                     affine(vld1q_f32(kIota + 8)), affine(vld1q_f32(kIota + 12)));
      for (int j = 0; j < group; j += 32, codes += 16) nibbles32_neon(codes, t, out + j);
    } else {
      for (int j = 0; j < group; j += 8, codes += 8) {
        const uint16x8_t x = vmovl_u8(vld1_u8(codes));
        vst1q_f32(out + j, affine(vcvtq_f32_u32(vmovl_u16(vget_low_u16(x)))));
        vst1q_f32(out + j + 4, affine(vcvtq_f32_u32(vmovl_high_u16(x))));
      }
    }
  }
}

constexpr CoreKernels kNeon{"neon", h2f_neon, f2h_neon, deq_mx_neon, deq_affine_neon};

}  // namespace

const CoreKernels* core_kernels_neon() { return &kNeon; }
#else
const CoreKernels* core_kernels_neon() { return nullptr; }
#endif

}  // namespace mto::kernels
