// Seeds and options for sample cases that place a row's draw or topP cut exactly (pick_cases.cc:
// boundary draws and cuts).
#pragma once
#include <cstdint>

#include "../../../shaders/pick_sample.h"
#include "core/ops.h"

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

// Pattern::Threshold's second value. At temperature log2(e) (c = 1) its weight is
// 2^-(1 + 37/64 + r/2^24) of the largest, r = 2^18 - 12:
// every step of shaders/pick_sample.h's weight (the halving, the table, each term of e^-a) shapes
// it, and it is odd (1422962715), so halving every weight loses a bit of it.
constexpr float kThresholdValue = -float((1 << 24) + (37 << 18) + (1 << 18) - 12) / 16777216.0f;

// With Pattern::Boundary and top_k 300 of 301 the candidates weigh 2^32 + 2^31 (the -inf ones
// nothing), and row 0's bits for this seed are ceil(2^54 / 3) (splitmix64 inverted): the target
// is exactly 2^32, where the first element ends. The cpu takes the first candidate whose running
// weight passes the target strictly: the second element, not the first.
constexpr uint64_t kBoundarySeed = 274846086044649502ull;
constexpr double kLog2e = 1.4426950408889634;  // temperature giving c = log2(e) / T = 1 exactly
// top_p = 2863311531 / 2^32 (just above 2/3): with Pattern::Boundary's weights 2^32 and 2^31 the cut
// is at 2^32 + 1/2, so the first element's running weight falls short of it by half a unit and the
// cut keeps the second element too.
constexpr double kTopPPastFirst = 2863311531.0 / 4294967296.0;
// A temperature (c = 1 - 2^-22) at which Pattern::Threshold's total T = 2^32 + w has a top_p_q32,
// floor(2^64 / T), whose cut (top_p * T) reaches 2^32, the first element's weight, while one unit
// more of total would not: top_p_at_first() keeps that element alone, one unit from keeping two.
constexpr double kCutTemperature = 1.4426951851584675;
inline double top_p_at_first() {
  const unsigned __int128 total =
      (uint64_t(1) << 32) + mto_sample_weight(kThresholdValue, 0.0f, mto::sample_log2e_over_t(kCutTemperature));
  return double(uint64_t(((unsigned __int128)1 << 64) / total)) / 4294967296.0;
}
// Row 0's bits for this seed are 2^30: with Pattern::Negligible's 4096
// columns the draw is at 2^30 / 2^53 of the row's weight, so a weight of 1 (not 0) for -inf or for
// a value below 2^-33 of the largest would take the draw (position 512 in 2^32 + 2048).
inline const uint64_t kSmallDrawSeed = seed_for_bits(uint64_t(1) << 30);


// Pattern::Threshold's draws at the boundary of its first element: the largest bits that take it
// (below) and the next (above): floor(bits * total / 2^53) < 2^32, total = 2^32 + its weight. A
// weight one unit off on either side, or weights all halved (the last bit lost), moves the boundary.
inline uint64_t threshold_seed(bool above) {
  const uint64_t total = (uint64_t(1) << 32) + mto_sample_weight(kThresholdValue, 0.0f, 1.0f);
  const uint64_t below = uint64_t((((unsigned __int128)1 << 85) - 1) / total);
  return seed_for_bits(below + (above ? 1 : 0));
}

}  // namespace mtoh_driver
