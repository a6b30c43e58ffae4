// Quantization: the OCP MX block quantizer and MLX-compatible affine quantization (declared in
// core/formats.h), each compiled once per instruction set and picked at run time. Rules: API.md
// "Quantized formats"; golden data: ../shared/oracle.
//
// Must not be built with -ffast-math: the quantizers rely on IEEE division, std::rint in the
// default round-to-nearest-even mode (also behind the 2^23 additions that round) and float32
// subnormals (E8M0 byte 0 is 2^-127).
#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"  // vectors by value in force-inlined helpers: lanes.h
#endif

#include "../../../shaders/mx_formats.h"
#include "../../core/dtype.h"
#include "../../core/element_encode.h"
#include "../../core/error.h"
#include "../../core/formats.h"
#include "../../core/portable.h"
#include "../decode.h"

namespace mto {
namespace {

using namespace element_encode;
using lanes::F32;
using lanes::U32;

// Packing of one block of codes (one code per byte in `c`, n a multiple of 4) into `dst`,
// which points at the block's first byte in the row. Inlined into each instruction set's kernel:
// called out of line, GCC 12 left the AVX kernels' upper register halves dirty across the call
// (no vzeroupper), and on Intel cores this baseline code's SSE moves then ran with the AVX-SSE
// transition penalty: 8-bit quantization (whose packing is a 32-byte SSE copy) took ~4x as long
// on a Xeon (model 207: 112 -> 26 ms for 4096 x 4096 to mxfp8 on one thread). AMD cores have no
// such penalty.
MTO_FORCE_INLINE void pack_codes(int bits, const uint8_t* c, int n, uint8_t* dst) {
  switch (bits) {
    case 8:
      std::memcpy(dst, c, size_t(n));
      break;
    case 6:  // LSB-first bit stream: 4 codes -> 3 bytes
      for (int i = 0; i < n; i += 4, dst += 3) {
        dst[0] = uint8_t(c[i] | (c[i + 1] << 6));
        dst[1] = uint8_t((c[i + 1] >> 2) | (c[i + 2] << 4));
        dst[2] = uint8_t((c[i + 2] >> 4) | (c[i + 3] << 2));
      }
      break;
    case 4:  // element 2j in the low nibble
      for (int i = 0; i < n; i += 2) dst[i / 2] = uint8_t(c[i] | (c[i + 1] << 4));
      break;
    case 2:  // element 4j in bits 0-1
      for (int i = 0; i < n; i += 4)
        dst[i / 4] = uint8_t(c[i] | (c[i + 1] << 2) | (c[i + 2] << 4) | (c[i + 3] << 6));
      break;
    default:
      break;
  }
}

// 2^k as float for -127 <= k <= 127 (2^-127 is the float32 subnormal 0x00400000).
inline float exp2_scale(int k) { return k >= -126 ? mto_pow2(k) : bits_float(0x00400000u); }

// Stores a block of BITS-bit codes, W per vector, packed at `dst` (the block's first byte).
template <int BITS, int W, int kVecs>
MTO_FORCE_INLINE void store_block(const U32<W> (&c)[kVecs], uint8_t* dst) {
  if constexpr (BITS == 8) {
    for (int j = 0; j < kVecs; ++j) lanes::store_bytes<W>(c[j], dst + j * W);
  } else if constexpr (BITS == 4 && W > 1) {
    for (int j = 0; j < kVecs; j += 2) lanes::store_nibbles<W>(c[j], c[j + 1], dst + j * W / 2);
  } else {  // 6- and 2-bit codes (rare formats), or one lane at a time: packed from bytes
    uint8_t unpacked[kVecs * W];
    for (int j = 0; j < kVecs; ++j) lanes::store_bytes<W>(c[j], unpacked + j * W);
    pack_codes(BITS, unpacked, kVecs * W, dst);
  }
}

// OCP MX quantization of every block of `rows` rows with the element's encoder Enc, W lanes at a
// time, force-inlined into one function per instruction set below. A block's scale comes from
// the exponent field of its largest magnitude (amax): the exponents of 4 blocks are found
// together, one byte each in every lane, and one byte-wise max across the lanes gives all 4.
template <class Enc, int W>
MTO_FORCE_INLINE void mx_quantize_t(const FormatInfo& info, size_t code_row, const float* x,
                                    int64_t rows, int64_t cols, uint8_t* codes, uint8_t* scales) {
  constexpr int kBlock = MTO_MX_BLOCK, kVecs = kBlock / W, kTogether = 4;
  constexpr size_t kBlockBytes = size_t(kBlock) * Enc::kBits / 8;
  const uint32_t emax = uint32_t(info.emax);  // a local: the byte stores could alias `info`
  const int64_t blocks = cols / kBlock;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    uint8_t* cr = codes + size_t(r) * code_row;
    uint8_t* sr = scales + r * blocks;
    for (int64_t b0 = 0; b0 < blocks; b0 += kTogether) {
      const int nb = int(std::min<int64_t>(kTogether, blocks - b0));
      // Magnitude bits are monotone in the magnitude, and NaN and inf sort above every finite
      // value: the largest one's exponent field (its bits >> 23) is 255 for a block holding a NaN
      // or an inf, else floor(log2(amax)) + 127, or 0 for a subnormal or zero amax.
      U32<W> exponents = lanes::splat<W>(0);
      for (int k = 0; k < nb; ++k) {
        U32<W> m = lanes::load_u<W>(xr + (b0 + k) * kBlock) & 0x7FFFFFFFu;
        for (int j = 1; j < kVecs; ++j)
          m = lanes::max_i32<W>(m, lanes::load_u<W>(xr + (b0 + k) * kBlock + j * W) & 0x7FFFFFFFu);
        exponents |= (m >> 23) << (8 * k);
      }
      const uint32_t fields = lanes::hmax_u8<W>(exponents);
      for (int k = 0; k < nb; ++k) {
        const int64_t b = b0 + k;
        const float* xb = xr + b * kBlock;
        const uint32_t field = (fields >> (8 * k)) & 0xFFu;
        U32<W> c[kVecs];
        if (field == 0xFFu) {  // NaN or inf: the block is NaN, its codes zero
          sr[b] = uint8_t(MTO_E8M0_NAN);
          for (int j = 0; j < kVecs; ++j) c[j] = lanes::splat<W>(0);
        } else {
          // The scale 2^e, e = clamp(floor(log2(amax)) - emax, -127, 127), as its E8M0 byte
          // e + 127 = max(field - emax, 0): a subnormal amax is below 2^-126 and clamps to -127
          // like any tiny amax; so does an all-zero block, which thus gets scale byte 0 and zero
          // codes (a -0 keeps its sign bit, as x / 2^e does: quantize(dequantize(q)) == q).
          const uint32_t byte = field > emax ? field - emax : 0u;
          sr[b] = uint8_t(byte);
          // x / 2^e is an exact power-of-two product unless it lands below 2^-126, and anything
          // that small encodes to a signed zero in every element, so one multiply suffices. No
          // element is NaN here, and none becomes inf (|x| / 2^e < 2^(emax + 1)).
          const float inv = exp2_scale(127 - int(byte));
          for (int j = 0; j < kVecs; ++j) {
            const F32<W> xs = lanes::load_f<W>(xb + j * W) * inv;
            c[j] = Enc::template finite<W>(lanes::as_u<W>(xs));
          }
        }
        store_block<Enc::kBits, W>(c, cr + size_t(b) * kBlockBytes);
      }
    }
  }
}

template <int W>
MTO_FORCE_INLINE void mx_quantize_any(Format f, const FormatInfo& info, const float* x,
                                      int64_t rows, int64_t cols, uint8_t* codes,
                                      uint8_t* scales) {
  const size_t row = row_code_bytes(f, cols);
  switch (f) {
    case Format::MXFP8_E4M3:
      return mx_quantize_t<EncE4M3, W>(info, row, x, rows, cols, codes, scales);
    case Format::MXFP8_E5M2:
      return mx_quantize_t<EncE5M2, W>(info, row, x, rows, cols, codes, scales);
    case Format::MXFP6_E3M2:
      return mx_quantize_t<EncE3M2, W>(info, row, x, rows, cols, codes, scales);
    case Format::MXFP6_E2M3:
      return mx_quantize_t<EncE2M3, W>(info, row, x, rows, cols, codes, scales);
    case Format::MXFP4: return mx_quantize_t<EncE2M1, W>(info, row, x, rows, cols, codes, scales);
    case Format::MXINT8: return mx_quantize_t<EncInt8, W>(info, row, x, rows, cols, codes, scales);
    case Format::MXINT4: return mx_quantize_t<EncInt4, W>(info, row, x, rows, cols, codes, scales);
    default: return mx_quantize_t<EncInt2, W>(info, row, x, rows, cols, codes, scales);
  }
}

// MLX 'affine' quantization, following the rule of ml-explore/mlx
// mlx/backend/cpu/quantized.cpp `quantize` (the same rule as the fallback of `affine_quantize` in
// mlx/ops.cpp): per group, w_min/w_max; scale = max((w_max - w_min) / (2^bits - 1), 1e-7), signed
// toward the extreme of larger magnitude (`edge`); if edge / scale rounds (rint) to a nonzero q0
// the scale is snapped to edge / q0 and the bias is edge, so the edge (and zero) are exact;
// q = clamp(rint((w - bias) / scale), 0, 2^bits - 1). As in MLX, the codes come from the float32
// scale and bias, which are then stored rounded to float16 (MLX stores them in the input dtype).
// MLX's Metal kernel (kernels/quantized.h `affine_quantize`) differs in corner cases (round half
// away from zero, w_max starting at 0); we follow the cpu rule, which is the documented one.
// One rule of ours on top of MLX's, the one the MX formats have (their block gets the NaN scale
// byte 0xFF): a group holding a NaN or an infinity gets a NaN scale and bias (float16 0x7E00) and
// zero codes, so it decodes to NaN (MLX's rule turned it into finite values: an inf became the
// group's bound, a NaN whatever the rounding gave); so does a group whose scale or bias float16
// cannot hold. W lanes at a time: per group, the min / max
// reductions, then the codes; the scale and bias come from the same scalar code either way.
template <int BITS, int W>
MTO_FORCE_INLINE void affine_quantize_t(int group, size_t code_row, const float* x, int64_t rows,
                                        int64_t cols, uint8_t* codes, uint16_t* scales,
                                        uint16_t* biases) {
  constexpr int kBlock = MTO_MX_BLOCK, kVecs = kBlock / W;  // codes are packed 32 at a time
  constexpr float kBins = float((1 << BITS) - 1);
  constexpr float kEps = 1e-7f;
  constexpr float kRound = 8388608.0f;  // 2^23: (t + 2^23) - 2^23 is rint(t) for 0 <= t < 2^23
  constexpr uint16_t kHalfNaN = 0x7E00;
  const int64_t groups = cols / group;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* w = x + r * cols + g * group;
      F32<W> lo = lanes::load_f<W>(w), hi = lo;
      U32<W> mag = lanes::as_u<W>(lo) & 0x7FFFFFFFu;
      for (int i = W; i < group; i += W) {
        const F32<W> v = lanes::load_f<W>(w + i);
        lo = lanes::min_f<W>(lo, v);
        hi = lanes::max_f<W>(hi, v);
        mag = lanes::max_i32<W>(mag, lanes::as_u<W>(v) & 0x7FFFFFFFu);
      }
      uint8_t* group_codes = codes + size_t(r) * code_row + size_t(g * group) * BITS / 8;
      auto nan_group = [&] {
        std::memset(group_codes, 0, size_t(group) * BITS / 8);
        scales[r * groups + g] = biases[r * groups + g] = kHalfNaN;
      };
      if (lanes::hmax_i32<W>(mag) >= 0x7F800000u) {  // a NaN or an infinity
        nan_group();
        continue;
      }
      const float w_min = lanes::hminmax_f<W, false>(lo), w_max = lanes::hminmax_f<W, true>(hi);
      const bool neg_edge = std::abs(w_min) > std::abs(w_max);
      float scale = std::max((w_max - w_min) / kBins, kEps);
      scale = neg_edge ? scale : -scale;
      const float edge = neg_edge ? w_min : w_max;
      const float q0 = std::rint(edge / scale);
      float bias = 0.0f;
      if (q0 != 0.0f) {
        scale = edge / q0;
        bias = edge;
      }
      // q = rint((w - bias) / scale) clamped to [0, kBins]: clamping after the 2^23 rounding gives
      // the same codes (anything at or above 2^23 clamps to kBins; NaN and negatives to 0).
      for (int i = 0; i < group; i += kBlock) {
        U32<W> c[kVecs];
        for (int j = 0; j < kVecs; ++j) {
          const F32<W> t = (lanes::load_f<W>(w + i + j * W) - bias) / scale;
          const F32<W> q = (t + kRound) - kRound;
          c[j] = lanes::to_u32<W>(
              q > 0.0f ? lanes::min_f<W>(q, lanes::splat_f<W>(kBins)) : lanes::splat_f<W>(0.0f));
        }
        store_block<BITS, W>(c, group_codes + size_t(i) * BITS / 8);
      }
      const uint16_t scale16 = float_to_half(scale), bias16 = float_to_half(bias);
      // A group whose range float16 cannot hold (scale or bias past 65504) has no faithful
      // encoding either: it decodes to NaN rather than to values from an infinite scale.
      if ((scale16 & 0x7C00) == 0x7C00 || (bias16 & 0x7C00) == 0x7C00) {
        nan_group();
        continue;
      }
      scales[r * groups + g] = scale16;
      biases[r * groups + g] = bias16;
    }
  }
}

