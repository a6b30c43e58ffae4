// Quantized formats: the format table, element encoders (the decoders are the shared shader
// helpers), table-driven dequantization (vector kernels from core_simd.h where the CPU has them),
// the OCP MX block quantizer and MLX-compatible affine quantization. Rules: API.md "Quantized
// formats"; golden data: ../shared/oracle.
//
// Must not be built with -ffast-math: the quantizers rely on IEEE division, std::rint in the
// default round-to-nearest-even mode and float32 subnormals (E8M0 byte 0 is 2^-127).
#include "formats.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "../../shaders/mx_formats.h"
#include "core_simd.h"
#include "dtype.h"
#include "error.h"
#include "portable.h"

namespace mto {

// The MSL-visible ids must equal the C++ enums: both cross the host/kernel boundary.
static_assert(MTO_FORMAT_MXFP8_E4M3 == int(Format::MXFP8_E4M3), "format id");
static_assert(MTO_FORMAT_MXFP8_E5M2 == int(Format::MXFP8_E5M2), "format id");
static_assert(MTO_FORMAT_MXFP6_E3M2 == int(Format::MXFP6_E3M2), "format id");
static_assert(MTO_FORMAT_MXFP6_E2M3 == int(Format::MXFP6_E2M3), "format id");
static_assert(MTO_FORMAT_MXFP4 == int(Format::MXFP4), "format id");
static_assert(MTO_FORMAT_MXINT8 == int(Format::MXINT8), "format id");
static_assert(MTO_FORMAT_MXINT4 == int(Format::MXINT4), "format id");
static_assert(MTO_FORMAT_MXINT2 == int(Format::MXINT2), "format id");
static_assert(MTO_FORMAT_AFFINE4 == int(Format::AFFINE4), "format id");
static_assert(MTO_FORMAT_AFFINE8 == int(Format::AFFINE8), "format id");
static_assert(MTO_ELEM_FP8_E4M3 == int(Element::FP8_E4M3), "element id");
static_assert(MTO_ELEM_FP8_E5M2 == int(Element::FP8_E5M2), "element id");
static_assert(MTO_ELEM_FP6_E3M2 == int(Element::FP6_E3M2), "element id");
static_assert(MTO_ELEM_FP6_E2M3 == int(Element::FP6_E2M3), "element id");
static_assert(MTO_ELEM_FP4_E2M1 == int(Element::FP4_E2M1), "element id");
static_assert(MTO_ELEM_INT8 == int(Element::INT8), "element id");
static_assert(MTO_ELEM_INT4 == int(Element::INT4), "element id");
static_assert(MTO_ELEM_INT2 == int(Element::INT2), "element id");
static_assert(MTO_ELEM_E8M0 == int(Element::E8M0), "element id");

namespace {

// Indexed by Format. emax is the exponent of the element's largest normal (0 for the integer
// elements, whose largest magnitude is below 2: 127/64, 7/4, 1).
const FormatInfo kFormats[] = {
    {"mxfp8", Element::FP8_E4M3, 8, 8, false},
    {"mxfp8_e5m2", Element::FP8_E5M2, 8, 15, false},
    {"mxfp6_e3m2", Element::FP6_E3M2, 6, 4, false},
    {"mxfp6_e2m3", Element::FP6_E2M3, 6, 2, false},
    {"mxfp4", Element::FP4_E2M1, 4, 2, false},
    {"mxint8", Element::INT8, 8, 0, false},
    {"mxint4", Element::INT4, 4, 0, false},
    {"mxint2", Element::INT2, 2, 0, false},
    {"affine4", Element::INT4, 4, 0, true},
    {"affine8", Element::INT8, 8, 0, true},
};
constexpr int kNumFormats = int(sizeof(kFormats) / sizeof(kFormats[0]));

const char* const kElementNames[] = {"fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1",
                                     "int8",     "int4",     "int2",     "e8m0"};
constexpr int kNumElements = int(sizeof(kElementNames) / sizeof(kElementNames[0]));

// ---------------------------------------------------------------------------------------------
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
uint32_t encode_e8m0(uint32_t u) {
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return 0xFFu;
  if (a < 0x00400000u) return 0u;  // below 2^-127, incl. zero
  if (a < 0x00800000u) return (a > 0x00600000u) ? 1u : 0u;  // subnormal: 2^-127..2^-126
  uint32_t code = a >> 23;                                  // floor(log2|v|) + 127
  const uint32_t man = a & 0x7FFFFFu;
  if (man > 0x400000u || (man == 0x400000u && (code & 1u))) ++code;
  return std::min(code, 254u);
}

// ---------------------------------------------------------------------------------------------
// Decode tables, built once from the shared scalar decoders so the tables cannot disagree with
// the kernels. Pair/quad tables decode a whole byte of 4-bit/2-bit codes at once.
struct DecodeTables {
  float e4m3[256], e5m2[256], int8[256];
  float e3m2[64], e2m3[64];
  float fp4_pair[256][2], int4_pair[256][2];
  float int2_quad[256][4];
  float fp4[16], int4[16], int2[4];  // single-code tables for the vector kernels

