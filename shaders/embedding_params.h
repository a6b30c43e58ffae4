// embedding (shaders/embedding.metal): buffer slots, geometry and parameters, declared once for
// the kernels and the host (native/core/plan/embedding.cc).
//
// out[i, :] = table[ids[i], :] for i < count: a dense table copied element for element (its own
// dtype), or a quantized one decoded to float32 by mx_dequant.h, as the cpu backend does.
#ifndef MTO_SHADERS_EMBEDDING_PARAMS_H
#define MTO_SHADERS_EMBEDDING_PARAMS_H

#include "kernel_abi.h"

#define EMB_BUFFER_IDS 0      // int32 ids, count of them (any shape, flat)
#define EMB_BUFFER_TABLE 1    // dense table [V, D], or a quantized table's codes
#define EMB_BUFFER_SCALES 2   // quantized: E8M0 bytes [V, D/32] or affine float16 [V, D/group]
#define EMB_BUFFER_BIASES 3   // affine: float16 [V, D/group]; else unused (bind any buffer)
#define EMB_BUFFER_OUT 4      // out [count, D]: the table's dtype, float32 for a quantized table
#define EMB_BUFFER_STATUS 5   // int32 [2]: the first flat index holding an id outside [0, V) (-1:
                              // none) and that id; written by threadgroup (0, 0)
#define EMB_BUFFER_PARAMS 6   // EmbeddingKernelParams (setBytes)

// A threadgroup copies or decodes EMB_PER_THREAD elements per thread of one output row: grid
// (count, ceil(D / (threads * EMB_PER_THREAD))), threads a power of two from 32 to
// EMB_MAX_THREADS (fewer for short rows).
#define EMB_MAX_THREADS 256
#define EMB_PER_THREAD 8

struct EmbeddingKernelParams {
  mto_i32 count, vocab, dim;
  mto_i32 group_size;  // affine group (32, 64, 128); 32 for MX formats; unused for dense tables
};

#endif  // MTO_SHADERS_EMBEDDING_PARAMS_H
