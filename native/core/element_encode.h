// Element encoders (float32 -> element code) shared by the quantizers
// (kernels/portable/quantize_rows.cc) and encode_element (formats.cc). The decoders are the shared
// shader helpers (mx_formats.h).
#pragma once
#include <algorithm>
#include <cstdint>

#include "dtype.h"  // float_bits, bits_float
#include "lanes.h"
#include "portable.h"

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // vectors by value in force-inlined helpers: lanes.h
#endif

namespace mto::element_encode {

// Element encoders, branch-free and written once for one value and for W lanes (lanes.h): the
// quantizers run them on whole vectors of a block. Saturation works on the magnitude: the max
// normal is on the element's grid and rounding is monotone, so clamping before rounding equals
// rounding then saturating, and it also maps inf to the max normal.

using lanes::U32;

// rint(|x| / 2^Q) for float32 magnitude bits `a` with |x| < 2^(Q+23). Adding 2^(Q+23) puts the
// 2^Q step at the last mantissa place of the sum, so the FPU's round-to-nearest-even addition
// does the rounding; the mantissa difference is the count. (|x| below 2^-126 -- even if the FPU
// treats it as zero -- rounds to 0 either way, since every step used here is far larger.)
template <int W, int Q>
MTO_FORCE_INLINE U32<W> round_to_step(const U32<W>& a) {
  constexpr uint32_t kMagic = uint32_t(127 + Q + 23) << 23;
  return lanes::as_u<W>(lanes::as_f<W>(a) + bits_float(kMagic)) - kMagic;
}

// OCP minifloat with EBITS/MBITS (bias 2^(EBITS-1)-1), saturating at magnitude code MAXCODE.
// Returns the full code, sign included, of a value that is not NaN.
template <int W, int EBITS, int MBITS, uint32_t MAXCODE>
MTO_FORCE_INLINE U32<W> encode_minifloat(const U32<W>& u) {
  constexpr uint32_t kBias = (1u << (EBITS - 1)) - 1;
  constexpr uint32_t kRebias = (127 - kBias) << 23;  // float32 exponent minus element exponent
  constexpr int kShift = 23 - MBITS;
  constexpr uint32_t kMaxBits = (MAXCODE << kShift) + kRebias;  // max normal, f32 bits
  constexpr uint32_t kMinNormalBits = (1u << 23) + kRebias;     // 2^(1-bias), f32 bits
  const U32<W> sign = (u >> 31) << (EBITS + MBITS);
  const U32<W> mag = u & 0x7FFFFFFFu;
  // Subnormal range: a multiple of the smallest subnormal 2^(1-bias-MBITS); the count 2^MBITS
  // (rounding up out of the range) is exactly the min normal code. Computed from the unclamped
  // magnitude so that no branch is needed around the float addition.
  const U32<W> sub = round_to_step<W, 1 - int(kBias) - MBITS>(mag);
  // Normal range: re-bias, then round the dropped mantissa bits to nearest even; a carry into
  // the exponent is the correct next binade. Magnitudes are below 2^31: int32 compares.
  const U32<W> a = lanes::min_i32<W>(mag, lanes::splat<W>(kMaxBits));
  const U32<W> normal = (a - kRebias + ((1u << (kShift - 1)) - 1) + ((a >> kShift) & 1u)) >> kShift;
  return sign | lanes::if_gt_i32<W>(lanes::splat<W>(kMinNormalBits), mag, sub, normal);
}

// Two's complement integer element of BITS bits: q = rint(|x| / 2^Q) capped at LIMIT, signed.
template <int W, int BITS, int Q, uint32_t LIMIT>
MTO_FORCE_INLINE U32<W> encode_int(const U32<W>& u) {
  // LIMIT * 2^Q as float32 bits (LIMIT < 2^8, so its float is exact).
  constexpr uint32_t kLimitBits = LIMIT == 1 ? uint32_t(127 + Q) << 23
                                : LIMIT == 7 ? (uint32_t(129 + Q) << 23) | 0x600000u
                                             : (uint32_t(133 + Q) << 23) | 0x7E0000u;  // 127
  static_assert(LIMIT == 1 || LIMIT == 7 || LIMIT == 127, "limit");
  const U32<W> mag = u & 0x7FFFFFFFu;
  // Valid below 2^(Q+23); anything above the limit is replaced by LIMIT just after.
  const U32<W> q_raw = round_to_step<W, Q>(mag);
  const U32<W> q = lanes::if_gt_i32<W>(mag, lanes::splat<W>(kLimitBits), lanes::splat<W>(LIMIT),
                                       q_raw);
  const U32<W> neg = u >> 31;
  return ((q ^ (0u - neg)) + neg) & ((1u << BITS) - 1u);  // negate when the sign bit is set
}

inline bool is_nan_bits(uint32_t u) { return int32_t(u & 0x7FFFFFFFu) > 0x7F800000; }

// One encoder per element: `finite` for values that are not NaN (W lanes), `enc` for any one value
// (NaN -> the element's NaN code, or 0 where it has none: docs/design/API.md).
template <int EBITS, int MBITS, uint32_t MAXCODE, uint32_t NAN_CODE>
struct Minifloat {
  static constexpr int kBits = 1 + EBITS + MBITS;
  template <int W> static MTO_FORCE_INLINE U32<W> finite(const U32<W>& u) {
    return encode_minifloat<W, EBITS, MBITS, MAXCODE>(u);
  }
  static uint32_t enc(uint32_t u) { return is_nan_bits(u) ? NAN_CODE : finite<1>(u); }
};
template <int BITS, int Q, uint32_t LIMIT>
struct Integer {
  static constexpr int kBits = BITS;
  template <int W> static MTO_FORCE_INLINE U32<W> finite(const U32<W>& u) {
    return encode_int<W, BITS, Q, LIMIT>(u);
  }
  static uint32_t enc(uint32_t u) { return is_nan_bits(u) ? 0u : finite<1>(u); }
};
using EncE4M3 = Minifloat<4, 3, 0x7E, 0x7F>;  // max 448
using EncE5M2 = Minifloat<5, 2, 0x7B, 0x7E>;  // max 57344
using EncE3M2 = Minifloat<3, 2, 0x1F, 0>;     // max 28
using EncE2M3 = Minifloat<2, 3, 0x1F, 0>;     // max 7.5
using EncE2M1 = Minifloat<2, 1, 0x7, 0>;      // max 6
using EncInt8 = Integer<8, -6, 127>;          // q * 2^-6, q in [-127, 127]
using EncInt4 = Integer<4, -2, 7>;            // q * 2^-2, q in [-7, 7]
using EncInt2 = Integer<2, 0, 1>;             // q, q in [-1, 1]

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

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