template <int W>
MTO_FORCE_INLINE void affine_quantize_any(Format f, int group, const float* x, int64_t rows,
                                          int64_t cols, uint8_t* codes, uint16_t* scales,
                                          uint16_t* biases) {
  const size_t row = row_code_bytes(f, cols);
  if (f == Format::AFFINE8) {
    affine_quantize_t<8, W>(group, row, x, rows, cols, codes, scales, biases);
  } else {
    affine_quantize_t<4, W>(group, row, x, rows, cols, codes, scales, biases);
  }
}

// One copy of the quantizers per instruction set: the same code, on 16 lanes for AVX-512, 8 for
// AVX2, 4 for the baseline build (SSE2, NEON) and 1 where there are no vector types. They have
// no multiply-add for the compiler to fuse (checked: the bytes match the oracle and each other on
// every path, test/isa.test.ts), so results are identical. The path follows decode.h's
// core_kernels() (METAL_TENSOROPS_CPU_ISA caps both).
struct QuantizeKernels {
  void (*mx)(Format, const FormatInfo&, const float*, int64_t, int64_t, uint8_t*, uint8_t*);
  void (*affine)(Format, const FormatInfo&, int, const float*, int64_t, int64_t, uint8_t*,
                 uint16_t*, uint16_t*);
};

