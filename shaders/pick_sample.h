// What argmax, topK and sample compute for one element, shared by the MSL kernels
// (shaders/pick.metal) and the cpu backend (native/cpu/pick.cc, native/core/ops_pick.cc), so that
// both rank the same way and sample draws the same id for the same (logits, options, seed, row).
//
// Ranking: a float becomes an unsigned key ordered like the floats, NaN above +inf and -0 equal to
// +0 (core/ops.h: NaN largest); (key, index) becomes one 64-bit rank, larger = first, so ties go
// to the lower index and every comparison is one integer comparison.
//
// Sampling weights are integers: w = 2^32 * exp((x - m) / T), truncated, 0 below 2^-33 of the
// largest. The cpu once accumulated exp() in double, which a GPU without double cannot reproduce
// bit for bit (a draw within a rounding of a cumulative boundary could pick another id). Here
// only three float operations remain, each correctly rounded on both sides (MSL without fast math
// and IEEE C++), with subnormals flushed explicitly so that GPU denormal flushing changes nothing:
// d = x - m, z = d * c (c = log2(e) / T, computed once by the host), z * 2^24 (exact). 2^z is then
// evaluated in fixed point from a 64-entry table and a cubic; the sums are integers, exact in any
// order. A weight is within 2 units (2^-32 of the largest weight) plus 1e-6 of itself of the
// exact value: a row of 2^17 tokens loses at most 3e-5 of its largest token's probability to
// truncation, far under what a frequency test can see. Sums stay below 2^63 for any row width
// the kernels index with 32 bits.
//
// Compiles as C++ and as MSL (C++14 based): no standard library, 64-bit integers only through
// mto_u64, products of two 64-bit numbers through mto_mul_u64.
#ifndef MTO_SHADERS_PICK_SAMPLE_H
#define MTO_SHADERS_PICK_SAMPLE_H

#include "mx_formats.h"

#if defined(__METAL_VERSION__)
typedef ulong mto_u64;
#define MTO_U64(c) c##ul
#else
typedef std::uint64_t mto_u64;
#define MTO_U64(c) UINT64_C(c)  // unsigned long is 32 bits on Windows
#endif

// ---- Ranking.
// The key of x: the float's bits made unsigned-ordered (negative values flipped, positive ones
// above them); -0 counts as +0 and every NaN as the largest key.
inline mto_u32 mto_pick_key(float x) {
  mto_u32 bits = mto_as_uint(x);
  if ((bits & 0x7FFFFFFFu) == 0u) bits = 0u;                   // -0 -> +0
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0xFFFFFFFFu;  // NaN
  return (bits & 0x80000000u) != 0u ? ~bits : (bits | 0x80000000u);
}
// (key, index) as one number: larger key first, then the lower index. Never 0 for an element
// (the smallest key, -inf's, is 0x007FFFFF), so 0 can mark an empty slot.
inline mto_u64 mto_pick_rank(mto_u32 key, mto_u32 index) {
  return (mto_u64(key) << 32) | mto_u64(0xFFFFFFFFu - index);
}
inline mto_u32 mto_pick_rank_index(mto_u64 rank) { return 0xFFFFFFFFu - mto_u32(rank & 0xFFFFFFFFu); }
inline mto_u32 mto_pick_rank_key(mto_u64 rank) { return mto_u32(rank >> 32); }
// Keys of the values sample refuses: NaN and +inf (no distribution), and -inf (the whole row at
// -inf has none either).
MTO_CONSTANT constexpr mto_u32 MTO_PICK_KEY_NAN = 0xFFFFFFFFu;
MTO_CONSTANT constexpr mto_u32 MTO_PICK_KEY_POS_INF = 0xFF800000u;
MTO_CONSTANT constexpr mto_u32 MTO_PICK_KEY_NEG_INF = 0x007FFFFFu;

// ---- 128-bit helpers from 64-bit integers (no __int128 in MSL).
struct mto_u128 {
  mto_u64 hi, lo;
};
inline mto_u128 mto_mul_u64(mto_u64 a, mto_u64 b) {
  const mto_u64 a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
  const mto_u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const mto_u64 mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
  mto_u128 r;
  r.lo = (mid << 32) | (p00 & 0xFFFFFFFFu);
  r.hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
  return r;
}
inline bool mto_u128_ge(mto_u128 a, mto_u128 b) { return a.hi != b.hi ? a.hi > b.hi : a.lo >= b.lo; }

