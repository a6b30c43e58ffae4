// Dense matmul y[batch, M, N] = a[batch, M, K] @ b[K, N] (or b[batch, K, N]) for the simdgroup
// tier (Apple7+): a and b float32, float16 or bfloat16 (T, one dtype for both), float32
// accumulation, y of type Out rounded once per element as it is stored. matmul's output has the
// operands' dtype (check_matmul, native/core/ops.cc), so the instances have Out = T. Shapes and
// slots: matmul_params.h; which kernel runs: native/core/dispatch_plan.cc (plan_matmul).
//
// Tiles of y of BM x BN (32 x 32 x 32, or MLX's steel GEMM tile 64 x 64 x 16 when there are
// enough of them: matmul_params.h), a and b staged as T in threadgroup memory BK columns of K at a
// time (half the bytes of float for float16/bfloat16), four SIMD-groups each accumulating a
// quarter in simdgroup_matrix 8x8 tiles: T x T products into float accumulators, as llama.cpp's
// kernel_mul_mm and MLX's steel GEMM do with half operands. A thread stages runs of 8 elements:
// a run inside the matrix is copied without a test per element (as MLX's loaders copy whole
// vectors inside the matrix), a run that crosses its edge element by element, zeros past it. M, N and K need not be
// multiples of anything: rows, columns and K steps past the matrix are staged as zeros and never
// stored. The staged tiles and, after the K loop, y's float tile share one threadgroup array.
// linear with a dense weight runs here too (p.b_transposed: b is w [N, K], y = x @ w^T, plus an
// optional float32 bias): w's tile is staged as it lies, BN rows of BK (each thread reads a run
// along K), and loaded into the 8x8 matrices transposed.
#include <metal_stdlib>

#include "matmul_params.h"

using namespace metal;

// dst[0 .. RUN) = src[0 .. RUN) where the row is inside the matrix and `valid` of its elements
// are; zeros past them. A whole run is one unconditional contiguous copy (wide loads for the
// compiler to form); only a run at an edge tests each element.
template <typename T, int RUN>
inline void matmul_stage_run(threadgroup T* dst, device const T* src, bool row_in, uint valid) {
  if (row_in && valid >= uint(RUN)) {
    for (int i = 0; i < RUN; ++i) dst[i] = src[i];
  } else {
    for (int i = 0; i < RUN; ++i) dst[i] = row_in && uint(i) < valid ? src[i] : T(0);
  }
}