#define MTO_QUANTIZE_KERNELS(SUFFIX, TARGET, W)                                                \
  TARGET void mx_quantize_##SUFFIX(Format f, const FormatInfo& info, const float* x,           \
                                   int64_t rows, int64_t cols, uint8_t* codes,                 \
                                   uint8_t* scales) {                                          \
    mx_quantize_any<W>(f, info, x, rows, cols, codes, scales);                                 \
  }                                                                                            \
  TARGET void affine_quantize_##SUFFIX(Format f, const FormatInfo&, int group,                  \
                                       const float* x, int64_t rows, int64_t cols,             \
                                       uint8_t* codes, uint16_t* scales, uint16_t* biases) {   \
    affine_quantize_any<W>(f, group, x, rows, cols, codes, scales, biases);                   \
  }                                                                                            \
  constexpr QuantizeKernels kQuantize_##SUFFIX{mx_quantize_##SUFFIX, affine_quantize_##SUFFIX};

MTO_QUANTIZE_KERNELS(base, , lanes::width(4))
#if MTO_X86_KERNELS
MTO_QUANTIZE_KERNELS(avx2, __attribute__((target("avx2,f16c"))), lanes::width(8))
MTO_QUANTIZE_KERNELS(avx512, __attribute__((target("avx512f,avx512bw,avx2,f16c"))),
                     lanes::width(16))