// ---- The draw.
// splitmix64 of (seed, row): 53 uniform bits per row, no state (core/ops.h sample_uniform is
// these bits times 2^-53).
inline mto_u64 mto_sample_bits(mto_u64 seed, mto_u64 row) {
  mto_u64 z = seed + MTO_U64(0x9E3779B97F4A7C15) * (row + 1u);
  z = (z ^ (z >> 30)) * MTO_U64(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * MTO_U64(0x94D049BB133111EB);
  z ^= z >> 31;
  return z >> 11;
}
// floor(bits * 2^-53 * kept): the position of the draw in [0, kept) (kept < 2^63).
inline mto_u64 mto_sample_target(mto_u64 bits, mto_u64 kept) {
  const mto_u128 p = mto_mul_u64(bits, kept);
  return (p.hi << 11) | (p.lo >> 53);
}
// topP: whether a cumulative weight `cum` reaches top_p of `total`, with top_p given as
// round(top_p * 2^32) (core/ops.h sample_top_p_q32): cum * 2^32 >= top_p_q32 * total.
inline bool mto_sample_reaches(mto_u64 cum, mto_u64 total, mto_u64 top_p_q32) {
  mto_u128 lhs;
  lhs.hi = cum >> 32;
  lhs.lo = cum << 32;
  return mto_u128_ge(lhs, mto_mul_u64(top_p_q32, total));
}

// ---- Weights.
// round(2^31 * 2^(-j/64)), j = 0..63.
MTO_CONSTANT constexpr mto_u32 MTO_SAMPLE_EXP2_TABLE[64] = {
    2147483648u, 2124350982u, 2101467502u, 2078830522u, 2056437387u, 2034285470u, 2012372174u, 1990694927u,
    1969251188u, 1948038440u, 1927054196u, 1906295993u, 1885761398u, 1865448001u, 1845353420u, 1825475297u,
    1805811301u, 1786359126u, 1767116489u, 1748081133u, 1729250827u, 1710623359u, 1692196547u, 1673968228u,
    1655936265u, 1638098541u, 1620452965u, 1602997467u, 1585730000u, 1568648537u, 1551751076u, 1535035634u,
    1518500250u, 1502142985u, 1485961921u, 1469955159u, 1454120821u, 1438457051u, 1422962010u, 1407633882u,
    1392470869u, 1377471191u, 1362633090u, 1347954824u, 1333434672u, 1319070932u, 1304861917u, 1290805962u,
    1276901417u, 1263146652u, 1249540052u, 1236080024u, 1222764986u, 1209593378u, 1196563654u, 1183674286u,
    1170923762u, 1158310587u, 1145833280u, 1133490379u, 1121280436u, 1109202018u, 1097253708u, 1085434106u};
// round(ln 2 * 2^40).
MTO_CONSTANT constexpr mto_u64 MTO_SAMPLE_LN2_Q40 = MTO_U64(762123384786);

// 0 for |v| below the smallest normal float, else v: what a GPU that flushes subnormals sees,
// made explicit on both sides.
inline float mto_sample_flush(float v) { return (v < 1.17549435e-38f && v > -1.17549435e-38f) ? 0.0f : v; }

// The weight of x in a row whose largest value is m (finite), c = log2(e) / T (flushed, > 0).
// 2^32 for x = m; 0 for x = -inf and below 2^-33 of the largest.
inline mto_u64 mto_sample_weight(float x, float m, float c) {
  if (mto_as_uint(x) == 0xFF800000u) return 0u;  // -inf
  const float d = mto_sample_flush(mto_sample_flush(x) - mto_sample_flush(m));
  const float z = mto_sample_flush(d * c);  // log2 of the weight, <= 0
  if (!(z >= -33.0f)) return 0u;
  // -z in units of 2^-24 (exact: z has no bits below 2^-149 and |z| <= 33), then 2^-z as
  // 2^-ip * 2^-(j/64) * e^-a with a = (r / 2^24) ln 2 < 0.011.
  const mto_u32 u = mto_u32(int(z * -16777216.0f));
  const mto_u32 ip = u >> 24, j = (u >> 18) & 63u, r = u & 0x3FFFFu;
  const mto_u64 a = (mto_u64(r) * MTO_SAMPLE_LN2_Q40) >> 32;  // a * 2^32
  const mto_u64 a2 = (a * a) >> 32, a3 = (a2 * a) >> 32;
  const mto_u64 e = (mto_u64(1) << 32) - a + a2 / 2u - a3 / 6u;  // e^-a * 2^32, 1 - a + a^2/2 - a^3/6
  const mto_u64 g = (mto_u64(MTO_SAMPLE_EXP2_TABLE[j]) * e) >> 32;  // 2^-(j/64 + r/2^24) * 2^31
  return (g << 1) >> ip;
}

#endif  // MTO_SHADERS_PICK_SAMPLE_H
