// RoPE angles exact for every int32 position: a frequency (radians per position) is turned once
// into its fraction of a turn as a 64-bit fixed-point number, and a position's angle is that
// times the position modulo one turn, in integer arithmetic. pos * f in double then cos() loses
// |pos * f| * 2^-53 radians (2e-5 at position 2^31 for f = 93, an explicit frequency table's
// value); this keeps ~2^-60 turns. shaders/rope.metal does the same in float (rope_turns_of,
// rope_angle); the cpu backend (native/cpu/rope.cc) and the plans' turns tables use this.
#pragma once
#include <cmath>
#include <cstdint>

namespace mto {

// The fraction of x (|x| < 2^52) in units of 2^-64 turns, two's complement.
inline uint64_t rope_fixed_fraction(double x) {
  const double r = x - std::nearbyint(x);  // exact, in [-1/2, 1/2]
  return uint64_t(int64_t(r * 4611686018427387904.0)) << 2;  // r * 2^62 fits; 2 bits of 2^-64 lost
}

// f / (2 pi) modulo 1, in units of 2^-64 turns: f times the three parts of 1 / (2 pi), each
// product split into its double and its exact error (fma), each part reduced and added wrapping.
inline uint64_t rope_turns(double f) {
  // 1 / (2 pi) = kInv2Pi1 + kInv2Pi2 + kInv2Pi3 to ~2^-160 (each the rounding of what is left).
  constexpr double kInv2Pi1 = 0.15915494309189535;
  constexpr double kInv2Pi2 = -9.839338337591243e-18;
  constexpr double kInv2Pi3 = -5.360718141446502e-34;
  const double a1 = f * kInv2Pi1, e1 = std::fma(f, kInv2Pi1, -a1);
  const double a2 = f * kInv2Pi2, e2 = std::fma(f, kInv2Pi2, -a2);
  const double a3 = f * kInv2Pi3;
  return rope_fixed_fraction(a1) + rope_fixed_fraction(e1) + rope_fixed_fraction(a2) +
         rope_fixed_fraction(e2) + rope_fixed_fraction(a3);
}

// The angle of position `pos` for `turns` (rope_turns), in radians in [-pi, pi).
inline double rope_angle(int64_t pos, uint64_t turns) {
  const uint64_t t = uint64_t(pos) * turns;  // modulo one turn
  return double(int64_t(t)) * 5.42101086242752217e-20 * 6.283185307179586476925;  // 2^-64 * 2 pi
}

}  // namespace mto
