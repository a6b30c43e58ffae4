// Fused decode-and-dot for few rows of x against quantized (or float16 / bfloat16 / float32)
// weight rows (decode-time linear):
// y[m][n] = sum_k x[m][k] * w[n][k] with every w value decoded in registers, never written out.
// Bound by reading the weights, so the kernels spend as few instructions per code byte as they
// can: x is rearranged once per call into the order in which codes unpack most cheaply (prepare_x),
// several weight rows share each load of x, and the block scale multiplies a partial sum once per
// block (per lane group), not every weight.
//
// Semantics: float32 x, float32 accumulation; each weight is its dequantized value (formats.cc),
// only the order of the sums differs (MX: the exact power-of-two block scale applied to partial
// sums; affine: s * sum(q x) + b * sum(x) per group). A 0xFF (NaN) scale still gives NaN. FP8
// E4M3 codes decode as value / 256 and x carries the 256, except in the AVX512-VBMI kernels,
// which decode them to their exact values through byte tables. Since a block's codes meet x
// before its scale, the unscaled block sums must stay finite: |x| below about 2^114 for E4M3
// (codes up to 448), 2^120 for 4-bit codes; test/native's scale check keeps x far from that.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../core/dtype.h"

namespace mto::kernels {

// How a row's codes decode.
enum class DotCodes : uint8_t {
  Lut4,   // MX 4-bit codes through a 16-entry table (mxfp4, mxint4); element 2j in the low nibble
  Int8,   // MX int8 (value q * 2^-6)
  E4M3,   // MX FP8 E4M3
  E5M2,   // MX FP8 E5M2
  Uint4,  // affine 4-bit: s * q + b, q in 0..15
  Uint8,  // affine 8-bit: s * q + b, q in 0..255
  F32,    // dense float32 rows (no scales; any K)
  F16,    // dense float16 rows
  BF16,   // dense bfloat16 rows
};

// One weight matrix w[N, K]: quantized (K a multiple of 32 and of `group`) or dense (any K).
struct DotWeights {
  DotCodes kind = DotCodes::Int8;
  int group = 32;               // codes per scale (MX: 32; affine: 32, 64 or 128)
  int64_t K = 0;
  const uint8_t* codes = nullptr;
  int64_t row_bytes = 0;        // code bytes per row
  const uint8_t* e8m0 = nullptr;     // MX scales, K / 32 per row
  const uint16_t* scales = nullptr;  // affine float16 scales and biases, K / group per row
  const uint16_t* biases = nullptr;  // null: every bias is centred_bias * its scale (Q4_0 / Q8_0)
  float centred_bias = 0;            // -8 / -128 where biases is null
  int64_t row_groups = 0;       // scales (and biases) per row
  const float* lut = nullptr;   // Lut4: the 16 element values
  bool nan_codes = true;        // E4M3: a code may be NaN (false: the kernels need not look)
};

// An affine group's bias (g indexes the row-major plane): read, or computed for centred biases.
inline float bias_of(const DotWeights& w, int64_t g) {
  return w.biases ? half_to_float(w.biases[g]) : w.centred_bias * half_to_float(w.scales[g]);
}

struct DotKernels {
  const char* name;
  // Whether these kernels take w (a 4-bit table the AVX2 kernels cannot hold as int8: false).
  bool (*supports)(const DotWeights& w);
  // Floats prepare_x writes for M rows of x.
  size_t (*x_floats)(const DotWeights& w, int M);
  // Rearranges x[M][K] (row stride ldx), M in 1..8, into xp for rows().
  void (*prepare_x)(const DotWeights& w, const float* x, int64_t ldx, int M, float* xp);
  // y[m * ldy + r] = dot(x[m], w row row0 + r) for r < nrows, m < M (xp from prepare_x).
  void (*rows)(const DotWeights& w, int64_t row0, int64_t nrows, const float* xp, int M,
               float* y, int64_t ldy);
};

// The kernels for this CPU (capped by METAL_TENSOROPS_CPU_ISA), or null where there are none
// (baseline, non-x86): callers then decode spans and dot them.
const DotKernels* dot_kernels();

// Per ISA (null when not compiled in); dot_kernels() picks one.
const DotKernels* dot_kernels_avx512();
const DotKernels* dot_kernels_avx512_vbmi();  // AVX-512 plus VBMI byte permutes (FP8 E4M3)
const DotKernels* dot_kernels_neon();

// Every FP8 E4M3 value (subnormals and NaN included) is exactly a bfloat16: the high and low
// bytes of the bfloat16 of each 7-bit magnitude (sign clear), for byte-permute decoders (AVX512-
// VBMI: the fused kernels here and decode.h's dequantization). Built from the shared scalar
// decoder, once.
struct E4m3Bf16Bytes {
  alignas(64) uint8_t hi[128];
  alignas(64) uint8_t lo[128];
};
const E4m3Bf16Bytes& e4m3_bf16_bytes();

// A 4-bit row's 16 values as int8 times a power of two `unit` (false when they are not: the
// kernels that look nibbles up as bytes need it). affine4: 0..15, unit 1.
bool dot_int8_table(const DotWeights& w, int8_t (&q)[16], float* unit);
// A 4-bit row's 16 values as bfloat16 bytes, low and high (false when a value is no bfloat16,
// i.e. its float32 bits have a nonzero low half): the AVX2 kernels look nibbles up as those bytes.
// E2M1, int4 quarters and affine4's 0..15 all are.
bool dot_bf16_table(const DotWeights& w, uint8_t (&lo)[16], uint8_t (&hi)[16]);
const DotKernels* dot_kernels_avx2();

// The same kernels with x quantized to int8 (linear's opt-in `activations: 'int8'`, as llama.cpp's
// q8 dot products and onnxruntime's accuracy_level 4): every block of 32 elements of a row of x
// becomes a scale d and 32 int8 codes (quantize_x_block), a weight block's integer codes meet
// them in integer multiply-adds, exact, and the weight block's scale times d scales that sum:
// the result is w . x' (x' = d * q, affine biases included), as if x were x'. prepare_x writes
// the quantized rows (x_floats counts 4-byte words). Formats: affine4, affine8, mxint8, and 4-bit tables of small integers
// times a power of two (mxfp4, mxint4); null where the CPU has none (x86 below AVX2, MSVC builds).
// AVX-512 VNNI where the CPU has it and the level allows AVX-512, else AVX2.
const DotKernels* dot_q8_kernels();
const DotKernels* dot_q8_kernels_avx2();
const DotKernels* dot_q8_kernels_avx512();  // AVX-512 with VNNI (vpdpbusd)
const DotKernels* dot_q8_kernels_neon();

// One block of 32 elements of x as int8: d = max|x| / 127, q[i] = x[i] * (127 / max|x|) rounded
// half to even (float32 arithmetic; float64 when 127 / max|x| overflows float32). An all-zero
// block gives d = 0 and zero codes. x must be finite (callers route other rows elsewhere).
void quantize_x_block(const float* x, int8_t* q, float* d);

}  // namespace mto::kernels
