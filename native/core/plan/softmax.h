// Dispatch plan of softmax over the last axis (shaders/softmax.metal; core/ops.h RowsParams).
#pragma once
#include "../dispatch_plan.h"

namespace mto::plan {

// y = softmax(x) over rows of p.cols, x of dtype x and y of dtype y (x's: check_softmax). One
// threadgroup per row, any width (rows of 128256 loop), of at most SOFTMAX_MAX_THREADS threads and
// at most `max_threads` (the pipeline's maxTotalThreadsPerThreadgroup: the host plans again with
// it when it is below what the plan chose), in whole SIMD-groups. Throws E_DTYPE, E_SHAPE (past
// 32-bit indices), E_BACKEND (Tier::Cpu, max_threads below 32). Slots: X, Y.
Dispatch plan_softmax(const RowsParams& p, DType x, DType y, Tier tier, uint32_t max_threads = 1024);

}  // namespace mto::plan
