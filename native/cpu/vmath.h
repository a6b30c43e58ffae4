// Vectorisable float32 math for the model ops' kernels (elementwise.cc, softmax.cc): exp of
// non-positive arguments, the logistic function and the normal CDF, written once over T = float
// (one element) or a compiler vector of W floats (every lane at once, the same steps), as
// attention_tile.h's exp2 is. Only arithmetic, compares with selects and integer bit operations:
// the compiler maps them to the registers of the ISA of the function a kernel is inlined into
// (SSE2 / NEON, AVX2, AVX-512), and the scalar form is the portable path MSVC compiles.
//
// Errors against long double (a sweep over every 601st float32 bit pattern, vector and scalar
// forms alike): exp_neg within 0.95 ulp wherever the result is normal, graded through the
// subnormals; silu within 3.1 ulp for |x| <= 20 (up to ~50 ulp where x e^x nears the subnormals);
// gelu within 13 ulp everywhere (erfcc's 1.2e-7, in the negative tail too, which 1 + erf(x) would
// lose to cancellation); tanh-gelu within ~200 ulp in its far negative tail (results ~1e-32, where
// the float32 rounding of its inner polynomial is amplified by the exponential), better above;
// every |got - want| / (1 + |want|) below 1.3e-7.
#pragma once
#include <cstdint>
#include <cstring>
#include <limits>

#include "simd.h"

