// Quantized formats: element codecs, the OCP MX block quantizer, MLX-compatible affine quantization
// and dequantization of spans (the one decode path every cpu kernel uses).
//
// Scalar decoding of single codes lives in shaders/mx_formats.h so that MSL kernels and this code
// decode the same bits the same way; this file adds encoders, bulk routines and the quantizers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace mto {

// Element encodings (what one code means before the block scale is applied).
enum class Element : uint8_t {
  FP8_E4M3 = 0, FP8_E5M2 = 1, FP6_E3M2 = 2, FP6_E2M3 = 3, FP4_E2M1 = 4,
  INT8 = 5, INT4 = 6, INT2 = 7, E8M0 = 8,
};

// Public formats (docs/design/API.md table). Values are stable: they cross the addon boundary.
enum class Format : uint8_t {
  MXFP8_E4M3 = 0, MXFP8_E5M2 = 1, MXFP6_E3M2 = 2, MXFP6_E2M3 = 3, MXFP4 = 4,
  MXINT8 = 5, MXINT4 = 6, MXINT2 = 7, AFFINE4 = 8, AFFINE8 = 9,
};

struct FormatInfo {
  const char* name;  // API name: "mxfp8", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4",
                     // "mxint8", "mxint4", "mxint2", "affine4", "affine8"
  Element element;   // element encoding (affine: INT8 for affine8, INT4 for affine4 as unsigned q)
  int bits;          // bits per element code: 8, 6, 4 or 2
  int emax;          // emax of the element for the MX scale rule (unused for affine)
  bool affine;       // float16 scale + bias per group instead of an E8M0 scale per block
};

const FormatInfo& format_info(Format f);
bool parse_format(const std::string& name, Format* out);
bool parse_element(const std::string& name, Element* out);  // "fp8_e4m3", ..., "int2", "e8m0"
bool is_valid_block(Format f, int block);  // MX: 32 only; affine: 32, 64, 128

// Bytes of packed codes for one row of `cols` elements (cols a multiple of the block).
size_t row_code_bytes(Format f, int64_t cols);
// Bytes of scales (and, for affine, of biases) for one row.
size_t row_scale_bytes(Format f, int64_t cols, int block);

// Scalar element codec. encode: round-to-nearest-even, saturating to the element's max normal;
// NaN encodes to the element's NaN code where it has one, else 0. decode: one code to float.
uint8_t encode_element(Element e, float v);
float decode_element(Element e, uint8_t code);

// A read-only view of a quantized [rows, cols] matrix (any leading dims folded into rows).
struct QuantView {
  Format format;
  int block;
  int64_t rows, cols;
  const uint8_t* codes;    // rows * row_code_bytes
  const void* scales;      // MX: uint8 E8M0 per block; affine: float16 bits per group
  const uint16_t* biases;  // affine only: float16 bits per group
  bool fp8_nan_codes = true;  // E4M3: codes may be NaN (magnitude 0x7F); see QTensor
  bool centred_biases = false;  // affine: every bias is -(middle code) * its scale; see QTensor
};

// affine4 / affine8: the code the centred biases of GGUF's Q4_0 / Q8_0 subtract (8, 128): a group
// whose bias is -centre * scale decodes as scale * (q - centre).
inline float affine_centre(Format f) { return f == Format::AFFINE4 ? 8.0f : 128.0f; }

// Writes q[row, k0:k1] as float32 into out (k1 - k0 values). k0 must be a multiple of q.block
// and k1 a multiple of q.block or equal to cols. Table-driven; safe to call from many threads.
void dequantize_span(const QuantView& q, int64_t row, int64_t k0, int64_t k1, float* out);
// Rows row0 .. row0 + n - 1, whole, into out (row stride q.cols): MX rows in one call of the vector
// kernel (their codes and scales are contiguous), so short rows do not pay a call each.
void dequantize_rows(const QuantView& q, int64_t row0, int64_t n, float* out);

// OCP MX quantization of rows x cols float32 values, blocks of 32 along each row.
// codes: rows * row_code_bytes(f, cols) bytes; scales: rows * cols / 32 bytes.
void mx_quantize_rows(Format f, const float* x, int64_t rows, int64_t cols, uint8_t* codes,
                      uint8_t* scales);

// MLX 'affine' quantization (MLX's own rounding), groups of `group` along each row.
// codes: rows * row_code_bytes; scales and biases: rows * cols / group float16 bits each.
void affine_quantize_rows(Format f, int group, const float* x, int64_t rows, int64_t cols,
                          uint8_t* codes, uint16_t* scales, uint16_t* biases);

}  // namespace mto
