// MSL math, common, integer and geometric functions (the subset our kernels use), element-wise
// on scalars and vectors. half and bfloat are computed in float and rounded back, as the GPU's
// half-precision functions are specified against the float result.
//
// They are templates on purpose: libstdc++ puts ::abs(int), ::floor(double), ... in the global
// namespace, and with `using namespace metal;` a non-template metal::floor(float) would be
// ambiguous with them for some argument types; a template that matches exactly always wins,
// and where a global non-template matches exactly too (abs(int)) it computes the same value.
#pragma once
// A system header, so the C++17 it uses internally is allowed while kernels are held to C++14.
#pragma clang system_header
#include <cmath>
#include <type_traits>

#include "mtoh_types.h"

namespace mtoh {

template <class T>
constexpr bool is_float_scalar = std::is_same<T, float>::value || std::is_same<T, half>::value ||
                                 std::is_same<T, bfloat>::value;
template <class T>
constexpr bool is_int_scalar = std::is_integral<T>::value && !std::is_same<T, bool>::value;

template <class V>
using elem_t = typename vec_traits<V>::elem;
template <class V>
constexpr bool is_float_v = is_float_scalar<elem_t<V>>;
template <class V>
constexpr bool is_int_v = is_int_scalar<elem_t<V>>;
template <class V>
constexpr bool is_num_v = is_float_v<V> || is_int_v<V>;

template <class T>
struct identity {
  using type = T;
};
template <class T>
using same_t = typename identity<T>::type;  // a non-deduced parameter: converts to the first one

template <class V, class F>
inline V map1(const V& x, F f) {
  if constexpr (vec_traits<V>::is_vector) {
    V r;
    for (int i = 0; i < vec_traits<V>::size; ++i) r[i] = f(elem_t<V>(x[i]));
    return r;
  } else {
    return f(x);
  }
}
template <class V, class F>
inline V map2(const V& x, const V& y, F f) {
  if constexpr (vec_traits<V>::is_vector) {
    V r;
    for (int i = 0; i < vec_traits<V>::size; ++i) r[i] = f(elem_t<V>(x[i]), elem_t<V>(y[i]));
    return r;
  } else {
    return f(x, y);
  }
}
template <class V, class F>
inline V map3(const V& x, const V& y, const V& z, F f) {
  if constexpr (vec_traits<V>::is_vector) {
    V r;
    for (int i = 0; i < vec_traits<V>::size; ++i)
      r[i] = f(elem_t<V>(x[i]), elem_t<V>(y[i]), elem_t<V>(z[i]));
    return r;
  } else {
    return f(x, y, z);
  }
}

}  // namespace mtoh

