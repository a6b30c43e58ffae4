// Scalar decoding of quantized element codes and E8M0 scales, shared by the MSL kernels and the
// C++ cpu backend so that both read the bits the same way (docs/design/API.md "Quantized formats").
//
// This header compiles as C++17 and as Metal Shading Language (C++14 based: no standard library,
// no exceptions). Values are built from bit operations and exact power-of-two products, never
// pow()/exp2(), so they are exact, identical on every backend and cheap inside a kernel.
//
// The packed-row helpers (mto_code4/2/6) are templates over the pointer type so a kernel can pass
// `device`, `constant` or `threadgroup` pointers, and C++ a plain `const uint8_t*`.
#ifndef MTO_SHADERS_MX_FORMATS_H
#define MTO_SHADERS_MX_FORMATS_H

#if defined(__METAL_VERSION__)
#include <metal_stdlib>
// Program-scope constants must live in the constant address space in MSL.
#define MTO_CONSTANT constant
typedef uchar mto_u8;
typedef uint mto_u32;
inline float mto_as_float(mto_u32 bits) { return as_type<float>(bits); }
inline mto_u32 mto_as_uint(float f) { return as_type<uint>(f); }
#else
#include <cstdint>
#include <cstring>
#define MTO_CONSTANT
typedef std::uint8_t mto_u8;
typedef std::uint32_t mto_u32;
inline float mto_as_float(mto_u32 bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline mto_u32 mto_as_uint(float f) {
  mto_u32 u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
#endif

// ---- Ids. They equal the values of mto::Format / mto::Element in native/core/formats.h (which
// static_asserts the match), so a kernel can be specialised on the id the host passes.
MTO_CONSTANT constexpr int MTO_FORMAT_MXFP8_E4M3 = 0;
MTO_CONSTANT constexpr int MTO_FORMAT_MXFP8_E5M2 = 1;
MTO_CONSTANT constexpr int MTO_FORMAT_MXFP6_E3M2 = 2;
MTO_CONSTANT constexpr int MTO_FORMAT_MXFP6_E2M3 = 3;
MTO_CONSTANT constexpr int MTO_FORMAT_MXFP4 = 4;
MTO_CONSTANT constexpr int MTO_FORMAT_MXINT8 = 5;
MTO_CONSTANT constexpr int MTO_FORMAT_MXINT4 = 6;
MTO_CONSTANT constexpr int MTO_FORMAT_MXINT2 = 7;
MTO_CONSTANT constexpr int MTO_FORMAT_AFFINE4 = 8;
MTO_CONSTANT constexpr int MTO_FORMAT_AFFINE8 = 9;

MTO_CONSTANT constexpr int MTO_ELEM_FP8_E4M3 = 0;
MTO_CONSTANT constexpr int MTO_ELEM_FP8_E5M2 = 1;
MTO_CONSTANT constexpr int MTO_ELEM_FP6_E3M2 = 2;
MTO_CONSTANT constexpr int MTO_ELEM_FP6_E2M3 = 3;
MTO_CONSTANT constexpr int MTO_ELEM_FP4_E2M1 = 4;
MTO_CONSTANT constexpr int MTO_ELEM_INT8 = 5;
MTO_CONSTANT constexpr int MTO_ELEM_INT4 = 6;
MTO_CONSTANT constexpr int MTO_ELEM_INT2 = 7;
MTO_CONSTANT constexpr int MTO_ELEM_E8M0 = 8;

// ---- What a kernel specialised on a format id needs to know about it, one row per format and
// one per element encoding (mx_dequant.h and mx_stage.h read them through named accessors). The
// format rows mirror native/core/formats.cc's table, and the harness driver checks that they agree
// for every id (table/format_traits) and that every code of each element lies in its range
// (table/element_range). C++14 constexpr functions: a constant id gives constant fields.
struct mto_format_row {
  int bits;     // bits per code
  bool affine;  // a float16 scale and bias per group, not an E8M0 scale per block of 32
  int element;  // MTO_ELEM_*: the MX element; affine formats: the integer element of their width
};
constexpr mto_format_row mto_format_table(int f) {
  switch (f) {
    case MTO_FORMAT_MXFP8_E4M3: return mto_format_row{8, false, MTO_ELEM_FP8_E4M3};
    case MTO_FORMAT_MXFP8_E5M2: return mto_format_row{8, false, MTO_ELEM_FP8_E5M2};
    case MTO_FORMAT_MXFP6_E3M2: return mto_format_row{6, false, MTO_ELEM_FP6_E3M2};
    case MTO_FORMAT_MXFP6_E2M3: return mto_format_row{6, false, MTO_ELEM_FP6_E2M3};
    case MTO_FORMAT_MXFP4: return mto_format_row{4, false, MTO_ELEM_FP4_E2M1};
    case MTO_FORMAT_MXINT8: return mto_format_row{8, false, MTO_ELEM_INT8};
    case MTO_FORMAT_MXINT4: return mto_format_row{4, false, MTO_ELEM_INT4};
    case MTO_FORMAT_MXINT2: return mto_format_row{2, false, MTO_ELEM_INT2};
    case MTO_FORMAT_AFFINE4: return mto_format_row{4, true, MTO_ELEM_INT4};
    default: return mto_format_row{8, true, MTO_ELEM_INT8};  // MTO_FORMAT_AFFINE8
  }
}
// An element's magnitudes: every nonzero one is a multiple of 2^lsb_exp, the smallest, and all are
// below 2^top_exp (448, 57344, 28, 7.5, 6; the integers' 2); emax is the exponent of its largest
// normal (the OCP MX scale rule; the integers' is 0).
struct mto_element_row {
  int emax, lsb_exp, top_exp;
};
constexpr mto_element_row mto_element_table(int elem) {
  switch (elem) {
    case MTO_ELEM_FP8_E4M3: return mto_element_row{8, -9, 9};
    case MTO_ELEM_FP8_E5M2: return mto_element_row{15, -16, 16};
    case MTO_ELEM_FP6_E3M2: return mto_element_row{4, -4, 5};
    case MTO_ELEM_FP6_E2M3: return mto_element_row{2, -3, 3};
    case MTO_ELEM_FP4_E2M1: return mto_element_row{2, -1, 3};
    case MTO_ELEM_INT8: return mto_element_row{0, -6, 2};
    case MTO_ELEM_INT4: return mto_element_row{0, -2, 2};
    default: return mto_element_row{0, 0, 2};  // MTO_ELEM_INT2
  }
}

// MX block size (OCP MX v1.0): one E8M0 scale per 32 elements along the last axis.
MTO_CONSTANT constexpr int MTO_MX_BLOCK = 32;
// E8M0 byte meaning "NaN scale": the whole block decodes to NaN.
MTO_CONSTANT constexpr int MTO_E8M0_NAN = 0xFF;

// 2^k as float for a normal exponent (-126 <= k <= 127), built from bits.
inline float mto_pow2(int k) { return mto_as_float(mto_u32(k + 127) << 23); }

// ---- E8M0 scale: 2^(b-127). Byte 0 is 2^-127, a float32 subnormal (bits 0x00400000, exact),
// and 0xFF is NaN; neither falls out of the shift, so both are selected explicitly.
inline float mto_decode_e8m0(mto_u32 b) {
  b &= 0xFFu;
  mto_u32 bits = b << 23;
  bits = (b == 0u) ? 0x00400000u : bits;
  bits = (b == 0xFFu) ? 0x7FC00000u : bits;
  return mto_as_float(bits);
}

// ---- OCP minifloats: EBITS exponent bits, MBITS mantissa bits, bias 2^(EBITS-1)-1, sign on top.
// Normal codes become float32 by re-biasing the exponent and left-aligning the mantissa.
// Subnormal codes are man * 2^(1-bias-MBITS): an exact product of a small integer and a normal
// power of two, so no float32 subnormal is involved (GPU denormal flushing cannot change it).
// `top_exp_is_special` selects IEEE-style inf/NaN for the all-ones exponent (E5M2 only);
// E4M3's single NaN pattern is patched in by its wrapper; FP6/FP4 have no specials.
template <int EBITS, int MBITS, bool TOP_EXP_IS_SPECIAL>
inline float mto_decode_minifloat(mto_u32 code) {
  const mto_u32 exp_mask = (1u << EBITS) - 1u;
  const mto_u32 bias = (1u << (EBITS - 1)) - 1u;
  const mto_u32 sign = ((code >> (EBITS + MBITS)) & 1u) << 31;
  const mto_u32 exp = (code >> MBITS) & exp_mask;
  const mto_u32 man = code & ((1u << MBITS) - 1u);

  mto_u32 fexp = exp + (127u - bias);
  if (TOP_EXP_IS_SPECIAL) fexp = (exp == exp_mask) ? 255u : fexp;
  const float normal = mto_as_float((fexp << 23) | (man << (23 - MBITS)));
  const float subnormal = float(man) * mto_pow2(1 - int(bias) - MBITS);
  const float mag = (exp == 0u) ? subnormal : normal;
  return mto_as_float(mto_as_uint(mag) | sign);
}

// FP8 E4M3 (OCP "fn"): no infinities; S.1111.111 is NaN; max normal 448.
inline float mto_decode_fp8_e4m3(mto_u32 code) {
  const float v = mto_decode_minifloat<4, 3, false>(code);
  return ((code & 0x7Fu) == 0x7Fu) ? mto_as_float(0x7FC00000u | ((code & 0x80u) << 24)) : v;
}
// FP8 E5M2: IEEE-like (inf and NaN at exponent 31); max normal 57344.
inline float mto_decode_fp8_e5m2(mto_u32 code) { return mto_decode_minifloat<5, 2, true>(code); }
// FP6 E3M2: no specials; max normal 28.
inline float mto_decode_fp6_e3m2(mto_u32 code) { return mto_decode_minifloat<3, 2, false>(code); }
// FP6 E2M3: no specials; max normal 7.5.
inline float mto_decode_fp6_e2m3(mto_u32 code) { return mto_decode_minifloat<2, 3, false>(code); }
// FP4 E2M1: no specials; values 0, .5, 1, 1.5, 2, 3, 4, 6.
inline float mto_decode_fp4_e2m1(mto_u32 code) { return mto_decode_minifloat<2, 1, false>(code); }

// ---- MX integers (two's complement codes; sign extension done arithmetically, not by shifts
// of signed values, so it is well defined in both languages).
// int8: value q * 2^-6.
inline float mto_decode_int8(mto_u32 code) {
  const int q = int(code & 0xFFu) - int((code & 0x80u) << 1);
  return float(q) * 0.015625f;
}
// int4: 4-bit q, value q * 2^-2.
inline float mto_decode_int4(mto_u32 code) {
  const int q = int(code & 0xFu) - int((code & 0x8u) << 1);
  return float(q) * 0.25f;
}
// int2: 2-bit q, value q.
inline float mto_decode_int2(mto_u32 code) {
  const int q = int(code & 0x3u) - int((code & 0x2u) << 1);
  return float(q);
}

// Decodes one code of element `elem` (an MTO_ELEM_* id). Meant for code specialised on a
// compile-time id, where the switch folds away.
inline float mto_decode_element(int elem, mto_u32 code) {
  switch (elem) {
    case MTO_ELEM_FP8_E4M3: return mto_decode_fp8_e4m3(code);
    case MTO_ELEM_FP8_E5M2: return mto_decode_fp8_e5m2(code);
    case MTO_ELEM_FP6_E3M2: return mto_decode_fp6_e3m2(code);
    case MTO_ELEM_FP6_E2M3: return mto_decode_fp6_e2m3(code);
    case MTO_ELEM_FP4_E2M1: return mto_decode_fp4_e2m1(code);
    case MTO_ELEM_INT8: return mto_decode_int8(code);
    case MTO_ELEM_INT4: return mto_decode_int4(code);
    case MTO_ELEM_INT2: return mto_decode_int2(code);
    default: return mto_decode_e8m0(code);
  }
}

// ---- Code extraction from a packed row (docs/design/API.md "Packing"); `i` indexes the row.
// 4-bit: element 2j in the low nibble of byte j, element 2j+1 in the high nibble.
template <typename P>
inline mto_u32 mto_code4(P row, mto_u32 i) {
  return (mto_u32(row[i >> 1]) >> ((i & 1u) << 2)) & 0xFu;
}
// 2-bit: element 4j in bits 0-1 of byte j, then bits 2-3, 4-5, 6-7.
template <typename P>
inline mto_u32 mto_code2(P row, mto_u32 i) {
  return (mto_u32(row[i >> 2]) >> ((i & 3u) << 1)) & 0x3u;
}
// 6-bit: a contiguous LSB-first bit stream (element i at bits 6i..6i+5; 4 codes per 3 bytes).
// The next byte is read only when the code straddles it, so the last code of a row never
// touches the byte after the row.
template <typename P>
inline mto_u32 mto_code6(P row, mto_u32 i) {
  const mto_u32 bit = i * 6u;
  const mto_u32 byte = bit >> 3;
  const mto_u32 shift = bit & 7u;
  const mto_u32 lo = mto_u32(row[byte]);
  const mto_u32 hi = (shift > 2u) ? mto_u32(row[byte + 1u]) : 0u;
  return ((lo | (hi << 8)) >> shift) & 0x3Fu;
}

#endif  // MTO_SHADERS_MX_FORMATS_H
