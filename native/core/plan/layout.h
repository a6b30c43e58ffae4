// Dispatch plan of one strided copy (shaders/copy.metal; core/ops.h CopyPart): a part of
// transpose, slice, concat or write.
#pragma once
#include "../dispatch_plan.h"

namespace mto::plan {

// Copies `part` from a tensor of `src_elements` elements of dtype t into one of `dst_elements`
// (t of 1, 2 or 4 bytes: every dtype). Throws E_SHAPE (more than COPY_MAX_DIMS dimensions, an
// index past 32 bits, or a part that reaches outside either tensor), E_BACKEND (Tier::Cpu).
// Slots: Src, Dst.
Dispatch plan_copy(const CopyPart& part, DType t, int64_t src_elements, int64_t dst_elements, Tier tier);

}  // namespace mto::plan
