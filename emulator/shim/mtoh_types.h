// MSL's address spaces, scalar and vector types, vector constructors and as_type, for compiling
// Metal Shading Language as C++ with clang.
//
// Address spaces are clang `address_space` attributes with distinct numbers, so passing a
// `device float*` where a `threadgroup float*` or a plain (thread) pointer is expected is a compile
// error, as it is in MSL. `thread` is the default (generic) address space.
//
// Vectors are clang ext_vector_type types: element access, .xyzw/.rgba swizzles, .lo/.hi and
// arithmetic come for free. MSL's constructors (`float4(a, b, c, d)`, `float4(x)`,
// `float4(v.xy, z, w)`, `float4(int4_value)`) are not C++ for such types, so each vector type name
// is also a function-like macro: `float4(` expands to a call of make_vec, while `float4 v;` (no
// parenthesis) still names the type. Consequence: write `float4(...)`, never `metal::float4(...)`.
#pragma once
// A system header, so the C++17 it uses internally is allowed while kernels are held to C++14.
#pragma clang system_header
#include <cstdint>
#include <cstring>
#include <type_traits>

#define device __attribute__((address_space(1)))
#define constant __attribute__((address_space(2)))
#define threadgroup __attribute__((address_space(3)))
#define thread
#define kernel

// ---- Scalars (global, as MSL's built-in types).
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef _Float16 half;
typedef __bf16 bfloat;

namespace mtoh {

template <class T, int N>
using vec_t = T __attribute__((ext_vector_type(N)));

// Element type and count of a vector; count 1 for a scalar.
template <class V>
struct vec_traits {
  using elem = V;
  static constexpr int size = 1;
  static constexpr bool is_vector = false;
};
template <class T, int N>
struct vec_traits<T __attribute__((ext_vector_type(N)))> {
  using elem = T;
  static constexpr int size = N;
  static constexpr bool is_vector = true;
};

template <class T, int N, class A>
inline void vec_append(T (&out)[N], int& at, const A& a) {
  if constexpr (vec_traits<A>::is_vector) {
    for (int i = 0; i < vec_traits<A>::size; ++i) out[at++] = T(a[i]);
  } else {
    out[at++] = T(a);
  }
}

// MSL vector construction: one scalar (splat), one vector of the same width (element-wise
// conversion), or scalars and vectors whose widths add up to N.
template <class T, int N, class... A>
inline vec_t<T, N> make_vec(const A&... a) {
  vec_t<T, N> r;
  if constexpr (sizeof...(A) == 1 && (!vec_traits<A>::is_vector && ...)) {
    for (int i = 0; i < N; ++i) r[i] = T((a, ...));
  } else {
    static_assert((vec_traits<A>::size + ... + 0) == N, "vector constructor: wrong element count");
    T e[N];
    int at = 0;
    (vec_append(e, at, a), ...);
    for (int i = 0; i < N; ++i) r[i] = e[i];
  }
  return r;
}

}  // namespace mtoh

template <class T, int N>
using vec = mtoh::vec_t<T, N>;

#define MTOH_VECTOR_TYPES(T)                          \
  typedef T T##2 __attribute__((ext_vector_type(2))); \
  typedef T T##3 __attribute__((ext_vector_type(3))); \
  typedef T T##4 __attribute__((ext_vector_type(4)));
MTOH_VECTOR_TYPES(char)
MTOH_VECTOR_TYPES(uchar)
MTOH_VECTOR_TYPES(short)
MTOH_VECTOR_TYPES(ushort)
MTOH_VECTOR_TYPES(int)
MTOH_VECTOR_TYPES(uint)
MTOH_VECTOR_TYPES(long)
MTOH_VECTOR_TYPES(ulong)
MTOH_VECTOR_TYPES(half)
MTOH_VECTOR_TYPES(bfloat)
MTOH_VECTOR_TYPES(float)
#undef MTOH_VECTOR_TYPES

// The constructor macros (see the header comment). A macro cannot define macros, so one line each.
#define char2(...) ::mtoh::make_vec<char, 2>(__VA_ARGS__)
#define char3(...) ::mtoh::make_vec<char, 3>(__VA_ARGS__)
#define char4(...) ::mtoh::make_vec<char, 4>(__VA_ARGS__)
#define uchar2(...) ::mtoh::make_vec<uchar, 2>(__VA_ARGS__)
#define uchar3(...) ::mtoh::make_vec<uchar, 3>(__VA_ARGS__)
#define uchar4(...) ::mtoh::make_vec<uchar, 4>(__VA_ARGS__)
#define short2(...) ::mtoh::make_vec<short, 2>(__VA_ARGS__)
#define short3(...) ::mtoh::make_vec<short, 3>(__VA_ARGS__)
#define short4(...) ::mtoh::make_vec<short, 4>(__VA_ARGS__)
#define ushort2(...) ::mtoh::make_vec<ushort, 2>(__VA_ARGS__)
#define ushort3(...) ::mtoh::make_vec<ushort, 3>(__VA_ARGS__)
#define ushort4(...) ::mtoh::make_vec<ushort, 4>(__VA_ARGS__)
#define int2(...) ::mtoh::make_vec<int, 2>(__VA_ARGS__)
#define int3(...) ::mtoh::make_vec<int, 3>(__VA_ARGS__)
#define int4(...) ::mtoh::make_vec<int, 4>(__VA_ARGS__)
#define uint2(...) ::mtoh::make_vec<uint, 2>(__VA_ARGS__)
#define uint3(...) ::mtoh::make_vec<uint, 3>(__VA_ARGS__)
#define uint4(...) ::mtoh::make_vec<uint, 4>(__VA_ARGS__)
#define long2(...) ::mtoh::make_vec<long, 2>(__VA_ARGS__)
#define long3(...) ::mtoh::make_vec<long, 3>(__VA_ARGS__)
#define long4(...) ::mtoh::make_vec<long, 4>(__VA_ARGS__)
#define ulong2(...) ::mtoh::make_vec<ulong, 2>(__VA_ARGS__)
#define ulong3(...) ::mtoh::make_vec<ulong, 3>(__VA_ARGS__)
#define ulong4(...) ::mtoh::make_vec<ulong, 4>(__VA_ARGS__)
#define half2(...) ::mtoh::make_vec<half, 2>(__VA_ARGS__)
#define half3(...) ::mtoh::make_vec<half, 3>(__VA_ARGS__)
#define half4(...) ::mtoh::make_vec<half, 4>(__VA_ARGS__)
#define bfloat2(...) ::mtoh::make_vec<bfloat, 2>(__VA_ARGS__)
#define bfloat3(...) ::mtoh::make_vec<bfloat, 3>(__VA_ARGS__)
#define bfloat4(...) ::mtoh::make_vec<bfloat, 4>(__VA_ARGS__)
#define float2(...) ::mtoh::make_vec<float, 2>(__VA_ARGS__)
#define float3(...) ::mtoh::make_vec<float, 3>(__VA_ARGS__)
#define float4(...) ::mtoh::make_vec<float, 4>(__VA_ARGS__)

// as_type<T>(x): reinterpret the bits (MSL requires equal sizes; so does this).
template <class T, class U>
inline T as_type(const U& u) {
  static_assert(sizeof(T) == sizeof(U), "as_type: source and destination sizes differ");
  T t;
  std::memcpy(&t, &u, sizeof t);
  return t;
}
