// Small pieces every plan of native/core/plan/ needs to write a Dispatch: the parameter struct's
// bytes, grid sizes, the 32-bit limits of the kernels' indices and the dtype tags of host names.
#pragma once
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../dtype.h"
#include "../error.h"

namespace mto::plan {

// The bytes setBytes binds for a parameter struct (4-byte fields only, as the shaders' *_params.h
// declare them, so MSL and C++ agree on the layout).
template <class P>
std::vector<uint8_t> params_bytes(const P& p) {
  std::vector<uint8_t> out(sizeof p);
  std::memcpy(out.data(), &p, sizeof p);
  return out;
}

inline uint32_t div_up(int64_t a, int64_t b) { return uint32_t((a + b - 1) / b); }

// Throws E_SHAPE when `v` does not fit the kernels' 32-bit indices.
inline void require_i32(const char* what, int64_t v) {
  if (v < 0 || v > std::numeric_limits<int32_t>::max()) {
    throw Error(code::Shape, std::string(what) + " = " + std::to_string(v) +
                                 " is too large for the Metal kernels' 32-bit indices");
  }
}

// "f32", "f16", "bf16" in kernel host names; nullptr for a dtype without kernels.
inline const char* float_dtype_tag(DType t) {
  switch (t) {
    case DType::Float32: return "f32";
    case DType::Float16: return "f16";
    case DType::BFloat16: return "bf16";
    default: return nullptr;
  }
}

}  // namespace mto::plan
