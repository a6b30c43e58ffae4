// Tile kernels of the cpu attention (attention.cc): register-blocked products of float32 tiles
// and a vectorisable exp2. Everything is inline (always_inline where the compiler
// allows) so that each ISA's instantiation of the task loop in attention.cc compiles these for its
// own instruction set.
#pragma once
#include <cstdint>
#include <cstring>
#include <utility>

#include "simd.h"

namespace mto::cpu::attention_tile {

constexpr int kNR = 16;  // columns of a gemm register block (keys of S, features of O)

// ---- register-blocked gemm: C[M, N] (+)= A[M, K] B[K, N], N a multiple of kNR ----------------
// An MR x (NV * W) block of C lives in registers (MR x NV vectors of W floats); each step of k
// loads one row of B (NV vectors) and multiply-adds it with MR broadcast elements of A. Blocks are
// kWideNV vectors wide where N allows (more accumulators per load of A: with AVX-512, 8 x 2
// vectors keep both FMA pipes fed where 8 x 1 is bound by the broadcasts), else kNR columns.
template <int W> constexpr int kWideNV = W >= 16 ? 2 : kNR / W;

template <int MR, int W, int NV>
MTO_INLINE void gemm_block(int64_t K, const float* __restrict A, int64_t lda,
                           const float* __restrict B, int64_t ldb, float* __restrict C, int64_t ldc,
                           bool accumulate) {
  using V = simd::Vec<W>;
  V acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NV; ++c) {
      if (accumulate) simd::load<W>(acc[r][c], C + r * ldc + c * W);
      else simd::splat<W>(acc[r][c], 0.f);
    }
  for (int64_t kk = 0; kk < K; ++kk) {
    V b[NV];
    for (int c = 0; c < NV; ++c) simd::load<W>(b[c], B + kk * ldb + c * W);
    for (int r = 0; r < MR; ++r) {
      const float a = A[r * lda + kk];
      for (int c = 0; c < NV; ++c) simd::madd<W>(acc[r][c], b[c], a);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NV; ++c) simd::store<W>(C + r * ldc + c * W, acc[r][c]);
}

// The last M % MR rows of a gemm: one block of exactly that many rows.
template <int MR, int W, int NV>
MTO_INLINE void gemm_tail(int64_t rows, int64_t K, const float* A, int64_t lda, const float* B,
                          int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  if constexpr (MR > 1) {
    if (rows == MR - 1) return gemm_block<MR - 1, W, NV>(K, A, lda, B, ldb, C, ldc, accumulate);
    gemm_tail<MR - 1, W, NV>(rows, K, A, lda, B, ldb, C, ldc, accumulate);
  }
}

// The columns [n0, n0 + NV * W) of C, all rows.
template <int MR, int W, int NV>
MTO_INLINE void gemm_columns(int64_t M, int64_t n0, int64_t K, const float* A, int64_t lda,
                             const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  int64_t m0 = 0;
  for (; m0 + MR <= M; m0 += MR)
    gemm_block<MR, W, NV>(K, A + m0 * lda, lda, B + n0, ldb, C + m0 * ldc + n0, ldc, accumulate);
  if (m0 < M)
    gemm_tail<MR, W, NV>(M - m0, K, A + m0 * lda, lda, B + n0, ldb, C + m0 * ldc + n0, ldc,
                         accumulate);
}

// MR: rows per register block; W: vector width.
template <int MR, int W>
MTO_INLINE void gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                     const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  constexpr int NV = kNR / W, WIDE = kWideNV<W>;
  static_assert(NV * W == kNR, "kNR must be a multiple of the vector width");
  int64_t n0 = 0;
  if constexpr (WIDE != NV)
    for (; n0 + WIDE * W <= N; n0 += WIDE * W)
      gemm_columns<MR, W, WIDE>(M, n0, K, A, lda, B, ldb, C, ldc, accumulate);
  for (; n0 < N; n0 += kNR) gemm_columns<MR, W, NV>(M, n0, K, A, lda, B, ldb, C, ldc, accumulate);
}

// ---- few query rows (decode): S[r, j] = dot(Q[r], K[j]) straight from K's rows -----------------
// With R <= kDotRows rows a transposed K tile would cost as much as the product itself, so each
// key row is read once (from the tensor itself when it is float32) and dotted with all R rows.
constexpr int64_t kDotRows = 8;

template <int W>
MTO_INLINE float hsum_tree(const simd::Vec<W>& v) {
  if constexpr (W > 4) {
    // Halves are read from a whole copy: a partial read of the caller's vector would make GCC
    // keep the caller's whole accumulator array in memory (every FMA a load and a store).
    const simd::Vec<W> whole = v;
    simd::Vec<W / 2> lo, hi;
    std::memcpy(&lo, &whole, sizeof lo);
    std::memcpy(&hi, reinterpret_cast<const char*>(&whole) + sizeof lo, sizeof hi);
    simd::add<W / 2>(lo, hi);
    return hsum_tree<W / 2>(lo);
  } else {
    return (v[0] + v[1]) + (v[2] + v[3]);
  }
}

