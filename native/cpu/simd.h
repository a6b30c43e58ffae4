// Fixed-width float vectors for the cpu kernels, and the switches for x86 ISA dispatch.
//
// Kernels are written once against Vec<W> and instantiated per instruction set: with GCC/clang
// Vec<W> is a compiler vector type, so a kernel inlined into a function compiled for AVX2 (or
// AVX-512) uses ymm (zmm) registers while the same template elsewhere becomes SSE2/NEON code, and
// `acc += a * b` is contracted to FMA wherever the target has it (GCC's and clang's default
// floating-point contraction for C++). Other compilers (MSVC) get a plain struct whose loops
// they may vectorise: correct everywhere, fast where the compiler allows. No intrinsics headers.
#pragma once
#include <cstdint>
#include <cstring>

#include "../core/portable.h"

#define MTO_INLINE MTO_FORCE_INLINE

namespace mto::cpu::simd {

#if MTO_GNU_EXTENSIONS
// Fully unrolls a loop over registers (accumulator rows, vectors of a tile). Without it GCC may
// keep a small array of vectors in memory, or even turn its loads into a memcpy call.
#define MTO_UNROLL _Pragma("GCC unroll 16")

template <int W> struct VecT;
template <> struct VecT<4> { typedef float type __attribute__((vector_size(16))); };
template <> struct VecT<8> { typedef float type __attribute__((vector_size(32))); };
template <> struct VecT<16> { typedef float type __attribute__((vector_size(64))); };
template <int W> using Vec = typename VecT<W>::type;

// Vectors are passed by reference only: by value, a 32/64-byte vector's calling convention would
// depend on the ISA of the function (GCC's -Wpsabi), and these helpers are always inlined anyway.
template <int W> MTO_INLINE void splat(Vec<W>& v, float s) { v = Vec<W>{} + s; }
template <int W> MTO_INLINE void madd(Vec<W>& acc, const Vec<W>& a, float s) { acc += a * s; }
template <int W> MTO_INLINE void madd(Vec<W>& acc, const Vec<W>& a, const Vec<W>& b) {
  acc += a * b;
}
template <int W> MTO_INLINE void add(Vec<W>& acc, const Vec<W>& a) { acc += a; }

#else  // portable fallback
#define MTO_UNROLL

template <int W> struct Vec { float v[W]; float operator[](int i) const { return v[i]; } };
template <int W> MTO_INLINE void splat(Vec<W>& v, float s) {
  for (int i = 0; i < W; ++i) v.v[i] = s;
}
template <int W> MTO_INLINE void madd(Vec<W>& acc, const Vec<W>& a, float s) {
  for (int i = 0; i < W; ++i) acc.v[i] += a.v[i] * s;
}
template <int W> MTO_INLINE void madd(Vec<W>& acc, const Vec<W>& a, const Vec<W>& b) {
  for (int i = 0; i < W; ++i) acc.v[i] += a.v[i] * b.v[i];
}
template <int W> MTO_INLINE void add(Vec<W>& acc, const Vec<W>& a) {
  for (int i = 0; i < W; ++i) acc.v[i] += a.v[i];
}
#endif

// Unaligned load/store (memcpy compiles to one vector move).
template <int W> MTO_INLINE void load(Vec<W>& v, const float* p) { std::memcpy(&v, p, sizeof(v)); }
template <int W> MTO_INLINE void store(float* p, const Vec<W>& v) { std::memcpy(p, &v, sizeof(v)); }
template <int W> MTO_INLINE float hsum(const Vec<W>& v) {
  float lanes[W];
  std::memcpy(lanes, &v, sizeof(v));
  float s = 0.f;
  for (int i = 0; i < W; ++i) s += lanes[i];
  return s;
}

// A non-temporal store of v at p, which must be aligned to sizeof(v): the line goes to memory
// without being read for ownership first (for outputs larger than the caches). One template for
// every ISA a kernel is compiled for: clang's builtin takes any vector type, while GCC has no such
// builtin and will not inline an AVX-512 intrinsic into a template without that target (even one
// only ever inlined into AVX-512 functions), so there it is inline assembly. A plain store where
// there is no such instruction.
template <int W> MTO_INLINE void store_stream(float* p, const Vec<W>& v) {
#if MTO_GNU_EXTENSIONS && defined(__clang__)
  __builtin_nontemporal_store(v, reinterpret_cast<Vec<W>*>(p));
#elif MTO_GNU_EXTENSIONS && defined(__x86_64__)
  if constexpr (W == 4) {
    asm volatile("movntps %1, %0" : "=m"(*reinterpret_cast<Vec<W>*>(p)) : "x"(v));
  } else {
    asm volatile("vmovntps %1, %0" : "=m"(*reinterpret_cast<Vec<W>*>(p)) : "v"(v));
  }
#else
  store<W>(p, v);
#endif
}

// A hint to fetch p's cache line into the caches, for reading or (write) for writing soon (no
// effect on results; never faults).
MTO_INLINE void prefetch(const void* p, bool write = false) {
#if MTO_GNU_EXTENSIONS
  if (write)
    __builtin_prefetch(p, 1, 3);
  else
    __builtin_prefetch(p, 0, 3);
  MTO_KEEP_PREFETCH(p);
#else
  (void)write;
  mto::prefetch(p);
#endif
}

// The same into L2 only (data needed in a while, that would be evicted from L1 meanwhile).
MTO_INLINE void prefetch_l2(const void* p) {
#if MTO_GNU_EXTENSIONS
  __builtin_prefetch(p, 0, 2);
  MTO_KEEP_PREFETCH(p);
#else
  mto::prefetch(p);
#endif
}

// dst[j * ld + i] = src[i][j] for a 4 x 4 block: rows of 4 consecutive floats become columns.
// Packing panels is a transpose; shuffles do it 2-3x faster than scalar moves.
#if MTO_GNU_EXTENSIONS && defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)  // clang, GCC >= 12
#define MTO_HAS_SHUFFLE 1
#endif
#endif
MTO_INLINE void transpose4(const float* r0, const float* r1, const float* r2, const float* r3,
                           float* dst, int64_t ld) {
#if defined(MTO_HAS_SHUFFLE)
  Vec<4> x0, x1, x2, x3;
  load<4>(x0, r0); load<4>(x1, r1); load<4>(x2, r2); load<4>(x3, r3);
  const Vec<4> t0 = __builtin_shufflevector(x0, x1, 0, 4, 1, 5);
  const Vec<4> t1 = __builtin_shufflevector(x0, x1, 2, 6, 3, 7);
  const Vec<4> t2 = __builtin_shufflevector(x2, x3, 0, 4, 1, 5);
  const Vec<4> t3 = __builtin_shufflevector(x2, x3, 2, 6, 3, 7);
  store<4>(dst, __builtin_shufflevector(t0, t2, 0, 1, 4, 5));
  store<4>(dst + ld, __builtin_shufflevector(t0, t2, 2, 3, 6, 7));
  store<4>(dst + 2 * ld, __builtin_shufflevector(t1, t3, 0, 1, 4, 5));
  store<4>(dst + 3 * ld, __builtin_shufflevector(t1, t3, 2, 3, 6, 7));
#else
  for (int j = 0; j < 4; ++j) {
    dst[j * ld + 0] = r0[j];
    dst[j * ld + 1] = r1[j];
    dst[j * ld + 2] = r2[j];
    dst[j * ld + 3] = r3[j];
  }
#endif
}

// dst[j * ld + i] = rows[i][k + j] for an 8 x 8 block (i, j < 8). With 8-float vectors (AVX2,
// AVX-512 builds) this is 24 shuffles for 64 floats, the usual unpack / shuffle / lane-swap steps.
MTO_INLINE void transpose8(const float* const* rows, int64_t k, float* dst, int64_t ld) {
#if defined(MTO_HAS_SHUFFLE)
  Vec<8> x[8];
  MTO_UNROLL
  for (int i = 0; i < 8; ++i) load<8>(x[i], rows[i] + k);
  Vec<8> t[8], u[8];
  MTO_UNROLL
  for (int i = 0; i < 8; i += 2) {  // per 128-bit lane: interleave rows i and i+1
    t[i] = __builtin_shufflevector(x[i], x[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = __builtin_shufflevector(x[i], x[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  MTO_UNROLL
  for (int i = 0; i < 8; i += 4) {  // 4-row columns: u[i + c] holds columns c and c + 4
    u[i + 0] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 1] = __builtin_shufflevector(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    u[i + 2] = __builtin_shufflevector(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 3] = __builtin_shufflevector(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  MTO_UNROLL
  for (int c = 0; c < 4; ++c) {  // rows 0-3 and 4-7 of a column meet across the lanes
    store<8>(dst + c * ld, __builtin_shufflevector(u[c], u[c + 4], 0, 1, 2, 3, 8, 9, 10, 11));
    store<8>(dst + (c + 4) * ld,
             __builtin_shufflevector(u[c], u[c + 4], 4, 5, 6, 7, 12, 13, 14, 15));
  }
#else
  for (int j = 0; j < 8; ++j)
    for (int i = 0; i < 8; ++i) dst[j * ld + i] = rows[i][k + j];
#endif
}

}  // namespace mto::cpu::simd

// x86-64 with GCC/clang (core/portable.h's MTO_X86_KERNELS: Linux, macOS on Intel, clang on
// Windows): kernels are also compiled for AVX2+FMA and AVX-512 and chosen at run time (the
// portable build targets baseline x86-64, i.e. SSE2), as the decode kernels of kernels/dot.h are.
// Elsewhere (MSVC) only the baseline kernels exist.
#if MTO_X86_KERNELS
#define MTO_X86_DISPATCH 1
#define MTO_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define MTO_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))
#else
#define MTO_X86_DISPATCH 0
#endif
