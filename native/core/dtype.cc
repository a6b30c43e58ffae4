// Dense dtypes: names, and float16/bfloat16 <-> float32 conversion done with integer bit
// manipulation (no F16C or other ISA requirement, identical on every platform). The conversions
// are written as selects rather than branches so the bulk loops can be vectorised; where the CPU
// has F16C / AVX-512 / NEON the bulk float16 loops run kernels/decode.h's kernels instead (same
// bits).
#include "dtype.h"

#include "../kernels/decode.h"

namespace mto {

namespace {

// float16 bits -> float32, exact for every input (NaN payloads kept, shifted into place).
inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t em = uint32_t(h & 0x7FFFu);  // exponent and mantissa
  // Normal: move the fields into float position and re-bias the exponent by 127 - 15 = 112.
  // Inf/NaN (exponent 31) must land on exponent 255, i.e. another 112 on top.
  uint32_t bits = (em << 13) + (112u << 23);
  bits = (em >= 0x7C00u) ? bits + (112u << 23) : bits;
  // Zero/subnormal: em * 2^-24, an exact float product (em < 2^10).
  const float sub = float(em) * 5.9604644775390625e-08f;
  bits = (em < 0x0400u) ? float_bits(sub) : bits;
  return bits_float(bits | sign);
}

// float32 -> float16 bits: round to nearest even, overflow to inf, subnormals exact, NaN stays
// NaN with its top payload bits (a payload that would vanish becomes the quiet bit).
inline uint16_t float_to_half_bits(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7FFFFFFFu;
  // Normal result (|f| >= 2^-14): re-bias, then round the 13 dropped bits to nearest even; a
  // carry into the exponent is the correct next binade. (Wraps harmlessly when not selected.)
  const uint32_t normal = (a - (112u << 23) + 0xFFFu + ((a >> 13) & 1u)) >> 13;
  // Subnormal result: adding 0.5 (whose ulp is 2^-24, the half subnormal step) makes the FPU
  // do the round-to-nearest-even; the low bits of the sum are then the half code.
  const uint32_t sub = float_bits(bits_float(a) + 0.5f) - 0x3F000000u;
  uint32_t h = (a < 0x38800000u) ? sub : normal;
  // 65520 is the midpoint between 65504 (max half, odd mantissa) and 65536: ties go up to inf.
  h = (a >= 0x477FF000u) ? 0x7C00u : h;
  const uint32_t payload = (a >> 13) & 0x3FFu;
  h = (a > 0x7F800000u) ? (0x7C00u | payload | (payload == 0u ? 0x200u : 0u)) : h;
  return uint16_t(h | sign);
}

}  // namespace

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Bool: return "bool";
    case DType::Int32: return "int32";
  }
  return "unknown";
}

bool parse_dtype(const std::string& name, DType* out) {
  static const DType kAll[] = {DType::Float32, DType::Float16, DType::BFloat16, DType::Bool, DType::Int32};
  for (DType t : kAll) {
    if (name == dtype_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

float half_to_float(uint16_t h) { return half_bits_to_float(h); }
uint16_t float_to_half(float f) { return float_to_half_bits(f); }

// Bulk float16 conversion: the vector kernels of kernels/decode.h where the CPU has them
// (bit-identical to the loops here, which stay the portable path and the
// METAL_TENSOROPS_CPU_ISA=baseline one).
void half_to_float_n(const uint16_t* src, float* dst, size_t n) {
  if (const auto k = kernels::core_kernels().half_to_float) return k(src, dst, n);
  for (size_t i = 0; i < n; ++i) dst[i] = half_bits_to_float(src[i]);
}

void float_to_half_n(const float* src, uint16_t* dst, size_t n) {
  if (const auto k = kernels::core_kernels().float_to_half) return k(src, dst, n);
  for (size_t i = 0; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}

void bf16_to_float_n(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_float(src[i]);
}

void float_to_bf16_n(const float* src, uint16_t* dst, size_t n) {
  // float_to_bf16 written as a select (same bits) so that the loop vectorises.
  for (size_t i = 0; i < n; ++i) {
    const uint32_t u = float_bits(src[i]);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet = (u >> 16) | 0x40u;
    dst[i] = uint16_t((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
  }
}

void to_float32(DType t, const void* src, float* dst, size_t n) {
  switch (t) {
    case DType::Float32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case DType::Float16:
      half_to_float_n(static_cast<const uint16_t*>(src), dst, n);
      return;
    case DType::BFloat16:
      bf16_to_float_n(static_cast<const uint16_t*>(src), dst, n);
      return;
    case DType::Bool: {
      const uint8_t* s = static_cast<const uint8_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = s[i] != 0 ? 1.0f : 0.0f;
      return;
    }
    case DType::Int32: {  // exact up to 2^24, then rounded to nearest-even
      const int32_t* s = static_cast<const int32_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = float(s[i]);
      return;
    }
  }
}

void from_float32(DType t, const float* src, void* dst, size_t n) {
  switch (t) {
    case DType::Float32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case DType::Float16:
      float_to_half_n(src, static_cast<uint16_t*>(dst), n);
      return;
    case DType::BFloat16:
      float_to_bf16_n(src, static_cast<uint16_t*>(dst), n);
      return;
    case DType::Bool: {  // nonzero (NaN included) is true, as in numpy and PyTorch
      uint8_t* d = static_cast<uint8_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = src[i] != 0.0f ? 1 : 0;
      return;
    }
    case DType::Int32: {
      int32_t* d = static_cast<int32_t*>(dst);
      for (size_t i = 0; i < n; ++i) {
        const float v = src[i];
        d[i] = v != v ? 0 : v >= 2147483648.0f ? INT32_MAX : v <= -2147483648.0f ? INT32_MIN : int32_t(v);
      }
      return;
    }
  }
}

}  // namespace mto
