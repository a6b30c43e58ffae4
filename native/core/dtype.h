// Dense element types and float16/bfloat16 conversion (round-to-nearest-even on the way in).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace mto {

// Int32: token ids, positions, expert indices and sampled ids (no arithmetic op takes it).
enum class DType : uint8_t { Float32 = 0, Float16 = 1, BFloat16 = 2, Bool = 3, Int32 = 4 };

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Float16: return 2;
    case DType::BFloat16: return 2;
    case DType::Bool: return 1;
    case DType::Int32: return 4;
  }
  return 0;
}

const char* dtype_name(DType t);
// Returns false when `name` is not a dtype name.
bool parse_dtype(const std::string& name, DType* out);

inline uint32_t float_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float bf16_to_float(uint16_t h) { return bits_float(uint32_t(h) << 16); }
inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                                        // RNE
  return uint16_t(u >> 16);
}

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);  // RNE, overflow to inf, NaN stays NaN

// Bulk conversions (vectorisable loops; used on every tensor boundary).
void half_to_float_n(const uint16_t* src, float* dst, size_t n);
void float_to_half_n(const float* src, uint16_t* dst, size_t n);
void bf16_to_float_n(const uint16_t* src, float* dst, size_t n);
void float_to_bf16_n(const float* src, uint16_t* dst, size_t n);

inline bool is_float(DType t) { return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16; }

// Converts n elements of a dense dtype to float32 / from float32. To int32: toward zero, NaN to 0,
// saturating at the int32 range (PyTorch leaves NaN and out-of-range undefined; here they are
// pinned down so both backends agree).
void to_float32(DType t, const void* src, float* dst, size_t n);
void from_float32(DType t, const float* src, void* dst, size_t n);

}  // namespace mto
