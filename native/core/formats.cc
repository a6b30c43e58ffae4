// Quantized formats: the format table, element encoding and decoding (encoders:
// element_encode.h; decoders: the shared shader helpers) and table-driven dequantization (vector
// kernels from kernels/decode.h where the CPU has them). The quantizers:
// kernels/portable/quantize_rows.cc. Rules: docs/design/API.md "Quantized formats"; golden data:
// test/oracle.
#include "formats.h"

#include <algorithm>
#include <cstring>

#include "../../shaders/mx_formats.h"
#include "../kernels/decode.h"
#include "dtype.h"
#include "element_encode.h"
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

// --- Affine dequantization of one group: value = s * q + b (q unsigned). GCC fuses this into one
// FMA on arm64 (not on x86-64): the same value, as s * q is exact (an 11-bit s times an 8-bit q);
// only a group whose s and b are both NaN differs (the FMA returns b's NaN, the vector kernels
// and x86-64 the product's).
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

// The vector kernel's decode mode and table for an MX format.
kernels::DeqMode mx_mode(Format f, const float** lut) {
  const DecodeTables& t = tables();
  switch (f) {
    case Format::MXFP8_E4M3: *lut = t.e4m3; return kernels::DeqMode::E4M3;
    case Format::MXFP8_E5M2: *lut = t.e5m2; return kernels::DeqMode::E5M2;
    case Format::MXINT8: *lut = t.int8; return kernels::DeqMode::Int8;
    case Format::MXFP6_E3M2: *lut = t.e3m2; return kernels::DeqMode::E3M2;
    case Format::MXFP6_E2M3: *lut = t.e2m3; return kernels::DeqMode::E2M3;
    case Format::MXFP4: *lut = t.fp4; return kernels::DeqMode::Lut4;
    case Format::MXINT4: *lut = t.int4; return kernels::DeqMode::Lut4;
    default: *lut = t.int2; return kernels::DeqMode::Lut2;
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
  using namespace element_encode;
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
  // Whole blocks go to the vector kernels where the CPU has them (kernels/decode.h; bit-identical
  // to the per-block code below, which stays the portable path and handles a ragged last block).
  const kernels::CoreKernels& kern = kernels::core_kernels();
  const int64_t whole = (k1 - k0) / block;
  if (whole > 0 && info.affine && kern.dequant_affine && block % 32 == 0) {
    const int64_t g0 = row * groups + k0 / block;
    kern.dequant_affine(info.bits, int(block), row_codes + size_t(k0) * size_t(info.bits) / 8,
                        static_cast<const uint16_t*>(q.scales) + g0, q.biases + g0, whole, out);
    out += whole * block;
    k0 += whole * block;
  } else if (whole > 0 && !info.affine && kern.dequant_mx && block == 32) {
    const float* lut = nullptr;
    const kernels::DeqMode mode = mx_mode(q.format, &lut);
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
  const kernels::CoreKernels& kern = kernels::core_kernels();
  if (!info.affine && kern.dequant_mx && q.block == 32 && q.cols % 32 == 0) {
    const int64_t groups = q.cols / 32;
    const float* lut = nullptr;
    const kernels::DeqMode mode = mx_mode(q.format, &lut);
    kern.dequant_mx(mode, lut,
                    q.codes + size_t(row0) * (size_t(q.cols) * size_t(info.bits) / 8),
                    static_cast<const uint8_t*>(q.scales) + row0 * groups, n * groups, out);
    return;
  }
  for (int64_t r = 0; r < n; ++r) dequantize_span(q, row0 + r, 0, q.cols, out + r * q.cols);
}

}  // namespace mto
