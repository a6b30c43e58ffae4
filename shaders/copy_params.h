// The strided copy kernel (shaders/copy.metal) behind transpose, slice, concat and write
// (core/ops.h CopyPart): buffer slots, geometry and parameters, declared once for the kernels and
// the host (native/core/plan/layout.cc).
//
// Element idx of the iteration shape `dims` (innermost last) goes from src[src_offset + idx .
// src_strides] to dst[dst_offset + idx . dst_strides], bit for bit: elements of 1, 2 or 4 bytes
// (bool; float16, bfloat16; float32, int32) are moved as unsigned integers.
#ifndef MTO_SHADERS_COPY_PARAMS_H
#define MTO_SHADERS_COPY_PARAMS_H

#include "kernel_abi.h"

#define COPY_BUFFER_SRC 0
#define COPY_BUFFER_DST 1     // written only at the part's elements (write: in place)
#define COPY_BUFFER_PARAMS 2  // CopyKernelParams (setBytes)

// A threadgroup of COPY_THREADS threads moves COPY_THREADS * COPY_RUN consecutive elements of the
// iteration (thread t: elements t, t + COPY_THREADS, ...).
#define COPY_THREADS 256
#define COPY_RUN 4
// The most dimensions a part may keep after core/ops_layout.cc merges what it can.
#define COPY_MAX_DIMS 6

struct CopyKernelParams {
  mto_i32 total;  // elements of the iteration (< 2^31)
  mto_i32 rank;   // 1..COPY_MAX_DIMS
  mto_i32 src_offset, dst_offset;  // in elements; every index reached stays below 2^31
  mto_i32 dims[COPY_MAX_DIMS];
  mto_i32 src_strides[COPY_MAX_DIMS];
  mto_i32 dst_strides[COPY_MAX_DIMS];
};

#endif  // MTO_SHADERS_COPY_PARAMS_H
