// Dispatch plan of groupRows (shaders/group_rows.metal): the count, scan and scatter passes of a
// stable counting sort on the GPU. And how the host reads what the scan found in the ids (a
// kernel cannot throw).
#pragma once
#include <cstdint>
#include <vector>

#include "../backend.h"
#include "../dispatch_plan.h"
#include "../ops.h"

namespace mto::plan {

struct GroupRowsPlan {
  std::vector<Dispatch> passes;  // run in order: group_rows_count, group_rows_scan, group_rows_scatter
  uint64_t counts_bytes = 0;     // scratch bound as Arg::GroupSlots (chunks * groups int32)
};

// sizes, rows, positions = groupRows(ids, groups) as check_group_rows (core/ops.h) describes it.
// Slots: Ids (input), GroupSizes (sizes), Rows, Positions, GroupSlots (scratch), Status, Params.
// Every metal tier runs these simdgroup-tier kernels. Throws E_SHAPE for no entries (nothing to
// sort: the cpu backend writes the zero sizes), more than 2^31 - 1 entries, or more chunks times
// groups than GROUP_ROWS_MAX_COUNTS (the scan pass is one threadgroup: the cpu backend runs such
// sorts); E_BACKEND (Tier::Cpu).
GroupRowsPlan plan_group_rows(const GroupRowsParams& p, Tier tier);
// Bytes of the status buffer (Arg::Status): two int32.
constexpr uint64_t kGroupRowsStatusBytes = 2 * sizeof(int32_t);
// What the scan pass wrote there, as the op's status: OK, or E_ARG with the cpu backend's message
// for the first id outside [0, groups).
OpStatus group_rows_status(const int32_t* status, const GroupRowsParams& p);

}  // namespace mto::plan