#endif
#undef MTO_QUANTIZE_KERNELS

const QuantizeKernels& quantize_kernels() {
#if MTO_X86_KERNELS
  const char* isa = kernels::core_kernels().name;
  if (!std::strncmp(isa, "avx512", 6)) return kQuantize_avx512;  // avx512, avx512vbmi
  if (!std::strcmp(isa, "avx2")) return kQuantize_avx2;
#endif
  return kQuantize_base;
}

}  // namespace

void mx_quantize_rows(Format f, const float* x, int64_t rows, int64_t cols, uint8_t* codes,
                      uint8_t* scales) {
  const FormatInfo& info = format_info(f);
  if (info.affine) throw Error(code::Format, std::string(info.name) + " is not an MX format");
  quantize_kernels().mx(f, info, x, rows, cols, codes, scales);
}

void affine_quantize_rows(Format f, int group, const float* x, int64_t rows, int64_t cols,
                          uint8_t* codes, uint16_t* scales, uint16_t* biases) {
  const FormatInfo& info = format_info(f);
  if (!info.affine) throw Error(code::Format, std::string(info.name) + " is not affine");
  if (!is_valid_block(f, group)) {
    throw Error(code::Format, "affine group must be 32, 64 or 128, got " + std::to_string(group));
  }
  quantize_kernels().affine(f, info, group, x, rows, cols, codes, scales, biases);
}

}  // namespace mto
