// Strided copy plan (layout.h). Slots and geometry come from shaders/copy_params.h, which the
// kernel includes too.
#include "layout.h"

#include "../../../shaders/copy_params.h"
#include "plan_util.h"

namespace mto::plan {

using namespace util;

static_assert(sizeof(CopyKernelParams) == 4 * (4 + 3 * COPY_MAX_DIMS), "CopyKernelParams layout");

Dispatch plan_copy(const CopyPart& part, DType t, int64_t src_elements, int64_t dst_elements, Tier tier) {
  require_metal(tier);
  const size_t rank = part.dims.size();
  if (rank == 0 || part.src_strides.size() != rank || part.dst_strides.size() != rank) {
    throw Error(code::Shape, "copy: a part without dimensions");
  }
  if (rank > COPY_MAX_DIMS) {
    throw Error(code::Shape, "the Metal copy kernel takes at most " + std::to_string(COPY_MAX_DIMS) +
                                 " dimensions after merging, got " + std::to_string(rank));
  }
  CopyKernelParams kp = {};
  int64_t total = 1, src_last = part.src_offset, dst_last = part.dst_offset;
  for (size_t k = 0; k < rank; ++k) {
    if (part.dims[k] <= 0 || part.src_strides[k] < 0 || part.dst_strides[k] < 0) {
      throw Error(code::Shape, "copy: dimensions must be positive and strides non-negative");
    }
    total *= part.dims[k];
    check_i32("copy elements", total);
    src_last += (part.dims[k] - 1) * part.src_strides[k];
    dst_last += (part.dims[k] - 1) * part.dst_strides[k];
    kp.dims[k] = int32_t(part.dims[k]);
    kp.src_strides[k] = int32_t(part.src_strides[k]);
    kp.dst_strides[k] = int32_t(part.dst_strides[k]);
  }
  check_i32("copy source index", src_last);
  check_i32("copy destination index", dst_last);
  if (part.src_offset < 0 || part.dst_offset < 0 || src_last >= src_elements || dst_last >= dst_elements) {
    throw Error(code::Shape, "copy: the part reaches outside its tensors");
  }
  kp.total = int32_t(total);
  kp.rank = int32_t(rank);
  kp.src_offset = int32_t(part.src_offset);
  kp.dst_offset = int32_t(part.dst_offset);

  Dispatch d;
  d.library = "copy";
  d.kernel = std::string("copy_strided_b") + std::to_string(8 * dtype_size(t));
  d.tier = Tier::Simdgroup;
  d.threadgroups[0] = ceil_div(total, COPY_THREADS * COPY_RUN);
  d.threads_per_threadgroup[0] = COPY_THREADS;
  d.buffers = {{COPY_BUFFER_SRC, Arg::Src}, {COPY_BUFFER_DST, Arg::Dst}, {COPY_BUFFER_PARAMS, Arg::Params}};
  d.params = bytes_of(kp);
  return d;
}

}  // namespace mto::plan