#if defined(MTO_HAS_SHUFFLE)
// Horizontal sums of n accumulators of W lanes at once (n = RR * KB in dots_block: a power of two
// up to W), as a tree of shuffles and adds: each level folds every group of lanes in half, pairing
// vectors (a last single vector with itself), so that the last vector holds accumulator i's sum
// in lane i. 2 shuffles and an add per pair and level, where summing each vector on its own takes
// log2(W) levels per vector.
constexpr int fold_lane(int W, int g, int o, bool hi) {  // source lane of output lane o
  const int half = g / 2, q = o / half, t = o % half + (hi ? half : 0), groups = W / g;
  return q < groups ? q * g + t : W + (q - groups) * g + t;
}
template <int W, int G, size_t... O>
MTO_INLINE void fold_pair(const simd::Vec<W>& a, const simd::Vec<W>& b, simd::Vec<W>& out,
                          std::index_sequence<O...>) {  // (vectors by reference: simd.h)
  out = __builtin_shufflevector(a, b, fold_lane(W, G, int(O), false)...) +
        __builtin_shufflevector(a, b, fold_lane(W, G, int(O), true)...);
}
// v[0..n) hold groups of G lanes; afterwards v[0..max(n/2, 1)) hold groups of G/2.
template <int W, int G>
MTO_INLINE void fold_level(simd::Vec<W>* v, int n) {
  if (n == 1) return fold_pair<W, G>(v[0], v[0], v[0], std::make_index_sequence<W>());
  MTO_UNROLL
  for (int i = 0; i < n / 2; ++i)
    fold_pair<W, G>(v[2 * i], v[2 * i + 1], v[i], std::make_index_sequence<W>());
}
template <int W, int G = W>
MTO_INLINE void reduce_all(simd::Vec<W>* v, int n) {
  if constexpr (G > 1) {
    fold_level<W, G>(v, n);
    reduce_all<W, G / 2>(v, n > 1 ? n / 2 : 1);
  }
}
#endif

// RR rows x KB keys at a time (independent accumulator chains for latency).
// pf0, pf1 (may be null): KB rows each (contiguous: ldk == D) prefetched a cache line at a time
// beside the loads, in address order. Decode reads K/V from memory once, with little arithmetic per
// byte: without prefetches a core keeps too few misses in flight, and in bursts they would stall
// it. The loads go across KB rows at once, an order that the hardware prefetchers follow poorly
// (a stream test here: 18-20 GB/s per thread against 25-28 for the same lines read in order);
// prefetching the same lines in order recovers most of it.
template <int RR, int KB, int W>
MTO_INLINE void dots_block(int64_t D, const float* __restrict Q, const float* __restrict K,
                           int64_t ldk, float* __restrict S, int64_t lds, const float* pf0,
                           const float* pf1) {
  using V = simd::Vec<W>;
  const int64_t Dv = D / W * W;
  // Every loop over acc is unrolled: one left rolled indexes the array, which puts all of it in
  // memory (each FMA then a load and a store).
  V acc[RR][KB];
  MTO_UNROLL
  for (int r = 0; r < RR; ++r)
    MTO_UNROLL
    for (int b = 0; b < KB; ++b) simd::splat<W>(acc[r][b], 0.f);
  for (int64_t d = 0; d < Dv; d += W) {
    if (d % 16 == 0)  // lines [d / 16 * KB, (d / 16 + 1) * KB) of the KB rows
      MTO_UNROLL
      for (int b = 0; b < KB; ++b) {
        if (pf0) simd::prefetch(pf0 + d * KB + 16 * b);
        if (pf1) simd::prefetch(pf1 + d * KB + 16 * b);
      }
    V kv[KB];
    MTO_UNROLL
    for (int b = 0; b < KB; ++b) simd::load<W>(kv[b], K + b * ldk + d);
    MTO_UNROLL
    for (int r = 0; r < RR; ++r) {
      V qv;
      simd::load<W>(qv, Q + r * D + d);
      MTO_UNROLL
      for (int b = 0; b < KB; ++b) simd::madd<W>(acc[r][b], qv, kv[b]);
    }
  }
#if defined(MTO_HAS_SHUFFLE)
  constexpr int kN = RR * KB;
  if constexpr (kN <= W && (kN & (kN - 1)) == 0) {  // one vector of all the sums: lane r * KB + b
    V all[kN];
    MTO_UNROLL
    for (int r = 0; r < RR; ++r)
      MTO_UNROLL
      for (int b = 0; b < KB; ++b) all[r * KB + b] = acc[r][b];
    reduce_all<W>(all, kN);
    float sums[W];
    simd::store<W>(sums, all[0]);
    if (Dv == D) {  // row r's KB sums are adjacent lanes: one copy each
      MTO_UNROLL
      for (int r = 0; r < RR; ++r) std::memcpy(S + r * lds, sums + r * KB, KB * sizeof(float));
      return;
    }
    MTO_UNROLL
    for (int r = 0; r < RR; ++r)
      MTO_UNROLL
      for (int b = 0; b < KB; ++b) {
        float s = sums[r * KB + b];
        for (int64_t d = Dv; d < D; ++d) s += Q[r * D + d] * K[b * ldk + d];
        S[r * lds + b] = s;
      }
    return;
  }
#endif
  MTO_UNROLL
  for (int r = 0; r < RR; ++r)
    MTO_UNROLL
    for (int b = 0; b < KB; ++b) {
      float s = hsum_tree<W>(acc[r][b]);
      for (int64_t d = Dv; d < D; ++d) s += Q[r * D + d] * K[b * ldk + d];
      S[r * lds + b] = s;
    }
}

