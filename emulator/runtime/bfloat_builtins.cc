// float -> bfloat conversions for kernels compiled by the harness. clang lowers a conversion to
// __bf16 (the shim's `bfloat`) on x86-64 without AVX512-BF16 to a call into compiler-rt, which
// Debian's libgcc does not provide; these definitions round to nearest even and keep NaN a quiet
// NaN, as Metal's float -> bfloat conversion does.
#include <cstdint>
#include <cstring>

namespace {

__bf16 bf16_from_bits(uint16_t h) {
  __bf16 b;
  std::memcpy(&b, &h, sizeof b);
  return b;
}

uint16_t round_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

}  // namespace

extern "C" __bf16 __truncsfbf2(float f) { return bf16_from_bits(round_to_bf16(f)); }
// double -> bfloat through float can round twice; kernels convert from float (MSL has no double).
extern "C" __bf16 __truncdfbf2(double d) { return bf16_from_bits(round_to_bf16(float(d))); }
