// Dense matmul y[batch, M, N] = a[batch, M, K] @ b[K, N] (or b[batch, K, N]) for the simdgroup
// tier (Apple7+): a and b float32, float16 or bfloat16 (T, one dtype for both), float32
// accumulation, y of type Out rounded once per element as it is stored. matmul's output has the
// operands' dtype (check_matmul, native/core/ops.cc), so the instances have Out = T. Shapes and
// slots: matmul_params.h; which kernel runs: native/core/dispatch_plan.cc (plan_matmul).
//
// 32 x 32 tiles of y; a and b staged as T in threadgroup memory 32 columns of K at a time (half
// the bytes of float for float16/bfloat16), four SIMD-groups each accumulating a 16 x 16 quarter
// in simdgroup_matrix 8x8 tiles: T x T products into float accumulators, as llama.cpp's
// kernel_mul_mm does with half operands. M, N and K need not be multiples of anything: rows,
// columns and K steps past the matrix are staged as zeros and never stored.
// linear with a dense weight runs here too (p.b_transposed: b is w [N, K], y = x @ w^T, plus an
// optional float32 bias): w's tile is staged as it lies, BN rows of BK (each thread reads a run
// along K), and loaded into the 8x8 matrices transposed.
#include <metal_stdlib>

#include "matmul_params.h"

using namespace metal;

template <typename T, typename Out>
[[kernel]] void matmul_gemm(
    device const T* a [[buffer(MATMUL_BUFFER_A)]],
    device const T* b [[buffer(MATMUL_BUFFER_B)]],
    device Out* y [[buffer(MATMUL_BUFFER_Y)]],
    constant MatmulKernelParams& p [[buffer(MATMUL_BUFFER_PARAMS)]],
    device const float* bias [[buffer(MATMUL_BUFFER_BIAS)]],
    uint3 group [[threadgroup_position_in_grid]],
    ushort tid [[thread_index_in_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]]) {
  constexpr int BM = MATMUL_GEMM_BM, BN = MATMUL_GEMM_BN, BK = MATMUL_GEMM_BK;
  constexpr int THREADS = 32 * MATMUL_GEMM_SIMDGROUPS;
  constexpr int LDA = BK + 4, LDB = BN + 4;  // padded row strides: rows start in different banks
  constexpr int RUN = 8;                     // elements one thread stages per tile and operand
  static_assert(BM * BK == THREADS * RUN && BK * BN == THREADS * RUN, "loader covers the tiles");
  static_assert(BM == 32 && BN == 32 && MATMUL_GEMM_SIMDGROUPS == 4, "2 x 2 SIMD-groups of 16 x 16");
  static_assert(BN * LDA <= BK * LDB, "w's tile (BN rows of BK) fits where b's goes");

  threadgroup T a_tile[BM][LDA];
  threadgroup T b_tile[BK][LDB];  // b: BK rows of BN; w (b_transposed): BN rows of BK, stride LDA
  threadgroup T* w_tile = &b_tile[0][0];
  const bool bt = p.b_transposed != 0;
  threadgroup float y_tile[BM][BN];

  const uint M = uint(p.M), N = uint(p.N), K = uint(p.K);
  const uint m0 = group.y * BM, n0 = group.x * BN;
  a += ulong(group.z) * ulong(M) * ulong(K);
  if (p.b_batched) b += ulong(group.z) * ulong(K) * ulong(N);
  y += ulong(group.z) * ulong(M) * ulong(N);
  // This thread's staging runs: row ar of the a tile from column ac; row br of the b tile from bc.
  const uint ar = tid / (BK / RUN), ac = (tid % (BK / RUN)) * RUN;
  const uint br = tid / (BN / RUN), bc = (tid % (BN / RUN)) * RUN;
  const uint sm = (simd / 2) * 16, sn = (simd % 2) * 16;  // this SIMD-group's quarter

  simdgroup_float8x8 acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);

  for (uint k0 = 0; k0 < K; k0 += BK) {
    // The tiles of the previous step must be consumed before they are overwritten.
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const uint m = m0 + ar, ka = k0 + ac;
    for (int i = 0; i < RUN; ++i)
      a_tile[ar][ac + i] = (m < M && ka + uint(i) < K) ? a[ulong(m) * K + ka + uint(i)] : T(0);
    if (bt) {
      // Row n of w, columns k.. (the a loader's run shape: BN = BM rows of BK).
      const uint n = n0 + ar, kw = k0 + ac;
      for (int i = 0; i < RUN; ++i)
        w_tile[ar * LDA + ac + uint(i)] = (n < N && kw + uint(i) < K) ? b[ulong(n) * K + kw + uint(i)] : T(0);
    } else {
      const uint kb = k0 + br, n = n0 + bc;
      for (int i = 0; i < RUN; ++i)
        b_tile[br][bc + i] = (kb < K && n + uint(i) < N) ? b[ulong(kb) * N + n + uint(i)] : T(0);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    for (int kk = 0; kk < BK; kk += 8) {
      simdgroup_matrix<T, 8, 8> sa[2], sb[2];
      for (int i = 0; i < 2; ++i) simdgroup_load(sa[i], &a_tile[sm + 8 * i][kk], LDA);
      for (int j = 0; j < 2; ++j) {
        if (bt) simdgroup_load(sb[j], &w_tile[(sn + 8 * j) * LDA + kk], LDA, ulong2(0, 0), true);
        else simdgroup_load(sb[j], &b_tile[kk][sn + 8 * j], LDB);
      }
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) simdgroup_multiply_accumulate(acc[i][j], sa[i], sb[j], acc[i][j]);
    }
  }

  // Through threadgroup memory, so that edge tiles store only the elements inside y.
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) simdgroup_store(acc[i][j], &y_tile[sm + 8 * i][sn + 8 * j], BN);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint e = tid; e < uint(BM * BN); e += THREADS) {
    const uint r = e / BN, c = e % BN;
    if (m0 + r < M && n0 + c < N) y[ulong(m0 + r) * N + n0 + c] = Out(y_tile[r][c] + (p.has_bias ? bias[n0 + c] : 0.0f));
  }
}

MTO_KERNEL_INSTANCE("matmul_gemm_f32", matmul_gemm, float, float)
MTO_KERNEL_INSTANCE("matmul_gemm_f16", matmul_gemm, half, half)
MTO_KERNEL_INSTANCE("matmul_gemm_bf16", matmul_gemm, bfloat, bfloat)
