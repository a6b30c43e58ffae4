// The softmax kernel (shaders/softmax.metal): softmax over the last axis, one threadgroup per
// row. Buffer slots, geometry and parameters, declared once for the kernels and the host
// (native/core/plan/softmax.cc). x and y of one dtype T (float32, float16 or bfloat16; softmax's
// output has x's dtype), float32 arithmetic, y rounded once.
#ifndef MTO_SHADERS_SOFTMAX_PARAMS_H
#define MTO_SHADERS_SOFTMAX_PARAMS_H

#include "kernel_abi.h"

#define SOFTMAX_BUFFER_X 0
#define SOFTMAX_BUFFER_Y 1
#define SOFTMAX_BUFFER_PARAMS 2  // SoftmaxKernelParams (setBytes)

// Threads per row: one per SOFTMAX_READS elements, in whole SIMD-groups, at most
// SOFTMAX_MAX_THREADS (a vocabulary row of 128256 loops about 125 times).
#define SOFTMAX_READS 4
#define SOFTMAX_MAX_THREADS 1024

struct SoftmaxKernelParams {
  mto_i32 cols;  // < 2^31
  mto_i32 reserved;
};

#endif  // MTO_SHADERS_SOFTMAX_PARAMS_H