// pf0, pf1 (may be null): rows to prefetch in step with K's rows (same stride), e.g. the next K
// tile and the V tile the product will read next.
template <int RR, int W>
MTO_INLINE void dots_rows(int64_t n, int64_t D, const float* Q, const float* K, int64_t ldk,
                          float* S, int64_t lds, const float* pf0, const float* pf1) {
  // Keys per block: RR * KB accumulators within the registers (8 of 16 with 8-float vectors, 16
  // of 32 with AVX-512), so each row of Q loaded serves KB keys.
  constexpr int kAcc = W >= 16 ? 16 : 8;
  constexpr int KB = RR <= kAcc / 4 ? 4 : RR <= kAcc / 2 ? 2 : 1;
  int64_t j = 0;
  for (; j + KB <= n; j += KB) {
    dots_block<RR, KB, W>(D, Q, K + j * ldk, ldk, S + j, lds, pf0 ? pf0 + j * ldk : nullptr,
                          pf1 ? pf1 + j * ldk : nullptr);
  }
  for (; j < n; ++j) dots_block<RR, 1, W>(D, Q, K + j * ldk, ldk, S + j, lds, nullptr, nullptr);
}

template <int W>
MTO_INLINE void dots(int64_t R, int64_t n, int64_t D, const float* Q, const float* K, int64_t ldk,
                     float* S, int64_t lds, const float* pf0 = nullptr,
                     const float* pf1 = nullptr) {
  switch (R) {
    case 1: return dots_rows<1, W>(n, D, Q, K, ldk, S, lds, pf0, pf1);
    case 2: return dots_rows<2, W>(n, D, Q, K, ldk, S, lds, pf0, pf1);
    case 3: return dots_rows<3, W>(n, D, Q, K, ldk, S, lds, pf0, pf1);
    case 4: return dots_rows<4, W>(n, D, Q, K, ldk, S, lds, pf0, pf1);
    case 5: return dots_rows<5, W>(n, D, Q, K, ldk, S, lds, pf0, pf1);
    case 6: return dots_rows<6, W>(n, D, Q, K, ldk, S, lds, pf0, pf1);
    case 7: return dots_rows<7, W>(n, D, Q, K, ldk, S, lds, pf0, pf1);
    default: return dots_rows<8, W>(n, D, Q, K, ldk, S, lds, pf0, pf1);
  }
}

// ---- few query rows (decode): O[R, Dp] += P[R, n] V[n, Dp] ---------------------------------------
// gemm's MR x 16 block would hold only R <= 8 rows x 1 vector of accumulators: each FMA would wait
// on the one before it. Here a block is up to 4 rows x NC vectors (16 independent chains with NC =
// 4), and V's rows stream once per block of rows.
template <int RR, int NC, int W>
MTO_INLINE void pv_block(int64_t n, const float* __restrict P, int64_t ldp,
                         const float* __restrict V, int64_t ldv, float* __restrict O, int64_t ldo) {
  using Vc = simd::Vec<W>;
  Vc acc[RR][NC];
  MTO_UNROLL
  for (int r = 0; r < RR; ++r)
    MTO_UNROLL
    for (int c = 0; c < NC; ++c) simd::load<W>(acc[r][c], O + r * ldo + c * W);
  for (int64_t j = 0; j < n; ++j) {
    Vc v[NC];
    MTO_UNROLL
    for (int c = 0; c < NC; ++c) simd::load<W>(v[c], V + j * ldv + c * W);
    MTO_UNROLL
    for (int r = 0; r < RR; ++r) {
      const float p = P[r * ldp + j];
      MTO_UNROLL
      for (int c = 0; c < NC; ++c) simd::madd<W>(acc[r][c], v[c], p);
    }
  }
  MTO_UNROLL
  for (int r = 0; r < RR; ++r)
    MTO_UNROLL
    for (int c = 0; c < NC; ++c) simd::store<W>(O + r * ldo + c * W, acc[r][c]);
}

