// The MX quantization kernels (shaders/quantize.metal): buffer slots, geometry and parameters,
// declared once for the kernels and the host (native/core/plan/quantize.cc).
#ifndef MTO_SHADERS_QUANTIZE_PARAMS_H
#define MTO_SHADERS_QUANTIZE_PARAMS_H

#include "kernel_abi.h"

#define MXQ_BUFFER_X 0       // float32/float16/bfloat16 [rows, cols], row-major
#define MXQ_BUFFER_CODES 1   // packed codes, rows * cols * bits / 8 bytes
#define MXQ_BUFFER_SCALES 2  // E8M0 bytes, rows * cols / 32
#define MXQ_BUFFER_PARAMS 3  // MxQuantizeParams (setBytes)

// One SIMD-group quantizes one 32-element block (a lane per element); a threadgroup holds this
// many SIMD-groups.
#define MXQ_SIMDGROUPS_PER_THREADGROUP 8

struct MxQuantizeParams {
  mto_i32 cols;            // elements per row, a multiple of 32
  mto_i32 blocks_per_row;  // cols / 32
  mto_i32 total_blocks;    // rows * blocks_per_row
  mto_i32 reserved;        // keeps the struct 16 bytes
};

#endif  // MTO_SHADERS_QUANTIZE_PARAMS_H
