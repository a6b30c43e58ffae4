// Test data (data.h).
#include "data.h"

#include <cfloat>
#include <cmath>
#include <limits>

namespace mtoh_driver {

uint32_t Rng::next() {
  s_ ^= s_ >> 12;
  s_ ^= s_ << 25;
  s_ ^= s_ >> 27;
  return uint32_t((s_ * 0x2545F4914F6CDD1Dull) >> 32);
}
float Rng::uniform() { return float(next() >> 8) * (1.0f / 16777216.0f); }
float Rng::normal() {
  const float u1 = uniform() + 1e-7f, u2 = uniform();
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853f * u2);
}
int Rng::range(int lo, int hi) { return lo + int(next() % uint32_t(hi - lo + 1)); }

uint64_t seed_of(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::vector<float> mx_block_data(int64_t rows, int64_t cols, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(size_t(rows * cols));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t blocks = rows * cols / 32;
  for (int64_t b = 0; b < blocks; ++b) {
    float* v = x.data() + b * 32;
    // Block 0 of every tensor is ordinary data; the rest cycle through the kinds, so even small
    // tensors see most of them.
    const int kind = b == 0 ? 0 : int((b * 7 + int64_t(seed % 5)) % 10);
    const float scale = std::ldexp(1.0f, rng.range(-30, 30));
    for (int i = 0; i < 32; ++i) {
      switch (kind) {
        case 0: case 1: v[i] = rng.normal() * scale; break;
        case 2: v[i] = float(rng.range(-64, 64)) / 8.0f * std::ldexp(1.0f, rng.range(-3, 3)); break;  // ties
        case 3: v[i] = (i & 1) ? -0.0f : 0.0f; break;
        case 4: v[i] = rng.normal() * 1e-40f; break;                                 // subnormals
        case 5: v[i] = rng.normal() * (FLT_MAX / 4.0f); break;                       // near FLT_MAX
        case 6: v[i] = (i == 5 ? 1e6f : rng.normal() * 1e-3f) * scale; break;        // one dominates
        case 7: v[i] = i == 9 ? nan : rng.normal(); break;
        case 8: v[i] = i == 17 ? inf : rng.normal() * scale; break;
        default: v[i] = i == 30 ? -inf : rng.normal(); break;
      }
    }
  }
  return x;
}

std::vector<float> normal_data(int64_t n, uint64_t seed, float scale) {
  Rng rng(seed);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = rng.normal() * scale;
  return x;
}

}  // namespace mtoh_driver
