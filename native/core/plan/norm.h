// Dispatch plan of rmsNorm and layerNorm (shaders/norm.metal; core/ops.h NormParams).
#pragma once
#include <optional>

#include "../dispatch_plan.h"

namespace mto::plan {

// y = norm(x) over rows of p.cols, x of dtype x and y of dtype y (x's: check_norm), weight and
// bias each absent or of any float dtype. One threadgroup per row, of at most NORM_MAX_THREADS
// threads and at most `max_threads` (the pipeline's maxTotalThreadsPerThreadgroup: the host plans
// again with it when it is below what the plan chose), in whole SIMD-groups. Throws E_DTYPE (not
// a float dtype, y other than x), E_SHAPE (rows or cols past 32-bit indices), E_BACKEND
// (Tier::Cpu, max_threads below 32). Slots: X, Weight, Bias, Y (Weight, Bias Unused when absent).
Dispatch plan_norm(const NormParams& p, DType x, DType y, std::optional<DType> weight, std::optional<DType> bias,
                   Tier tier, uint32_t max_threads = 1024);

}  // namespace mto::plan