// Dp (a multiple of kNR) columns: kNC vectors at a time, then kNR at a time. AVX2's 16 registers
// take 4 rows x 2 vectors (with 4 x 4 accumulators GCC spilled two of them to the stack every
// step); AVX-512's and NEON's 32 take 4 x 4.
template <int RR, int W>
MTO_INLINE void pv_rows(int64_t n, int64_t Dp, const float* P, int64_t ldp, const float* V,
                        int64_t ldv, float* O, int64_t ldo) {
  constexpr int kNC = W == 8 ? 2 : 4, kWide = kNC * W;
  int64_t d = 0;
  for (; d + kWide <= Dp; d += kWide) pv_block<RR, kNC, W>(n, P, ldp, V + d, ldv, O + d, ldo);
  for (; d < Dp; d += kNR) pv_block<RR, kNR / W, W>(n, P, ldp, V + d, ldv, O + d, ldo);
}

template <int W>
MTO_INLINE void pv(int64_t R, int64_t n, int64_t Dp, const float* P, int64_t ldp, const float* V,
                   int64_t ldv, float* O, int64_t ldo) {
  int64_t r = 0;
  for (; r + 4 <= R; r += 4) pv_rows<4, W>(n, Dp, P + r * ldp, ldp, V, ldv, O + r * ldo, ldo);
  switch (R - r) {
    case 1: return pv_rows<1, W>(n, Dp, P + r * ldp, ldp, V, ldv, O + r * ldo, ldo);
    case 2: return pv_rows<2, W>(n, Dp, P + r * ldp, ldp, V, ldv, O + r * ldo, ldo);
    case 3: return pv_rows<3, W>(n, Dp, P + r * ldp, ldp, V, ldv, O + r * ldo, ldo);
    default: return;
  }
}

// 2^x for x <= 0 (also -inf -> 0, NaN -> NaN), relative error ~2e-7, from plain float/int
// operations: round x to an integer n, a Cephes polynomial for 2^(x - n), 2^n from n's bits.
// The same steps on T = float (a scalar) or on a compiler vector (every lane at once, bit for bit
// the scalar's): GCC 12 vectorised the softmax loop over the scalar form in the AVX-512 build only;
// in the AVX2 and SSE2 builds it stayed scalar, ~27% of attention prefill's time on Zen 3.
template <class T, class I>  // (out by reference: simd.h)
MTO_INLINE void exp2_nonpos_lanes(const T& x, const T& lo, const T& zero, T& out) {
  const T xc = x < lo ? lo : x;     // lo = -126 (below it the result is 0, chosen at the end)
  const T t = xc + 12582912.f;       // 1.5 * 2^23: rounds xc to an integer n in t's low bits
  const T fn = t - 12582912.f;
  const T f = xc - fn;  // [-0.5, 0.5]
  // Cephes exp2f polynomial: 2^f = 1 + f P(f).
  T poly = f * 1.535336188319500e-4f + 1.339887440266574e-3f;
  poly = poly * f + 9.618437357674640e-3f;
  poly = poly * f + 5.550332471162809e-2f;
  poly = poly * f + 2.402264791363012e-1f;
  poly = poly * f + 6.931472028550421e-1f;
  poly = poly * f + 1.f;  // Horner: last step is 1 + f * P(f)
  I tb;
  std::memcpy(&tb, &t, sizeof tb);
  const I scale_bits = (tb - 0x4B400000u + 127u) << 23;  // 2^n
  T scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  const T r = poly * scale;
  out = x < lo ? zero : r;
}

MTO_INLINE float exp2_nonpos(float x) {
  float r;
  exp2_nonpos_lanes<float, uint32_t>(x, -126.f, 0.f, r);
  return r;
}

#if MTO_GNU_EXTENSIONS
template <int W> struct UintVecT { typedef uint32_t type __attribute__((vector_size(4 * W))); };
template <int W>  // (out by reference: simd.h)
MTO_INLINE void exp2_nonpos(const simd::Vec<W>& x, simd::Vec<W>& out) {
  using V = simd::Vec<W>;
  exp2_nonpos_lanes<V, typename UintVecT<W>::type>(x, V{} - 126.f, V{}, out);
}
#endif

}  // namespace mto::cpu::attention_tile
