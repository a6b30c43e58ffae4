// The normalization kernels (shaders/norm.metal): rmsNorm and layerNorm over the last axis, one
// threadgroup per row. Buffer slots, geometry and parameters, declared once for the kernels and
// the host (native/core/plan/norm.cc).
//
// y = (x - mean) / sqrt(var + eps) * weight + bias (rmsNorm: no mean, var = mean of squares, no
// bias), x of dtype T (float32, float16 or bfloat16) and y of T; weight and bias optional, each
// of any float dtype (read through the dtype codes below); statistics in float32.
#ifndef MTO_SHADERS_NORM_PARAMS_H
#define MTO_SHADERS_NORM_PARAMS_H

#include "kernel_abi.h"

#define NORM_BUFFER_X 0
#define NORM_BUFFER_WEIGHT 1  // [cols], or unused (NORM_DTYPE_NONE)
#define NORM_BUFFER_BIAS 2    // [cols], or unused
#define NORM_BUFFER_Y 3
#define NORM_BUFFER_PARAMS 4  // NormKernelParams (setBytes)

// Threads per row: one per NORM_READS elements of the row, in whole SIMD-groups, at most
// NORM_MAX_THREADS (longer rows loop).
#define NORM_READS 4
#define NORM_MAX_THREADS 1024

// Element types of weight and bias (params.weight_dtype, params.bias_dtype).
#define NORM_DTYPE_NONE (-1)
#define NORM_DTYPE_F32 0
#define NORM_DTYPE_F16 1
#define NORM_DTYPE_BF16 2

struct NormKernelParams {
  mto_i32 cols;  // < 2^31
  mto_i32 layer;  // 1: layerNorm (mean subtracted, bias allowed); 0: rmsNorm
  mto_i32 weight_dtype, bias_dtype;
  float eps;      // >= 0
  mto_i32 reserved;
};

#endif  // MTO_SHADERS_NORM_PARAMS_H
