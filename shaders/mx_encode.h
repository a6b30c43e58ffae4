// OCP MX block quantization of one element, in integer arithmetic only, for the quantize kernels.
// Must produce exactly the codes of the cpu quantizer (native/core/formats.cc mx_quantize_rows):
// the harness compares them bit for bit.
//
// Why integers: the cpu computes x * 2^-e with a float multiply and rounds with float additions.
// A GPU may flush float32 subnormals (inputs and results) and compiles with fast math by default;
// neither changes integer operations. So x * 2^-e is an exponent adjustment on the bits (subnormal
// inputs normalised by hand) and round-to-nearest-even is done on the integer significand.
// Compiles as MSL and as C++.
#ifndef MTO_SHADERS_MX_ENCODE_H
#define MTO_SHADERS_MX_ENCODE_H

#include "mx_formats.h"

// Scale exponent e of a block whose largest magnitude has float32 bits `amax` (finite):
// floor(log2(amax)) - emax clamped to [-127, 127]; scale byte = e + 127. A zero or subnormal
// amax gives floor_log2 = -127 (so an all-zero block gets byte 0), as in the cpu quantizer.
inline int mto_mx_scale_exponent(mto_u32 amax, int emax) {
  const int floor_log2 = amax >= 0x00800000u ? int(amax >> 23) - 127 : -127;
  const int e = floor_log2 - emax;
  return e < -127 ? -127 : (e > 127 ? 127 : e);
}

// Bits of x * 2^k for float32 bits `u` (finite). A result below 2^-126 becomes a signed zero:
// every MX element rounds such a value to zero anyway (their smallest step is 2^-16), which is
// what the cpu's subnormal product encodes to. The caller guarantees no overflow.
inline mto_u32 mto_scale_pow2_bits(mto_u32 u, int k) {
  const mto_u32 sign = u & 0x80000000u;
  mto_u32 man = u & 0x007FFFFFu;
  int exp = int((u >> 23) & 0xFFu);
  if (exp == 0) {
    if (man == 0u) return sign;
    exp = 1;  // subnormal: shift the leading one up to the implicit-bit position
    while (man < 0x00800000u) {
      man <<= 1;
      exp -= 1;
    }
    man &= 0x007FFFFFu;
  }
  const int e = exp + k;
  return e <= 0 ? sign : (sign | (mto_u32(e) << 23) | man);
}

// rint(|v| / 2^q) with ties to even, for float32 magnitude bits `mag` (normal or zero) whose
// quotient stays below 2^31.
inline mto_u32 mto_round_to_step(mto_u32 mag, int q) {
  if (mag == 0u) return 0u;
  const mto_u32 m = (mag & 0x007FFFFFu) | 0x00800000u;  // |v| = m * 2^(exp - 150)
  const int s = q + 150 - int(mag >> 23);                 // quotient = m / 2^s
  if (s <= 0) return m << mto_u32(-s);
  if (s >= 25) return 0u;  // m < 2^24, so the quotient is below 1/2
  const mto_u32 whole = m >> mto_u32(s);
  const mto_u32 rest = m & ((1u << mto_u32(s)) - 1u);
  const mto_u32 half_step = 1u << mto_u32(s - 1);
  return whole + ((rest > half_step || (rest == half_step && (whole & 1u) != 0u)) ? 1u : 0u);
}

// OCP minifloat code (sign included) of float32 bits `u` (finite), EBITS exponent bits, MBITS
// mantissa bits, saturating at magnitude code MAXCODE.
template <int EBITS, int MBITS, int MAXCODE>
inline mto_u32 mto_encode_minifloat(mto_u32 u) {
  const int bias = (1 << (EBITS - 1)) - 1;
  const mto_u32 rebias = mto_u32(127 - bias) << 23;  // float32 exponent minus element exponent
  const int shift = 23 - MBITS;
  const mto_u32 max_bits = (mto_u32(MAXCODE) << shift) + rebias;  // max normal as float32 bits
  const mto_u32 min_normal_bits = (1u << 23) + rebias;            // 2^(1 - bias)
  const mto_u32 sign = (u >> 31) << (EBITS + MBITS);
  const mto_u32 mag = u & 0x7FFFFFFFu;
  if (mag < min_normal_bits) return sign | mto_round_to_step(mag, 1 - bias - MBITS);
  // Re-bias, then round the dropped mantissa bits to nearest even; a carry into the exponent is
  // the next binade, and clamping first keeps the result at or below MAXCODE.
  const mto_u32 a = mag < max_bits ? mag : max_bits;
  const mto_u32 lsb = (a >> shift) & 1u;
  return sign | ((a - rebias + ((1u << (shift - 1)) - 1u) + lsb) >> shift);
}

// Two's complement code of q = rint(|v| / 2^Q) capped at LIMIT, with v's sign; LIMIT_BITS are the
// float32 bits of LIMIT * 2^Q.
template <int BITS, int Q, int LIMIT, mto_u32 LIMIT_BITS>
inline mto_u32 mto_encode_int(mto_u32 u) {
  const mto_u32 mag = u & 0x7FFFFFFFu;
  const mto_u32 q = mag > LIMIT_BITS ? mto_u32(LIMIT) : mto_round_to_step(mag, Q);
  const mto_u32 neg = u >> 31;
  return ((q ^ (0u - neg)) + neg) & ((1u << BITS) - 1u);
}

// Code of the already scaled value (bits of x * 2^-e) for element `elem` (MTO_ELEM_*; a
// compile-time constant in the kernels, so the switch folds away).
inline mto_u32 mto_encode_mx_element(int elem, mto_u32 scaled) {
  switch (elem) {
    case MTO_ELEM_FP8_E4M3: return mto_encode_minifloat<4, 3, 0x7E>(scaled);  // max 448
    case MTO_ELEM_FP8_E5M2: return mto_encode_minifloat<5, 2, 0x7B>(scaled);  // max 57344
    case MTO_ELEM_FP6_E3M2: return mto_encode_minifloat<3, 2, 0x1F>(scaled);  // max 28
    case MTO_ELEM_FP6_E2M3: return mto_encode_minifloat<2, 3, 0x1F>(scaled);  // max 7.5
    case MTO_ELEM_FP4_E2M1: return mto_encode_minifloat<2, 1, 0x7>(scaled);   // max 6
    case MTO_ELEM_INT8: return mto_encode_int<8, -6, 127, 0x3FFE0000u>(scaled);  // 127 * 2^-6
    case MTO_ELEM_INT4: return mto_encode_int<4, -2, 7, 0x3FE00000u>(scaled);    // 7 * 2^-2
    default: return mto_encode_int<2, 0, 1, 0x3F800000u>(scaled);                // 1
  }
}

#endif  // MTO_SHADERS_MX_ENCODE_H