  DecodeTables() {
    for (uint32_t c = 0; c < 16; ++c) {
      fp4[c] = mto_decode_fp4_e2m1(c);
      int4[c] = mto_decode_int4(c);
      if (c < 4) int2[c] = mto_decode_int2(c);
    }
    for (uint32_t c = 0; c < 256; ++c) {
      e4m3[c] = mto_decode_fp8_e4m3(c);
      e5m2[c] = mto_decode_fp8_e5m2(c);
      int8[c] = mto_decode_int8(c);
      if (c < 64) {
        e3m2[c] = mto_decode_fp6_e3m2(c);
        e2m3[c] = mto_decode_fp6_e2m3(c);
      }
      for (uint32_t j = 0; j < 2; ++j) {
        fp4_pair[c][j] = mto_decode_fp4_e2m1(c >> (4 * j));
        int4_pair[c][j] = mto_decode_int4(c >> (4 * j));
      }
      for (uint32_t j = 0; j < 4; ++j) int2_quad[c][j] = mto_decode_int2(c >> (2 * j));
    }
  }
};

const DecodeTables& tables() {
  static const DecodeTables t;  // thread-safe one-time init
  return t;
}

// --- MX dequantization of one block (n values; n is a multiple of 4 except possibly at a ragged
// tail, which is handled element by element). `codes` points at the block's first code byte.
void deq_bytes(const float* lut, const uint8_t* codes, float s, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = lut[codes[i]] * s;
}

void deq_pairs(const float (*lut)[2], const uint8_t* codes, float s, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const float* v = lut[codes[i >> 1]];
    out[i] = v[0] * s;
    out[i + 1] = v[1] * s;
  }
  if (i < n) out[i] = lut[codes[i >> 1]][0] * s;
}

void deq_quads(const float (*lut)[4], const uint8_t* codes, float s, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = lut[codes[i >> 2]][i & 3] * s;
}

void deq_fp6(const float* lut, const uint8_t* codes, float s, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {  // 4 codes in 3 bytes
    const uint8_t* p = codes + (i / 4) * 3;
    out[i] = lut[p[0] & 0x3F] * s;
    out[i + 1] = lut[((p[0] >> 6) | (p[1] << 2)) & 0x3F] * s;
    out[i + 2] = lut[((p[1] >> 4) | (p[2] << 4)) & 0x3F] * s;
    out[i + 3] = lut[p[2] >> 2] * s;
  }
  for (; i < n; ++i) out[i] = lut[mto_code6(codes, uint32_t(i))] * s;
}

void dequantize_mx_block(Format f, const uint8_t* row_codes, int64_t k, int64_t n, float s,
                         float* out) {
  const DecodeTables& t = tables();
  switch (f) {
    case Format::MXFP8_E4M3: return deq_bytes(t.e4m3, row_codes + k, s, n, out);
    case Format::MXFP8_E5M2: return deq_bytes(t.e5m2, row_codes + k, s, n, out);
    case Format::MXINT8: return deq_bytes(t.int8, row_codes + k, s, n, out);
    case Format::MXFP6_E3M2: return deq_fp6(t.e3m2, row_codes + k / 4 * 3, s, n, out);
    case Format::MXFP6_E2M3: return deq_fp6(t.e2m3, row_codes + k / 4 * 3, s, n, out);
    case Format::MXFP4: return deq_pairs(t.fp4_pair, row_codes + k / 2, s, n, out);
    case Format::MXINT4: return deq_pairs(t.int4_pair, row_codes + k / 2, s, n, out);
    case Format::MXINT2: return deq_quads(t.int2_quad, row_codes + k / 4, s, n, out);
    default: break;
  }
}

// --- Affine dequantization of one group: value = s * q + b (q unsigned).
void dequantize_affine_group(Format f, const uint8_t* row_codes, int64_t k, int64_t n, float s,
                             float b, float* out) {
  if (f == Format::AFFINE8) {
    const uint8_t* c = row_codes + k;
    for (int64_t i = 0; i < n; ++i) out[i] = s * float(c[i]) + b;
    return;
  }
  float v[16];  // the group's 16 possible values, then a nibble lookup per element
  for (int q = 0; q < 16; ++q) v[q] = s * float(q) + b;
  const uint8_t* c = row_codes + k / 2;
  int64_t i = 0;
  for (; i + 2 <= n; i += 2) {
    out[i] = v[c[i >> 1] & 0xF];
    out[i + 1] = v[c[i >> 1] >> 4];
  }
  if (i < n) out[i] = v[c[i >> 1] & 0xF];
}

// ---------------------------------------------------------------------------------------------
// Packing of one block of codes (one code per byte in `c`, n a multiple of 4) into `dst`,
// which points at the block's first byte in the row.
void pack_codes(int bits, const uint8_t* c, int n, uint8_t* dst) {
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
MTO_FORCE_INLINE void mx_quantize_t(const FormatInfo& info, const float* x, int64_t rows,
                                    int64_t cols, uint8_t* codes, uint8_t* scales) {
  constexpr int kBlock = MTO_MX_BLOCK;
  const size_t code_row = size_t(cols) * size_t(info.bits) / 8;
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

// The vector kernel's decode mode and table for an MX format.
simd::DeqMode mx_mode(Format f, const float** lut) {
  const DecodeTables& t = tables();
  switch (f) {
    case Format::MXFP8_E4M3: *lut = t.e4m3; return simd::DeqMode::E4M3;
    case Format::MXFP8_E5M2: *lut = t.e5m2; return simd::DeqMode::E5M2;
    case Format::MXINT8: *lut = t.int8; return simd::DeqMode::Int8;
    case Format::MXFP6_E3M2: *lut = t.e3m2; return simd::DeqMode::E3M2;
    case Format::MXFP6_E2M3: *lut = t.e2m3; return simd::DeqMode::E2M3;
    case Format::MXFP4: *lut = t.fp4; return simd::DeqMode::Lut4;
    case Format::MXINT4: *lut = t.int4; return simd::DeqMode::Lut4;
    default: *lut = t.int2; return simd::DeqMode::Lut2;
  }
}

Error format_error(Format f) {
  return Error(code::Format, "unknown quantized format id " + std::to_string(int(f)));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
const FormatInfo& format_info(Format f) {
  const int i = int(f);
  if (i < 0 || i >= kNumFormats) throw format_error(f);
  return kFormats[i];
}

bool parse_format(const std::string& name, Format* out) {
  for (int i = 0; i < kNumFormats; ++i) {
    if (name == kFormats[i].name) {
      *out = Format(i);
      return true;
    }
  }
  return false;
}

bool parse_element(const std::string& name, Element* out) {
  for (int i = 0; i < kNumElements; ++i) {
    if (name == kElementNames[i]) {
      *out = Element(i);
      return true;
    }
  }
  return false;
}

bool is_valid_block(Format f, int block) {
  if (!format_info(f).affine) return block == MTO_MX_BLOCK;
  return block == 32 || block == 64 || block == 128;
}

size_t row_code_bytes(Format f, int64_t cols) {
  return size_t(cols) * size_t(format_info(f).bits) / 8;
}

size_t row_scale_bytes(Format f, int64_t cols, int block) {
  const size_t groups = size_t(cols / block);
  return format_info(f).affine ? groups * sizeof(uint16_t) : groups;
}

uint8_t encode_element(Element e, float v) {
  const uint32_t u = float_bits(v);
  switch (e) {
    case Element::FP8_E4M3: return uint8_t(EncE4M3::enc(u));
    case Element::FP8_E5M2: return uint8_t(EncE5M2::enc(u));
    case Element::FP6_E3M2: return uint8_t(EncE3M2::enc(u));
    case Element::FP6_E2M3: return uint8_t(EncE2M3::enc(u));
    case Element::FP4_E2M1: return uint8_t(EncE2M1::enc(u));
    case Element::INT8: return uint8_t(EncInt8::enc(u));
    case Element::INT4: return uint8_t(EncInt4::enc(u));
    case Element::INT2: return uint8_t(EncInt2::enc(u));
    case Element::E8M0: return uint8_t(encode_e8m0(u));
  }
  return 0;
}

float decode_element(Element e, uint8_t code) { return mto_decode_element(int(e), code); }

void dequantize_span(const QuantView& q, int64_t row, int64_t k0, int64_t k1, float* out) {
  const FormatInfo& info = format_info(q.format);
  const int64_t block = q.block;
  const int64_t groups = q.cols / block;
  const uint8_t* row_codes = q.codes + size_t(row) * (size_t(q.cols) * size_t(info.bits) / 8);
  // Callers walk a row in consecutive spans (gemv_t takes a few rows a chunk at a time): ask for
  // this row's next span of codes now, so it is on its way while this one decodes.
  if (k1 < q.cols) {
    const size_t bits = size_t(info.bits);
    const char* next = reinterpret_cast<const char*>(row_codes) + size_t(k1) * bits / 8;
    const size_t len = size_t(std::min(k1 - k0, q.cols - k1)) * bits / 8;
    for (size_t off = 0; off < len; off += 64) prefetch(next + off);
  }
  // Whole blocks go to the vector kernels where the CPU has them (core_simd.h; bit-identical to
  // the per-block code below, which stays the portable path and handles a ragged last block).
  const simd::CoreKernels& kern = simd::core_kernels();
  const int64_t whole = (k1 - k0) / block;
  if (whole > 0 && info.affine && kern.dequant_affine && block % 32 == 0) {
    const int64_t g0 = row * groups + k0 / block;
    kern.dequant_affine(info.bits, int(block), row_codes + size_t(k0) * size_t(info.bits) / 8,
                        static_cast<const uint16_t*>(q.scales) + g0, q.biases + g0, whole, out);
    out += whole * block;
    k0 += whole * block;
  } else if (whole > 0 && !info.affine && kern.dequant_mx && block == 32) {
    const float* lut = nullptr;
    const simd::DeqMode mode = mx_mode(q.format, &lut);
    kern.dequant_mx(mode, lut, row_codes + size_t(k0) * size_t(info.bits) / 8,
                    static_cast<const uint8_t*>(q.scales) + row * groups + k0 / block, whole, out);
    out += whole * block;
    k0 += whole * block;
  }
  for (int64_t k = k0; k < k1; k += block) {
    const int64_t n = std::min(block, k1 - k);
    const int64_t g = row * groups + k / block;
    float* o = out + (k - k0);
    if (info.affine) {
      const float s = half_to_float(static_cast<const uint16_t*>(q.scales)[g]);
      const float b = half_to_float(q.biases[g]);
      dequantize_affine_group(q.format, row_codes, k, n, s, b, o);
      continue;
    }
    const uint8_t sb = static_cast<const uint8_t*>(q.scales)[g];
    if (sb == MTO_E8M0_NAN) {  // NaN scale: the whole block is NaN whatever its codes
      std::fill(o, o + n, mto_decode_e8m0(sb));
      continue;
    }
    dequantize_mx_block(q.format, row_codes, k, n, mto_decode_e8m0(sb), o);
  }
}

void dequantize_rows(const QuantView& q, int64_t row0, int64_t n, float* out) {
  const FormatInfo& info = format_info(q.format);
  const simd::CoreKernels& kern = simd::core_kernels();
  if (!info.affine && kern.dequant_mx && q.block == 32 && q.cols % 32 == 0) {
    const int64_t groups = q.cols / 32;
    const float* lut = nullptr;
    const simd::DeqMode mode = mx_mode(q.format, &lut);
    kern.dequant_mx(mode, lut,
                    q.codes + size_t(row0) * (size_t(q.cols) * size_t(info.bits) / 8),
                    static_cast<const uint8_t*>(q.scales) + row0 * groups, n * groups, out);
    return;
  }
  for (int64_t r = 0; r < n; ++r) dequantize_span(q, row0 + r, 0, q.cols, out + r * q.cols);
}

namespace {

MTO_FORCE_INLINE void mx_quantize_any(Format f, const FormatInfo& info, const float* x,
                                      int64_t rows, int64_t cols, uint8_t* codes,
                                      uint8_t* scales) {
  switch (f) {
    case Format::MXFP8_E4M3: return mx_quantize_t<EncE4M3>(info, x, rows, cols, codes, scales);
    case Format::MXFP8_E5M2: return mx_quantize_t<EncE5M2>(info, x, rows, cols, codes, scales);
    case Format::MXFP6_E3M2: return mx_quantize_t<EncE3M2>(info, x, rows, cols, codes, scales);
    case Format::MXFP6_E2M3: return mx_quantize_t<EncE2M3>(info, x, rows, cols, codes, scales);
    case Format::MXFP4: return mx_quantize_t<EncE2M1>(info, x, rows, cols, codes, scales);
    case Format::MXINT8: return mx_quantize_t<EncInt8>(info, x, rows, cols, codes, scales);
    case Format::MXINT4: return mx_quantize_t<EncInt4>(info, x, rows, cols, codes, scales);
    default: return mx_quantize_t<EncInt2>(info, x, rows, cols, codes, scales);
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
