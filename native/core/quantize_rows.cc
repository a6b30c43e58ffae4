// Quantization: the OCP MX block quantizer and MLX-compatible affine quantization, each compiled
// once per instruction set and picked at run time. Rules: API.md "Quantized formats"; golden
// data: ../shared/oracle.
//
// Must not be built with -ffast-math: the quantizers rely on IEEE division, std::rint in the
// default round-to-nearest-even mode and float32 subnormals (E8M0 byte 0 is 2^-127).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "../../shaders/mx_formats.h"
#include "core_simd.h"
#include "dtype.h"
#include "element_encode.h"
#include "error.h"
#include "formats.h"
#include "portable.h"

namespace mto {
namespace {

using namespace element_encode;

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

// OCP MX quantization of every block of `rows` rows, with the element's encoder Enc. Written to
// vectorise (branch-free encoders) and force-inlined into one function per instruction set below.
template <class Enc>
MTO_FORCE_INLINE void mx_quantize_t(const FormatInfo& info, size_t code_row, const float* x,
                                    int64_t rows, int64_t cols, uint8_t* codes, uint8_t* scales) {
  constexpr int kBlock = MTO_MX_BLOCK;
  const int64_t blocks = cols / kBlock;
  uint8_t c[kBlock];
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    uint8_t* cr = codes + size_t(r) * code_row;
    uint8_t* sr = scales + r * blocks;
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = xr + b * kBlock;
      // amax as the largest magnitude bit pattern: monotone for non-negative floats, and NaN
      // and inf sort above every finite value, so one integer max finds them too.
      uint32_t amax = 0;
      for (int i = 0; i < kBlock; ++i) amax = std::max(amax, float_bits(xb[i]) & 0x7FFFFFFFu);

      uint8_t scale_byte;
      if (amax >= 0x7F800000u) {  // NaN or inf: the block is NaN
        scale_byte = uint8_t(MTO_E8M0_NAN);
        std::memset(c, 0, sizeof c);
      } else {
        // floor(log2(amax)) is the unbiased exponent field. A float32 subnormal amax is below
        // 2^-126, so after subtracting emax it is clamped to -127 like any tiny amax; so is an
        // all-zero block, which thus gets scale byte 0 and zero codes (a -0 keeps its sign bit,
        // as x / 2^e does, which keeps quantize(dequantize(q)) == q).
        const int floor_log2 = amax >= 0x00800000u ? int(amax >> 23) - 127 : -127;
        const int e = std::min(127, std::max(-127, floor_log2 - info.emax));
        scale_byte = uint8_t(e + 127);
        // x / 2^e is an exact power-of-two product unless it lands below 2^-126, and anything
        // that small encodes to a signed zero in every element, so one float multiply suffices.
        const float inv = exp2_scale(-e);
        for (int i = 0; i < kBlock; ++i) c[i] = uint8_t(Enc::enc(float_bits(xb[i] * inv)));
      }
      sr[b] = scale_byte;
      pack_codes(info.bits, c, kBlock, cr + size_t(b) * kBlock * size_t(info.bits) / 8);
    }
  }
}

