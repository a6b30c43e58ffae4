// Dispatch plan of groupedLinear (shaders/qlinear_grouped.metal): a route pass over the group
// sizes, then the decode or the tiled pass over the non-empty groups. And how the host reads
// what the route found in the sizes (a kernel cannot throw).
#pragma once
#include <cstdint>
#include <vector>

#include "../backend.h"
#include "../dispatch_plan.h"
#include "../ops.h"

namespace mto::plan {

struct GroupedLinearPlan {
  std::vector<Dispatch> passes;  // run in order: qlinear_grouped_route, qlinear_grouped_{decode,gemm}_*
  uint64_t slots_bytes = 0;      // scratch bound as Arg::GroupSlots, written by the first pass
};

// y = groupedLinear(x, w, group sizes) as check_grouped_linear (core/ops.h) describes it, x
// dense of dtype x (float32, float16 or bfloat16), w quantized with format f and block `block`,
// y of dtype y (float32, float16 or bfloat16; one rounding per element). Every metal tier runs
// these simdgroup-tier kernels: up to QLINEAR_GROUPED_MAX_T rows the decode pass (each expert's
// weights streamed once for its rows), more rows the tiled pass (one BM x BN tile per slot of at
// most BM rows of one group). Throws E_SHAPE (no rows or experts, K not a multiple of 32 and of
// the block, sizes past 32-bit indices), E_DTYPE, E_FORMAT, E_BACKEND (Tier::Cpu).
GroupedLinearPlan plan_grouped_linear(const GroupedLinearParams& p, Format f, int block, DType x, DType y,
                                      Tier tier);
// The same for a dense w [E, N, K] of dtype w (float32, float16 or bfloat16; any K): the tiled
// pass at every T, w bound as Arg::Weight.
GroupedLinearPlan plan_grouped_linear_dense(const GroupedLinearParams& p, DType w, DType x, DType y, Tier tier);
// Bytes of the status buffer (Arg::Status): four int32.
constexpr uint64_t kGroupedLinearStatusBytes = 4 * sizeof(int32_t);
// What the route pass wrote there, as the op's status: OK, or E_ARG with the cpu backend's
// message (the first negative size, else a sum other than T).
OpStatus grouped_linear_status(const int32_t* status, const GroupedLinearParams& p);

}  // namespace mto::plan
