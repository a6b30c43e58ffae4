// Seeds for sample cases that place a row's draw exactly (pick_cases.cc: boundary draws).
#pragma once
#include <cstdint>

namespace mtoh_driver {

// The seed whose draw for row 0 is `bits` (< 2^53): splitmix64 (shaders/pick_sample.h
// mto_sample_bits) run backwards, each xor-shift and odd multiplier undone.
inline uint64_t seed_for_bits(uint64_t bits) {
  const auto unshift = [](uint64_t z, int s) {
    uint64_t x = z;
    for (int i = 0; i < 64 / s + 1; ++i) x = z ^ (x >> s);
    return x;
  };
  const auto inverse = [](uint64_t a) {  // a^-1 mod 2^64 (Newton: each step doubles the good bits)
    uint64_t x = a;
    for (int i = 0; i < 6; ++i) x *= 2 - a * x;
    return x;
  };
  uint64_t z = unshift(bits << 11, 31);
  z = unshift(z * inverse(0x94D049BB133111EBull), 27);
  z = unshift(z * inverse(0xBF58476D1CE4E5B9ull), 30);
  return z - 0x9E3779B97F4A7C15ull;
}

}  // namespace mtoh_driver