template <typename T, typename Out, int BM, int BN, int BK>
[[kernel]] void matmul_gemm(
    device const T* a [[buffer(MATMUL_BUFFER_A)]],
    device const T* b [[buffer(MATMUL_BUFFER_B)]],
    device Out* y [[buffer(MATMUL_BUFFER_Y)]],
    constant MatmulKernelParams& p [[buffer(MATMUL_BUFFER_PARAMS)]],
    device const float* bias [[buffer(MATMUL_BUFFER_BIAS)]],
    uint3 group [[threadgroup_position_in_grid]],
    ushort tid [[thread_index_in_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]]) {
  constexpr int THREADS = 32 * MATMUL_GEMM_SIMDGROUPS;
  constexpr int LDA = BK + 4, LDB = BN + 4;  // padded row strides: rows start in different banks
  constexpr int RUN = 8;                     // elements one thread stages per tile and operand
  constexpr int TM = BM / 16, TN = BN / 16;  // 8x8 tiles of a SIMD-group's quarter, down and across
  static_assert(BM * BK == THREADS * RUN && BK * BN == THREADS * RUN, "loader covers the tiles");
  static_assert(MATMUL_GEMM_SIMDGROUPS == 4 && BM % 16 == 0 && BN % 16 == 0 && BK % 8 == 0, "2 x 2 quarters");
  // In elements of T: a's tile (BM rows of BK), then b's (BK rows of BN) or w's (BN rows of BK).
  constexpr int A_ELEMS = BM * LDA, B_ELEMS = BK * LDB > BN * LDA ? BK * LDB : BN * LDA;
  constexpr int STAGE_FLOATS = ((A_ELEMS + B_ELEMS) * int(sizeof(T)) + 3) / 4;
  constexpr int SMEM = STAGE_FLOATS > BM * BN ? STAGE_FLOATS : BM * BN;
  threadgroup float smem[SMEM];
  threadgroup T* a_tile = (threadgroup T*)&smem[0];
  threadgroup T* b_tile = a_tile + A_ELEMS;  // b: stride LDB; w (b_transposed): stride LDA
  threadgroup float* y_tile = &smem[0];      // BM rows of BN, once the K loop is done
  const bool bt = p.b_transposed != 0;

  const uint M = uint(p.M), N = uint(p.N), K = uint(p.K);
  const uint m0 = group.y * BM, n0 = group.x * BN;
  a += ulong(group.z) * ulong(M) * ulong(K);
  if (p.b_batched) b += ulong(group.z) * ulong(K) * ulong(N);
  y += ulong(group.z) * ulong(M) * ulong(N);
  // This thread's staging runs: row ar of the a (or w) tile from column ac; row br of the b tile
  // from bc.
  const uint ar = tid / (BK / RUN), ac = (tid % (BK / RUN)) * RUN;
  const uint br = tid / (BN / RUN), bc = (tid % (BN / RUN)) * RUN;
  const uint sm = (simd / 2) * (BM / 2), sn = (simd % 2) * (BN / 2);  // this SIMD-group's quarter

  simdgroup_float8x8 acc[TM][TN];
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);

  for (uint k0 = 0; k0 < K; k0 += BK) {
    // The tiles of the previous step must be consumed before they are overwritten.
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const uint m = m0 + ar, ka = k0 + ac;
    const uint k_left = ka < K ? K - ka : 0u;  // elements of the run inside K
    matmul_stage_run<T, RUN>(a_tile + ar * LDA + ac, a + ulong(m) * K + ka, m < M, k_left);
    if (bt) {
      // Row n of w, columns ka.. (the a loader's run shape: BN = BM rows of BK).
      const uint n = n0 + ar;
      matmul_stage_run<T, RUN>(b_tile + ar * LDA + ac, b + ulong(n) * K + ka, n < N, k_left);
    } else {
      const uint kb = k0 + br, n = n0 + bc;
      matmul_stage_run<T, RUN>(b_tile + br * LDB + bc, b + ulong(kb) * N + n, kb < K, n < N ? N - n : 0u);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    for (int kk = 0; kk < BK; kk += 8) {
      simdgroup_matrix<T, 8, 8> sa[TM], sb[TN];
      for (int i = 0; i < TM; ++i) simdgroup_load(sa[i], a_tile + (sm + 8 * i) * LDA + kk, LDA);
      for (int j = 0; j < TN; ++j) {
        if (bt) simdgroup_load(sb[j], b_tile + (sn + 8 * j) * LDA + kk, LDA, ulong2(0, 0), true);
        else simdgroup_load(sb[j], b_tile + kk * LDB + sn + 8 * j, LDB);
      }
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) simdgroup_multiply_accumulate(acc[i][j], sa[i], sb[j], acc[i][j]);
    }
  }

  // Through threadgroup memory, so that edge tiles store only the elements inside y. y's tile
  // takes the staged tiles' place: every SIMD-group must be done with them.
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) simdgroup_store(acc[i][j], y_tile + (sm + 8 * i) * BN + sn + 8 * j, BN);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint e = tid; e < uint(BM * BN); e += THREADS) {
    const uint r = e / BN, c = e % BN;
    if (m0 + r < M && n0 + c < N) y[ulong(m0 + r) * N + n0 + c] = Out(y_tile[e] + (p.has_bias ? bias[n0 + c] : 0.0f));
  }
}

// Host names: matmul_gemm_<dtype> (32 x 32 x 32) and matmul_gemm_<dtype>_t64 (64 x 64 x 16).
#define MTO_MATMUL_GEMM(T, tname)                                                                              \
  MTO_KERNEL_INSTANCE("matmul_gemm_" tname, matmul_gemm, T, T, MATMUL_GEMM_BM, MATMUL_GEMM_BN, MATMUL_GEMM_BK) \
  MTO_KERNEL_INSTANCE("matmul_gemm_" tname "_t64", matmul_gemm, T, T, MATMUL_GEMM_BIG, MATMUL_GEMM_BIG,        \
                      MATMUL_GEMM_BIG_BK)
MTO_MATMUL_GEMM(float, "f32")
MTO_MATMUL_GEMM(half, "f16")
MTO_MATMUL_GEMM(bfloat, "bf16")