MTO_FORCE_INLINE void mx_quantize_any(Format f, const FormatInfo& info, const float* x,
                                      int64_t rows, int64_t cols, uint8_t* codes,
                                      uint8_t* scales) {
  const size_t row = row_code_bytes(f, cols);
  switch (f) {
    case Format::MXFP8_E4M3: return mx_quantize_t<EncE4M3>(info, row, x, rows, cols, codes, scales);
    case Format::MXFP8_E5M2: return mx_quantize_t<EncE5M2>(info, row, x, rows, cols, codes, scales);
    case Format::MXFP6_E3M2: return mx_quantize_t<EncE3M2>(info, row, x, rows, cols, codes, scales);
    case Format::MXFP6_E2M3: return mx_quantize_t<EncE2M3>(info, row, x, rows, cols, codes, scales);
    case Format::MXFP4: return mx_quantize_t<EncE2M1>(info, row, x, rows, cols, codes, scales);
    case Format::MXINT8: return mx_quantize_t<EncInt8>(info, row, x, rows, cols, codes, scales);
    case Format::MXINT4: return mx_quantize_t<EncInt4>(info, row, x, rows, cols, codes, scales);
    default: return mx_quantize_t<EncInt2>(info, row, x, rows, cols, codes, scales);
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
MTO_FORCE_INLINE void affine_quantize_any(Format f, const FormatInfo& info, int group,
                                          const float* x, int64_t rows, int64_t cols,
                                          uint8_t* codes, uint16_t* scales, uint16_t* biases) {
  const float n_bins = float((1 << info.bits) - 1);
  const float eps = 1e-7f;
  const int64_t groups = cols / group;
  const size_t code_row = row_code_bytes(f, cols);
  uint8_t c[128];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* w = x + r * cols + g * group;
      float w_min = w[0], w_max = w[0];
      for (int i = 1; i < group; ++i) {
        w_min = std::min(w_min, w[i]);
        w_max = std::max(w_max, w[i]);
      }
      const bool neg_edge = std::abs(w_min) > std::abs(w_max);
      float scale = std::max((w_max - w_min) / n_bins, eps);
      scale = neg_edge ? scale : -scale;
      const float edge = neg_edge ? w_min : w_max;
      const float q0 = std::rint(edge / scale);
      float bias = 0.0f;
      if (q0 != 0.0f) {
        scale = edge / q0;
        bias = edge;
      }
      for (int i = 0; i < group; ++i) {
        const float q = std::rint((w[i] - bias) / scale);
        c[i] = uint8_t(q > 0.0f ? std::min(q, n_bins) : 0.0f);  // NaN -> 0 (no UB cast)
      }
      pack_codes(info.bits, c, group, codes + size_t(r) * code_row +
                                          size_t(g) * size_t(group) * size_t(info.bits) / 8);
      scales[r * groups + g] = float_to_half(scale);
      biases[r * groups + g] = float_to_half(bias);
    }
  }
}

// One copy of the quantizers per instruction set: the same code, vectorised by the compiler for
// each (AVX2 rounds with roundps where SSE2 calls rint per element): ~2x faster with AVX-512
// than the baseline build. They have no multiply-add for the compiler to fuse (checked: the
// bytes match the oracle and each other on every path, test/isa.test.ts), so results are
// identical. The path follows core_kernels() (METAL_TENSOROPS_CPU_ISA caps both).
struct QuantizeKernels {
  void (*mx)(Format, const FormatInfo&, const float*, int64_t, int64_t, uint8_t*, uint8_t*);
  void (*affine)(Format, const FormatInfo&, int, const float*, int64_t, int64_t, uint8_t*,
                 uint16_t*, uint16_t*);
};

#define MTO_QUANTIZE_KERNELS(SUFFIX, TARGET)                                                   \
  TARGET void mx_quantize_##SUFFIX(Format f, const FormatInfo& info, const float* x,           \
                                   int64_t rows, int64_t cols, uint8_t* codes,                 \
                                   uint8_t* scales) {                                          \
    mx_quantize_any(f, info, x, rows, cols, codes, scales);                                    \
  }                                                                                            \
  TARGET void affine_quantize_##SUFFIX(Format f, const FormatInfo& info, int group,            \
                                       const float* x, int64_t rows, int64_t cols,             \
                                       uint8_t* codes, uint16_t* scales, uint16_t* biases) {   \
    affine_quantize_any(f, info, group, x, rows, cols, codes, scales, biases);                 \
  }                                                                                            \
  constexpr QuantizeKernels kQuantize_##SUFFIX{mx_quantize_##SUFFIX, affine_quantize_##SUFFIX};

MTO_QUANTIZE_KERNELS(base, )
#if MTO_X86_KERNELS
MTO_QUANTIZE_KERNELS(avx2, __attribute__((target("avx2,f16c"))))
MTO_QUANTIZE_KERNELS(avx512, __attribute__((target("avx512f,avx512bw,avx2,f16c"))))
#endif
#undef MTO_QUANTIZE_KERNELS

const QuantizeKernels& quantize_kernels() {
#if MTO_X86_KERNELS
  const char* isa = simd::core_kernels().name;
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