namespace metal {

#define MTOH_FLOAT_FN1(name, expr)                                            \
  template <class V, std::enable_if_t<mtoh::is_float_v<V>, int> = 0>        \
  inline V name(V x) {                                                        \
    return mtoh::map1(x, [](auto e) {                                         \
      const float v = float(e);                                               \
      return decltype(e)(expr);                                               \
    });                                                                       \
  }
MTOH_FLOAT_FN1(fabs, std::fabs(v))
MTOH_FLOAT_FN1(exp, std::exp(v))
MTOH_FLOAT_FN1(exp2, std::exp2(v))
MTOH_FLOAT_FN1(log, std::log(v))
MTOH_FLOAT_FN1(log2, std::log2(v))
MTOH_FLOAT_FN1(sqrt, std::sqrt(v))
MTOH_FLOAT_FN1(rsqrt, 1.0f / std::sqrt(v))
MTOH_FLOAT_FN1(floor, std::floor(v))
MTOH_FLOAT_FN1(ceil, std::ceil(v))
MTOH_FLOAT_FN1(round, std::round(v))
MTOH_FLOAT_FN1(rint, std::nearbyint(v))
MTOH_FLOAT_FN1(trunc, std::trunc(v))
MTOH_FLOAT_FN1(fract, v - std::floor(v))
MTOH_FLOAT_FN1(sin, std::sin(v))
MTOH_FLOAT_FN1(cos, std::cos(v))
MTOH_FLOAT_FN1(tanh, std::tanh(v))
MTOH_FLOAT_FN1(sign, v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v)
#undef MTOH_FLOAT_FN1

#define MTOH_FLOAT_FN2(name, expr)                                            \
  template <class V, std::enable_if_t<mtoh::is_float_v<V>, int> = 0>        \
  inline V name(V x, mtoh::same_t<V> y) {                                     \
    return mtoh::map2(x, y, [](auto a, auto b) {                              \
      const float u = float(a), v = float(b);                                 \
      return decltype(a)(expr);                                               \
    });                                                                       \
  }
MTOH_FLOAT_FN2(pow, std::pow(u, v))
MTOH_FLOAT_FN2(powr, std::pow(u, v))
MTOH_FLOAT_FN2(fmin, std::fmin(u, v))
MTOH_FLOAT_FN2(fmax, std::fmax(u, v))
MTOH_FLOAT_FN2(copysign, std::copysign(u, v))
#undef MTOH_FLOAT_FN2

template <class V, std::enable_if_t<mtoh::is_float_v<V>, int> = 0>
inline V fma(V a, mtoh::same_t<V> b, mtoh::same_t<V> c) {
  return mtoh::map3(a, b, c, [](auto x, auto y, auto z) {
    return decltype(x)(std::fma(float(x), float(y), float(z)));
  });
}

// abs/min/max/clamp for integers and floats. Float min/max follow fmin/fmax (a NaN operand
// yields the other operand), which is what Apple GPUs do.
template <class V, std::enable_if_t<mtoh::is_num_v<V>, int> = 0>
inline V abs(V x) {
  return mtoh::map1(x, [](auto e) {
    using E = decltype(e);
    if constexpr (mtoh::is_float_scalar<E>) return E(std::fabs(float(e)));
    else return E(e < 0 ? -e : e);
  });
}
template <class V, std::enable_if_t<mtoh::is_num_v<V>, int> = 0>
inline V min(V x, mtoh::same_t<V> y) {
  return mtoh::map2(x, y, [](auto a, auto b) {
    using E = decltype(a);
    if constexpr (mtoh::is_float_scalar<E>) return E(std::fmin(float(a), float(b)));
    else return b < a ? b : a;
  });
}
template <class V, std::enable_if_t<mtoh::is_num_v<V>, int> = 0>
inline V max(V x, mtoh::same_t<V> y) {
  return mtoh::map2(x, y, [](auto a, auto b) {
    using E = decltype(a);
    if constexpr (mtoh::is_float_scalar<E>) return E(std::fmax(float(a), float(b)));
    else return a < b ? b : a;
  });
}
template <class V, std::enable_if_t<mtoh::is_num_v<V>, int> = 0>
inline V clamp(V x, mtoh::same_t<V> lo, mtoh::same_t<V> hi) {
  return min(max(x, lo), hi);
}

// mix(x, y, a) = x + (y - x) * a.
template <class V, std::enable_if_t<mtoh::is_float_v<V>, int> = 0>
inline V mix(V x, mtoh::same_t<V> y, mtoh::same_t<V> a) {
  return x + (y - x) * a;
}

// select(a, b, c): c ? b : a, per component for vectors.
template <class V, class C>
inline V select(V a, V b, C c) {
  if constexpr (mtoh::vec_traits<V>::is_vector) {
    V r;
    for (int i = 0; i < mtoh::vec_traits<V>::size; ++i) {
      bool ci;
      if constexpr (mtoh::vec_traits<C>::is_vector) ci = c[i] != 0;
      else ci = bool(c);
      r[i] = ci ? b[i] : a[i];
    }
    return r;
  } else {
    return c ? b : a;
  }
}

template <class T, std::enable_if_t<mtoh::is_float_scalar<T>, int> = 0>
inline bool isnan(T x) { return std::isnan(float(x)); }
template <class T, std::enable_if_t<mtoh::is_float_scalar<T>, int> = 0>
inline bool isinf(T x) { return std::isinf(float(x)); }
template <class T, std::enable_if_t<mtoh::is_float_scalar<T>, int> = 0>
inline bool isfinite(T x) { return std::isfinite(float(x)); }
template <class T, std::enable_if_t<mtoh::is_float_scalar<T>, int> = 0>
inline bool signbit(T x) { return std::signbit(float(x)); }

template <class V, std::enable_if_t<mtoh::is_float_v<V> && mtoh::vec_traits<V>::is_vector, int> = 0>
inline mtoh::elem_t<V> dot(V a, V b) {
  float s = 0.0f;
  for (int i = 0; i < mtoh::vec_traits<V>::size; ++i) s += float(a[i]) * float(b[i]);
  return mtoh::elem_t<V>(s);
}

// Integer bit functions.
template <class V, std::enable_if_t<mtoh::is_int_v<V>, int> = 0>
inline V clz(V x) {
  return mtoh::map1(x, [](auto e) {
    using E = decltype(e);
    using U = std::make_unsigned_t<E>;
    const U u = U(e);
    int n = 0;
    for (int b = int(sizeof(E) * 8) - 1; b >= 0 && !((u >> b) & 1u); --b) ++n;
    return E(n);
  });
}
template <class V, std::enable_if_t<mtoh::is_int_v<V>, int> = 0>
inline V popcount(V x) {
  return mtoh::map1(x, [](auto e) {
    using E = decltype(e);
    return E(__builtin_popcountll(static_cast<unsigned long long>(std::make_unsigned_t<E>(e))));
  });
}

// precise:: and fast:: spell the same functions here; the harness never relaxes float math.
namespace precise {
using metal::cos; using metal::exp; using metal::exp2; using metal::log; using metal::log2;
using metal::pow; using metal::powr; using metal::rsqrt; using metal::sin; using metal::sqrt;
using metal::tanh;
}  // namespace precise
namespace fast {
using metal::cos; using metal::exp; using metal::exp2; using metal::log; using metal::log2;
using metal::pow; using metal::powr; using metal::rsqrt; using metal::sin; using metal::sqrt;
using metal::tanh;
}  // namespace fast

}  // namespace metal
