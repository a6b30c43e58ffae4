// The quantized linear kernels (shaders/qlinear.metal): buffer slots, tile geometry and
// parameters, declared once for the kernels and the host (native/core/plan/linear.cc).
//
// y[M, N] = x[M, K] @ dequantize(w)[N, K]^T (+ bias[N]), float32 accumulation, y stored in the
// op's output dtype (one kernel instance per x dtype and y dtype).
#ifndef MTO_SHADERS_QLINEAR_PARAMS_H
#define MTO_SHADERS_QLINEAR_PARAMS_H

#include "kernel_abi.h"

#define QLINEAR_BUFFER_X 0         // activations [M, K], row-major
#define QLINEAR_BUFFER_W_CODES 1   // packed weight codes, N rows of K * bits / 8 bytes
#define QLINEAR_BUFFER_W_SCALES 2  // MX: E8M0 bytes [N, K/32]; affine: float16 [N, K/group]
#define QLINEAR_BUFFER_W_BIASES 3  // affine: float16 [N, K/group]; MX: unused (bind any buffer)
#define QLINEAR_BUFFER_BIAS 4      // float32 [N] when has_bias; else unused (bind any buffer)
#define QLINEAR_BUFFER_Y 5         // y [M, N]: float32, float16 or bfloat16 (the instance's output type)
#define QLINEAR_BUFFER_PARAMS 6    // QLinearParams (setBytes)

// Decode kernel (M <= QLINEAR_DECODE_MAX_M): each SIMD-group owns ROWS_PER_SIMDGROUP weight rows
// and streams them once for all M rows of x; a threadgroup is SIMDGROUPS SIMD-groups.
#define QLINEAR_DECODE_MAX_M 8
#define QLINEAR_DECODE_SIMDGROUPS 2
#define QLINEAR_DECODE_ROWS_PER_SIMDGROUP 4

// Tiled kernel: a threadgroup computes a BM x BN tile of y, stepping through K by BK with x and
// dequantized w staged in threadgroup memory; its SIMDGROUPS SIMD-groups (2 x 2) each own a
// 16 x 16 quarter as 2 x 2 simdgroup_matrix 8x8 accumulators.
#define QLINEAR_GEMM_BM 32
#define QLINEAR_GEMM_BN 32
#define QLINEAR_GEMM_BK 64
#define QLINEAR_GEMM_SIMDGROUPS 4

// Tensorops tier (shaders/qlinear_tensorops.metal, MSL 4.0), M > QLINEAR_DECODE_MAX_M: the same
// BM x BN tiles with x and dequantized w staged BK columns at a time, multiplied by one matmul2d
// (execution_simdgroups<SIMDGROUPS>, mode::multiply_accumulate, dynamic K for the K tail) into a
// cooperative destination. M <= QLINEAR_DECODE_MAX_M runs qlinear_decode on this tier too.
#define QLINEAR_TOPS_BM 32
#define QLINEAR_TOPS_BN 32
#define QLINEAR_TOPS_BK 64
#define QLINEAR_TOPS_SIMDGROUPS 4
// float16/bfloat16 x: 64 x 64 tiles (each dequantized weight tile serves twice the rows of x) where
// the plan finds enough of them for the GPU's cores (native/core/dispatch_plan.h); their
// float32 staging (a weight block outside 16-bit range: mx_stage.h) steps K by
// QLINEAR_TOPS_BIG_FLOAT_BK, so that both stagings fit 22 KiB of threadgroup memory.
#define QLINEAR_TOPS_BIG 64
#define QLINEAR_TOPS_BIG_FLOAT_BK 32

// Tensorops-mx tier (shaders/qlinear_tensorops_mx.metal, MSL 4.1 scale planes), M > 8, weights
// whose element type Metal knows (mxfp8, mxfp8_e5m2, mxfp4) and float16 x: one matmul2d per
// BM x BN tile of y over the whole K, x and the weights with their E8M0 scale plane viewed in
// device memory. The weight rows must be a multiple of QLINEAR_MX_ROW_ALIGN bytes (the rule for
// buffer-backed format tensors, assumed for inline views: docs/design/METAL.md, test/msl/README.md)
#define QLINEAR_MX_BM 32
#define QLINEAR_MX_BN 32
#define QLINEAR_MX_SIMDGROUPS 4
#define QLINEAR_MX_ROW_ALIGN 128

struct QLinearParams {
  mto_i32 M, N, K;   // K a multiple of 32 (and of group_size)
  mto_i32 group_size;  // affine group (32, 64 or 128); 32 for MX formats
  mto_i32 has_bias;    // 1: add bias[n]
  mto_i32 reserved[3];  // keeps the struct 32 bytes
};

// groupedLinear (shaders/qlinear_grouped.metal): y[T, N] where rows [o_e, o_e + g_e) of x [T, K]
// use expert e of w [E, N, K], g = the int32 group sizes read when the op runs. Two passes:
// qlinear_grouped_route (one threadgroup) checks the sizes, writes the status and lists the
// non-empty groups in slots, each group cut into runs of at most block_rows rows (0: whole);
// then, for quantized w and T <= QLINEAR_GROUPED_MAX_T (decode), qlinear_grouped_decode (grid: N
// in decode rows x the slots) runs the decode kernel's dot products on each slot's rows with its
// expert's planes; else (prefill, and dense w at any T) qlinear_grouped_gemm (grid: N in BN
// columns x the slots) runs one BM x BN tile of qlinear_gemm's kind per slot of block_rows = BM
// rows. Tiled slots: ceil(T / BM) + min(E, T) (each non-empty group adds at most one partial tile).
#define QLINEAR_GROUPED_BUFFER_SIZES 7   // int32 group sizes [E]
#define QLINEAR_GROUPED_BUFFER_SLOTS 8   // int32 [slots][4]: expert, first row, rows, 0
#define QLINEAR_GROUPED_BUFFER_STATUS 9  // int32 [4]: QLINEAR_GROUPED_* what the route found, then
                                         // e and g_e (a negative size) or the sum's low, high halves
#define QLINEAR_GROUPED_MAX_T 64
#define QLINEAR_GROUPED_ROUTE_THREADS 256
#define QLINEAR_GROUPED_ROUTE_CHUNK 1024  // sizes staged in threadgroup memory at a time
#define QLINEAR_GROUPED_OK 0
#define QLINEAR_GROUPED_NEGATIVE 1  // status[1] = e, status[2] = g_e
#define QLINEAR_GROUPED_SUM 2       // status[2], status[3] = the sum's low and high 32 bits

struct QLinearGroupedParams {
  mto_i32 T, E, N, K;
  mto_i32 group_size;  // affine group (32, 64 or 128); 32 for MX formats; unused for dense w
  mto_i32 slots;       // decode: min(E, T), at most this many groups are non-empty; tiled: see above
  mto_i32 block_rows;  // the most rows of one slot: 0 (decode: a whole group), or QLINEAR_GEMM_BM
  mto_i32 reserved;    // keeps the struct 32 bytes
};

#endif  // MTO_SHADERS_QLINEAR_PARAMS_H
