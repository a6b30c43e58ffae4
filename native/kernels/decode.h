// Vector kernels for core's conversions (float16 <-> float32) and for dequantize_span, chosen
// once at run time from the CPU: AVX-512 (F + BW) or AVX2 (+ FMA, F16C) on x86-64 with GCC/clang,
// NEON on aarch64; elsewhere, or when METAL_TENSOROPS_CPU_ISA=baseline,
// every entry is null and the portable code in core/dtype.cc / core/formats.cc runs. The
// environment variable (baseline|avx2|avx512, the same switch as the cpu kernels' gemm_isa())
// caps the choice.
//
// Every kernel gives bit-identical results to the portable code: table values times the block
// scale as single multiplies, affine as a multiply then an add (never fused), and NaN inputs to
// the float16 conversions redone by the portable code (hardware quiets signaling NaNs).
#pragma once
#include <cstddef>
#include <cstdint>

namespace mto::kernels {

// How dequantize kernels decode one code before the block scale.
enum class DeqMode : uint8_t {
  Int8,   // MX int8: sign-extend, convert, times scale * 2^-6 (exact for every E8M0 scale)
  E4M3,   // FP8 E4M3 byte codes (built as float16 bits, NaN patched in)
  E5M2,   // FP8 E5M2 byte codes (the top byte of a float16)
  E3M2,   // FP6 codes, 4 per 3 bytes (LSB first): 64-entry table (AVX-512) or float16 bits (AVX2)
  E2M3,   // likewise
  Lut4,   // 4-bit codes, element 2j in the low nibble, 16-entry table
  Lut2,   // 2-bit codes, element 4j in bits 0-1, 4-entry table
};

struct CoreKernels {
  const char* name;  // "avx512vbmi", "avx512", "avx2", "neon", "baseline"
  void (*half_to_float)(const uint16_t* src, float* dst, size_t n);  // null: portable
  void (*float_to_half)(const float* src, uint16_t* dst, size_t n);
  // MX: `nblocks` whole blocks of 32 codes starting at `codes` (the first block's first byte),
  // one E8M0 byte per block in `scales`; out[i] = lut[code i] * 2^(scale - 127), and NaN for a
  // block whose scale byte is 0xFF. `lut` is the element's decode table (256/64/16/4 entries);
  // the Int8 and FP8 kernels build values from the code bits instead (the same floats).
  void (*dequant_mx)(DeqMode mode, const float* lut, const uint8_t* codes, const uint8_t* scales,
                     int64_t nblocks, float* out);
  // Affine: `ngroups` whole groups of `group` (32, 64 or 128) codes of `bits` (4 or 8);
  // out = s * float(q) + b with s, b the float16 scale and bias of the group.
  void (*dequant_affine)(int bits, int group, const uint8_t* codes, const uint16_t* scales,
                         const uint16_t* biases, int64_t ngroups, float* out);
};

// The kernels for this CPU (capped by METAL_TENSOROPS_CPU_ISA), resolved once.
const CoreKernels& core_kernels();

// The kernels of one instruction set (x86/decode_avx.cc, arm/decode_neon.cc), null where this build
// does not compile them; core_kernels() picks among them.
const CoreKernels* core_kernels_avx2();
const CoreKernels* core_kernels_avx512();
const CoreKernels* core_kernels_avx512_vbmi();  // AVX-512 plus VBMI byte permutes (FP8 E4M3)
const CoreKernels* core_kernels_neon();

}  // namespace mto::kernels
