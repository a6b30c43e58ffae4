// Strided copies on the GPU (simdgroup tier, MSL 3.1), as MLX's copy_gg: every element of a
// CopyPart (core/ops.h) from its offset in src to its offset in dst, each offset worked out from
// the element's multi-index (shaders/nd_index.h). Bit-exact for any dtype of the element's size.
// Shapes and slots: copy_params.h; plan: native/core/plan/layout.cc.
#include <metal_stdlib>

#include "copy_params.h"
#include "nd_index.h"

using namespace metal;

template <typename E>
[[kernel]] void copy_strided(
    device const E* src [[buffer(COPY_BUFFER_SRC)]],
    device E* dst [[buffer(COPY_BUFFER_DST)]],
    constant CopyKernelParams& p [[buffer(COPY_BUFFER_PARAMS)]],
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  const uint total = uint(p.total);
  const uint first = group * uint(COPY_THREADS * COPY_RUN) + tid;
  for (uint r = 0; r < uint(COPY_RUN); ++r) {
    const uint e = first + r * uint(COPY_THREADS);
    if (e >= total) break;
    uint from, to;
    mto_nd_offsets2(e, p.rank, p.dims, p.src_strides, p.dst_strides, from, to);
    dst[uint(p.dst_offset) + to] = src[uint(p.src_offset) + from];
  }
}

MTO_KERNEL_INSTANCE("copy_strided_b8", copy_strided, uchar)
MTO_KERNEL_INSTANCE("copy_strided_b16", copy_strided, ushort)
MTO_KERNEL_INSTANCE("copy_strided_b32", copy_strided, uint)
