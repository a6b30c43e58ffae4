// What the vector kernels behind decode.h share (x86/decode_avx.cc, arm/decode_neon.cc): which
// instruction sets this build compiles, the portable fallbacks and the block layout.
//
// Exactness (every path gives the portable code's bits):
// - MX values are table[code] * scale, one IEEE multiply per element, as in core/formats.cc; a
//   16/64-entry table is multiplied by the scale once per block (the same products). MX int8 is
//   float(q) * (scale * 2^-6): scale >= 2^-127, so scale * 2^-6 >= 2^-133 is an exact power of
//   two and the product is the one rounding of q * 2^-6 * scale, as table[q] * scale is.
// - Affine is s * float(q) and then + b, two roundings; MTO_NO_CONTRACT keeps GCC from fusing
//   them into an FMA (it contracts vector intrinsics under its default -ffp-contract=fast).
// - float16 conversion in hardware is exact for every finite value and RNE on the way down, but
//   it quiets signaling NaNs; a vector that holds any NaN is redone by the portable code.
#pragma once
#include <cstddef>
#include <cstdint>

#include "decode.h"
#include "../core/dtype.h"
#include "../core/portable.h"

#if MTO_X86_KERNELS
#define MTO_CORE_X86 1
#elif defined(__aarch64__) && MTO_GNU_EXTENSIONS && !defined(_MSC_VER)
#define MTO_CORE_NEON 1
#endif

#if defined(MTO_CORE_X86) || defined(MTO_CORE_NEON)
namespace mto::kernels::decode_detail {

// Portable fallbacks for the odd elements (NaN vectors, tails).
inline void h2f_scalar(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = half_to_float(src[i]);
}
inline void f2h_scalar(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = float_to_half(src[i]);
}

constexpr int kMxBlock = 32;

inline int block_bytes(DeqMode mode) {
  switch (mode) {
    case DeqMode::Int8: case DeqMode::E4M3: case DeqMode::E5M2: return 32;
    case DeqMode::E3M2: case DeqMode::E2M3: return 24;
    case DeqMode::Lut4: return 16;
    default: return 8;
  }
}
constexpr uint32_t kNaNBits = 0x7FC00000u;  // mto_decode_e8m0(0xFF)

// An empty asm that "modifies" v: the product must be materialised, so it cannot be fused with
// the add that follows (GCC contracts vector intrinsics: NEON's are plain vector operators).
#if defined(MTO_CORE_X86)
#define MTO_NO_CONTRACT(v) __asm__("" : "+v"(v))
#else
#define MTO_NO_CONTRACT(v) __asm__("" : "+w"(v))
#endif

// Affine groups whose scale or bias is inf/NaN: when both s * q and b are NaN, the portable loop
// (as GCC compiles it for x86-64) returns the product's NaN, while a vector add returns b's; such
// groups select the product explicitly wherever it is NaN.
inline bool nan_group(uint16_t s, uint16_t b) {
  return (s & 0x7C00u) == 0x7C00u || (b & 0x7C00u) == 0x7C00u;
}

}  // namespace mto::kernels::decode_detail
#endif
