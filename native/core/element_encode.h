// Element encoders (float32 -> element code) shared by the quantizers (quantize_rows.cc) and
// encode_element (formats.cc). The decoders are the shared shader helpers (mx_formats.h).
#pragma once
#include <algorithm>
#include <cstdint>

#include "dtype.h"  // float_bits, bits_float

namespace mto::element_encode {

// Element encoders, branch-free so the per-block loop vectorises (quantization can run on every
// activation). Saturation works on the magnitude: the max normal is on the element's grid and
// rounding is monotone, so clamping before rounding equals rounding then saturating, and it also
// maps inf to the max normal.

inline bool is_nan_bits(uint32_t u) { return int32_t(u & 0x7FFFFFFFu) > 0x7F800000; }

// c ? a : b with masks. Plain ?: on values computed by float arithmetic stays a branch (GCC
// will not if-convert possibly-trapping FP ops), which blocks vectorisation of the block loop.
inline uint32_t select(bool c, uint32_t a, uint32_t b) {
  const uint32_t m = 0u - uint32_t(c);
  return (a & m) | (b & ~m);
}

// rint(|x| / 2^Q) for float32 magnitude bits `a` with |x| < 2^(Q+23). Adding 2^(Q+23) puts the
// 2^Q step at the last mantissa place of the sum, so the FPU's round-to-nearest-even addition
// does the rounding; the mantissa difference is the count. (|x| below 2^-126 -- even if the FPU
// treats it as zero -- rounds to 0 either way, since every step used here is far larger.)
template <int Q>
inline uint32_t round_to_step(uint32_t a) {
  constexpr uint32_t kMagic = uint32_t(127 + Q + 23) << 23;
  return float_bits(bits_float(a) + bits_float(kMagic)) - kMagic;
}

// OCP minifloat with EBITS/MBITS (bias 2^(EBITS-1)-1), saturating at magnitude code MAXCODE.
// Returns the full code, sign included; NaN is the caller's business.
template <int EBITS, int MBITS, uint32_t MAXCODE>
inline uint32_t encode_minifloat(uint32_t u) {
  constexpr int32_t kBias = (1 << (EBITS - 1)) - 1;
  constexpr int32_t kRebias = (127 - kBias) << 23;  // float32 exponent minus element exponent
  constexpr int kShift = 23 - MBITS;
  constexpr int32_t kMaxBits = int32_t(MAXCODE << kShift) + kRebias;  // max normal, f32 bits
  constexpr int32_t kMinNormalBits = (1 << 23) + kRebias;            // 2^(1-bias), f32 bits
  const uint32_t sign = (u >> 31) << (EBITS + MBITS);
  const uint32_t mag = u & 0x7FFFFFFFu;
  // Subnormal range: a multiple of the smallest subnormal 2^(1-bias-MBITS); the count 2^MBITS
  // (rounding up out of the range) is exactly the min normal code. Computed from the unclamped
  // magnitude and before any comparison so no branch is needed around the float addition.
  const uint32_t sub = round_to_step<1 - kBias - MBITS>(mag);
  // Normal range: re-bias, then round the dropped mantissa bits to nearest even; a carry into
  // the exponent is the correct next binade. Magnitudes are compared as int32 (they are below
  // 2^31): SSE2 has signed compares only, so this keeps the block loop vectorisable.
  const int32_t a = std::min(int32_t(mag), kMaxBits);
  const int32_t normal = (a - kRebias + ((1 << (kShift - 1)) - 1) + ((a >> kShift) & 1)) >> kShift;
  return sign | select(int32_t(mag) >= kMinNormalBits, uint32_t(normal), sub);
}

// Two's complement integer element of BITS bits: q = rint(|x| / 2^Q) capped at LIMIT, signed.
template <int BITS, int Q, uint32_t LIMIT>
inline uint32_t encode_int(uint32_t u) {
  // LIMIT * 2^Q as float32 bits (LIMIT < 2^8, so its float is exact).
  constexpr int32_t kLimitBits = LIMIT == 1 ? (127 + Q) << 23
                               : LIMIT == 7 ? ((129 + Q) << 23) | 0x600000
                                            : ((133 + Q) << 23) | 0x7E0000;  // 127
  static_assert(LIMIT == 1 || LIMIT == 7 || LIMIT == 127, "limit");
  const uint32_t mag = u & 0x7FFFFFFFu;
  // Valid below 2^(Q+23); anything above the limit is replaced by LIMIT just after.
  const uint32_t q_raw = round_to_step<Q>(mag);
  const uint32_t q = select(int32_t(mag) > kLimitBits, LIMIT, q_raw);
  const uint32_t neg = u >> 31;
  return ((q ^ (0u - neg)) + neg) & ((1u << BITS) - 1u);  // negate when the sign bit is set
}

// One encoder per element, for the templates below: NaN -> the element's NaN code, or 0 where
// it has none (API.md), everything else rounded and saturated.
template <uint32_t NAN_CODE, uint32_t (*ENCODE)(uint32_t)>
struct Encoder {
  static uint32_t enc(uint32_t u) { return select(is_nan_bits(u), NAN_CODE, ENCODE(u)); }
};
using EncE4M3 = Encoder<0x7Fu, encode_minifloat<4, 3, 0x7E>>;  // max 448
using EncE5M2 = Encoder<0x7Eu, encode_minifloat<5, 2, 0x7B>>;  // max 57344
using EncE3M2 = Encoder<0u, encode_minifloat<3, 2, 0x1F>>;     // max 28
using EncE2M3 = Encoder<0u, encode_minifloat<2, 3, 0x1F>>;     // max 7.5
using EncE2M1 = Encoder<0u, encode_minifloat<2, 1, 0x7>>;      // max 6
using EncInt8 = Encoder<0u, encode_int<8, -6, 127>>;            // q * 2^-6, q in [-127, 127]
using EncInt4 = Encoder<0u, encode_int<4, -2, 7>>;              // q * 2^-2, q in [-7, 7]
using EncInt2 = Encoder<0u, encode_int<2, 0, 1>>;               // q, q in [-1, 1]

// E8M0 (unsigned power of two): the nearest 2^k to |v|, ties to the even code; non-finite ->
// 0xFF; zero and anything below 2^-127 -> 0 (the smallest scale); above 2^127 -> 254.
inline uint32_t encode_e8m0(uint32_t u) {
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return 0xFFu;
  if (a < 0x00400000u) return 0u;  // below 2^-127, incl. zero
  if (a < 0x00800000u) return (a > 0x00600000u) ? 1u : 0u;  // subnormal: 2^-127..2^-126
  uint32_t code = a >> 23;                                  // floor(log2|v|) + 127
  const uint32_t man = a & 0x7FFFFFu;
  if (man > 0x400000u || (man == 0x400000u && (code & 1u))) ++code;
  return std::min(code, 254u);
}

}  // namespace mto::element_encode
