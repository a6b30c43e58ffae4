// Deterministic test data for the MSL suite.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mtoh_driver {

// xorshift64*: the same numbers on every platform and compiler.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint32_t next();
  float uniform();  // [0, 1)
  float normal();   // N(0, 1)
  int range(int lo, int hi);  // [lo, hi]

 private:
  uint64_t s_;
};

uint64_t seed_of(const std::string& name);  // a stable hash: each case its own data

// rows x cols float32 values (cols a multiple of 32) whose 32-element blocks cover the corners of
// MX quantization: random blocks at exponents from 2^-30 to 2^30, blocks of small dyadic values
// (many exact rounding ties), all-zero blocks with signed zeros, float32 subnormals, values near
// FLT_MAX, one huge value among tiny ones, and blocks holding a NaN, +inf or -inf.
std::vector<float> mx_block_data(int64_t rows, int64_t cols, uint64_t seed);

// n values from N(0, 1) * scale.
std::vector<float> normal_data(int64_t n, uint64_t seed, float scale = 1.0f);

}  // namespace mtoh_driver
