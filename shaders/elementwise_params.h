// The elementwise kernels (shaders/elementwise.metal): buffer slots, geometry and parameters,
// declared once for the kernels and the host (native/core/plan/elementwise.cc).
//
// out = op(a) or op(a, b) with NumPy broadcasting (core/ops.h Broadcast): the output is dense in
// the merged iteration shape `dims` (innermost last), a and b are read at element offsets
// idx . a_strides and idx . b_strides (0 where an operand repeats). Inputs float32, float16 or
// bfloat16, each in its own dtype; computed in float32; out of the inputs' dtype when they agree,
// else float32 (check_binary), rounded once as it is stored.
#ifndef MTO_SHADERS_ELEMENTWISE_PARAMS_H
#define MTO_SHADERS_ELEMENTWISE_PARAMS_H

#include "kernel_abi.h"

#define ELEMENTWISE_BUFFER_A 0       // unary: x
#define ELEMENTWISE_BUFFER_B 1       // binary only
#define ELEMENTWISE_BUFFER_OUT 2     // dense, the output's dtype
#define ELEMENTWISE_BUFFER_PARAMS 3  // ElementwiseKernelParams (setBytes)

// A threadgroup of THREADS threads covers THREADS * RUN consecutive output elements; thread t
// handles elements t, t + THREADS, ... of its block, so each step's accesses are contiguous.
#define ELEMENTWISE_THREADS 256
#define ELEMENTWISE_RUN 4
// The most merged dimensions the strided kernel takes (broadcast_shapes merges what it can; more
// needs alternating broadcast patterns, which the cpu backend runs).
#define ELEMENTWISE_MAX_DIMS 6

// Op codes (params.op), named as core/ops.h's UnaryOp and BinaryOp.
#define ELEMENTWISE_SILU 0
#define ELEMENTWISE_GELU 1
#define ELEMENTWISE_GELU_TANH 2
#define ELEMENTWISE_ADD 0
#define ELEMENTWISE_MUL 1
#define ELEMENTWISE_SWIGLU 2  // silu(a) * b
#define ELEMENTWISE_SWIGLU_OAI 3  // g sigmoid(alpha g) (u + 1), g = min(a, limit), u = clamp(b, +-limit)

struct ElementwiseKernelParams {
  mto_i32 op;
  mto_i32 total;  // output elements (< 2^31)
  mto_i32 rank;   // merged dimensions, 1..ELEMENTWISE_MAX_DIMS
  // The contiguous kernels: a's and b's stride along the one dimension, 0 (one value repeated)
  // or 1.
  mto_i32 a_step, b_step;
  mto_i32 dims[ELEMENTWISE_MAX_DIMS];  // the strided kernel: the merged shape, innermost last
  mto_i32 a_strides[ELEMENTWISE_MAX_DIMS];
  mto_i32 b_strides[ELEMENTWISE_MAX_DIMS];
  float alpha, limit;  // ELEMENTWISE_SWIGLU_OAI
};

#endif  // MTO_SHADERS_ELEMENTWISE_PARAMS_H
