// The dense matmul kernels (shaders/matmul.metal, shaders/matmul_tensorops.metal): buffer slots,
// tile geometry and parameters, declared once for the kernels and the host
// (native/core/plan/matmul.cc).
//
// y[batch, M, N] = a[batch, M, K] @ b[K, N] (b shared by every batch) or b[batch, K, N]; a and b
// of one dtype T (float32, float16 or bfloat16), float32 accumulation, y of T as well (matmul's
// output dtype is its operands'), rounded once per element as it is stored. The simdgroup kernel
// also runs linear with a dense weight: b_transposed, b is w [N, K] (y = x @ w^T), plus an
// optional float32 bias [N].
#ifndef MTO_SHADERS_MATMUL_PARAMS_H
#define MTO_SHADERS_MATMUL_PARAMS_H

#include "kernel_abi.h"

#define MATMUL_BUFFER_A 0       // T [batch, M, K], row-major
#define MATMUL_BUFFER_B 1       // T [K, N] or [batch, K, N], row-major
#define MATMUL_BUFFER_Y 2       // T [batch, M, N]
#define MATMUL_BUFFER_PARAMS 3  // MatmulKernelParams (setBytes)
#define MATMUL_BUFFER_BIAS 4    // float32 [N] when has_bias (the simdgroup kernel only)

// Simdgroup tier: a threadgroup computes a BM x BN tile of one batch's y, stepping through K by
// BK with a and b staged as T in threadgroup memory; its SIMDGROUPS SIMD-groups (2 x 2) each own a
// quarter as simdgroup_matrix 8x8 accumulators (float). Two shapes: 32 x 32 x 32 (16 x 16
// quarters), and MLX's steel GEMM tile 64 x 64 x 16 (32 x 32 quarters: each staged element feeds
// twice the products) where the plan finds enough of them for the GPU's cores
// (native/core/dispatch_plan.h, takes_big_tiles).
#define MATMUL_GEMM_BM 32
#define MATMUL_GEMM_BN 32
#define MATMUL_GEMM_BK 32
#define MATMUL_GEMM_BIG 64
#define MATMUL_GEMM_BIG_BK 16
#define MATMUL_GEMM_SIMDGROUPS 4

// Tensorops tier (MSL 4.0): one matmul2d per BM x BN tile of y over the whole K, operands viewed
// straight in device memory (no staging), execution_simdgroups<SIMDGROUPS>. Tiles of
// MATMUL_TOPS_BIG square (each operand element read half as often, as MLX's NAX GEMM tiles) where
// the plan finds enough of them for the GPU's cores (takes_big_tiles); MATMUL_TOPS_BM x BN
// otherwise.
#define MATMUL_TOPS_BM 32
#define MATMUL_TOPS_BN 32
#define MATMUL_TOPS_BIG 64
#define MATMUL_TOPS_SIMDGROUPS 4

struct MatmulKernelParams {
  mto_i32 M, N, K;     // each of M * K, K * N, M * N fits in 32 bits; batch offsets are 64-bit
  mto_i32 b_batched;   // 1: b is [batch, K, N]; 0: one b for every batch
  mto_i32 b_transposed;  // 1: b is [N, K] (a linear's weight; simdgroup kernel only), b_batched 0
  mto_i32 has_bias;      // 1: y += bias[n] (simdgroup kernel only)
};

#endif  // MTO_SHADERS_MATMUL_PARAMS_H