namespace mto::cpu::vmath {

#if MTO_GNU_EXTENSIONS
template <int W> struct IntVecT { typedef int32_t type __attribute__((vector_size(4 * W))); };
template <int W> using IVec = typename IntVecT<W>::type;
#endif

// The integer type of T's lanes: int32_t for float, an int32 vector for a float vector.
template <class T> struct IntOf { using type = int32_t; };
#if MTO_GNU_EXTENSIONS
template <> struct IntOf<simd::Vec<4>> { using type = IVec<4>; };
template <> struct IntOf<simd::Vec<8>> { using type = IVec<8>; };
template <> struct IntOf<simd::Vec<16>> { using type = IVec<16>; };
#endif

template <class T> MTO_INLINE void splat(T& v, float s) { v = T{} + s; }

// e^(hi + lo) for hi + lo <= ~0, lo small beside hi (a correction: the low part of -z^2): Cody-Waite
// reduction by n ln 2 (ln 2 in two parts, so r is exact to a few ulp), Cephes' expf polynomial on
// |r| <= ln2 / 2, then 2^n. Subnormals: 2^n applied in two steps so that results down to 2^-149
// come out as subnormals (below hi = -104, e^-104 < 2^-150, the result is 0); without, results
// below 2^-126 (hi < -87.3) are 0, two integer steps and a multiply fewer (softmax, whose
// smallest terms vanish beside the sum anyway). NaN stays NaN.
template <class T, bool Subnormals = true>  // (vectors by reference, out last: simd.h)
MTO_INLINE void exp_neg(const T& hi, const T& lo, T& out) {
  using I = typename IntOf<T>::type;
  T lim;
  splat<T>(lim, Subnormals ? -104.f : -87.33654f);
  const T h = hi < lim ? lim : hi;
  const T t = (h + lo) * 1.44269504088896341f + 12582912.f;  // 1.5 * 2^23: round to n in t's low bits
  const T n = t - 12582912.f;
  const T r = (h - n * 0.693359375f) - n * -2.12194440e-4f + lo;  // ln2 = 0.693359375 - 2.12e-4
  T p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.f;
  I tb;
  std::memcpy(&tb, &t, sizeof tb);
  const I ni = tb - 0x4B400000;  // n in [-152, 1] (subnormals), else [-126, 1]
  T res;
  if constexpr (Subnormals) {
    const I n1 = ni >> 1;
    const I n2 = ni - n1;
    const I b1 = (n1 + 127) << 23, b2 = (n2 + 127) << 23;
    T s1, s2;
    std::memcpy(&s1, &b1, sizeof s1);
    std::memcpy(&s2, &b2, sizeof s2);
    res = p * s1 * s2;
  } else {
    const I b = (ni + 127) << 23;
    T s1;
    std::memcpy(&s1, &b, sizeof s1);
    res = p * s1;
  }
  out = hi < lim ? T{} : res;
}

// The logistic function 1 / (1 + e^-y), from e = e^-|y| <= 1 (no overflow for any y): 1 / (1 + e)
// for y >= 0, e / (1 + e) below. NaN gives NaN.
template <class T>
MTO_INLINE void sigmoid(const T& y, T& out) {
  const T na = y > T{} ? -y : y;
  T e, one;
  exp_neg<T>(na, T{}, e);
  splat<T>(one, 1.f);
  const T q = one / (e + 1.f);
  out = y >= T{} ? q : e * q;
}

// r, or -0 where x is -inf (the limit of silu and gelu there, where x * 0 would be NaN).
template <class T>
MTO_INLINE void minus_inf_to_zero(const T& x, T& r) {
  T ninf, nzero;
  splat<T>(ninf, -std::numeric_limits<float>::infinity());
  splat<T>(nzero, -0.f);
  r = x == ninf ? nzero : r;
}

// x * sigmoid(x); silu(-inf) = -0 (the limit; -inf * 0 would be NaN).
template <class T>
MTO_INLINE void silu(const T& x, T& out) {
  T s;
  sigmoid<T>(x, s);
  out = x * s;
  minus_inf_to_zero<T>(x, out);
}

// 0.5 x (1 + tanh(k (x + 0.044715 x^3))) = x * sigmoid(2 k (x + 0.044715 x^3)), which keeps its
// relative accuracy in the negative tail; +-inf give their limits (inf, -0).
template <class T>
MTO_INLINE void gelu_tanh(const T& x, T& out) {
  const T inner = (x * x * 0.044715f + 1.f) * x * (2.f * 0.79788456080286536f);
  T s;
  sigmoid<T>(inner, s);
  out = x * s;
  minus_inf_to_zero<T>(x, out);
}

// 0.5 x (1 + erf(x / sqrt 2)) = x * Phi(x), Phi from erfc(z) at z = |x| / sqrt 2: Numerical
// Recipes' erfcc (t = 1 / (1 + z / 2), erfc = t e^(-z^2 + P(t)), fractional error < 1.2e-7 for
// every z), with z^2 = x^2 / 2 carried as an exact high part and a low part (Dekker's split) so
// that e^(-z^2) stays accurate to a few ulp for large |x|. Phi = 1 - erfc / 2 for x >= 0, erfc / 2 below.
template <class T>
MTO_INLINE void gelu_erf(const T& x, T& out) {
  using I = typename IntOf<T>::type;
  const T ax = x > T{} ? x : -x;
  T one;
  splat<T>(one, 1.f);
  const T t = one / (ax * (0.5f * 0.70710678118654752f) + 1.f);
  T p = t * 0.17087277f - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  // z^2 = x^2 / 2 = (xh^2 + xl (|x| + xh)) / 2 with xh = |x|'s high 12 significant bits: xh^2 is
  // exact, and the rounding of x / sqrt 2 (~100 ulp of e^(-z^2) at x = -13) never happens.
  I xb;
  std::memcpy(&xb, &ax, sizeof xb);
  xb = xb & int32_t(0xFFFFF000);
  T xh;
  std::memcpy(&xh, &xb, sizeof xh);
  const T xl = ax - xh;
  T e;
  exp_neg<T>(xh * xh * -0.5f, p - xl * (ax + xh) * 0.5f, e);
  const T half_erfc = t * e * 0.5f;
  const T phi = x >= T{} ? one - half_erfc : half_erfc;
  out = x * phi;
  minus_inf_to_zero<T>(x, out);
}

}  // namespace mto::cpu::vmath
