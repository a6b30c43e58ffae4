// Plan of groupRows (plan/group_rows.h).
#include "group_rows.h"

#include <string>

#include "../../../shaders/group_rows_params.h"
#include "kernel_args.h"

namespace mto::plan {

static_assert(sizeof(GroupRowsKernelParams) == 16, "GroupRowsKernelParams layout");

GroupRowsPlan plan_group_rows(const GroupRowsParams& p, Tier tier) {
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
  const int64_t count = p.rows * p.k;
  if (count <= 0) throw Error(code::Shape, "the Metal groupRows kernels need entries to sort; ids holds none");
  require_i32("T * k", count);
  require_i32("groups", p.groups);
  const int64_t chunks = (count + GROUP_ROWS_CHUNK - 1) / GROUP_ROWS_CHUNK;
  if (p.groups < 1 || chunks * p.groups > GROUP_ROWS_MAX_COUNTS) {
    throw Error(code::Shape, "the Metal groupRows kernels take up to " + std::to_string(GROUP_ROWS_MAX_COUNTS) +
                                 " chunks of " + std::to_string(GROUP_ROWS_CHUNK) + " entries times groups; got " +
                                 std::to_string(chunks) + " chunks and " + std::to_string(p.groups) + " groups");
  }
  GroupRowsKernelParams kp = {};
  kp.count = int32_t(count);
  kp.k = int32_t(p.k);
  kp.groups = int32_t(p.groups);
  kp.chunks = int32_t(chunks);

  auto pass = [&](const char* kernel, uint32_t grid, std::vector<BufferSlot> buffers) {
    Dispatch d;
    d.library = "group_rows";
    d.kernel = kernel;
    d.tier = Tier::Simdgroup;  // a few microseconds of integer work next to the expert matmuls
    d.threadgroups[0] = grid;
    d.threads_per_threadgroup[0] = GROUP_ROWS_THREADS;
    d.buffers = std::move(buffers);
    d.params = params_bytes(kp);
    return d;
  };
  GroupRowsPlan out;
  out.counts_bytes = uint64_t(chunks * p.groups) * sizeof(int32_t);
  out.passes = {
      pass("group_rows_count", uint32_t(chunks),
           {{GROUP_ROWS_BUFFER_IDS, Arg::Ids}, {GROUP_ROWS_BUFFER_COUNTS, Arg::GroupSlots},
            {GROUP_ROWS_BUFFER_PARAMS, Arg::Params}}),
      pass("group_rows_scan", 1,
           {{GROUP_ROWS_BUFFER_IDS, Arg::Ids}, {GROUP_ROWS_BUFFER_SIZES, Arg::GroupSizes},
            {GROUP_ROWS_BUFFER_COUNTS, Arg::GroupSlots}, {GROUP_ROWS_BUFFER_STATUS, Arg::Status},
            {GROUP_ROWS_BUFFER_PARAMS, Arg::Params}}),
      pass("group_rows_scatter", uint32_t(chunks),
           {{GROUP_ROWS_BUFFER_IDS, Arg::Ids}, {GROUP_ROWS_BUFFER_COUNTS, Arg::GroupSlots},
            {GROUP_ROWS_BUFFER_ROWS, Arg::Rows}, {GROUP_ROWS_BUFFER_POSITIONS, Arg::Positions},
            {GROUP_ROWS_BUFFER_PARAMS, Arg::Params}}),
  };
  return out;
}

OpStatus group_rows_status(const int32_t* status, const GroupRowsParams& p) {
  if (status[0] < 0) return OpStatus{};
  return OpStatus{code::Arg, "groupRows: ids holds " + std::to_string(status[1]) + " at flat index " +
                                 std::to_string(status[0]) + "; the groups are 0.." + std::to_string(p.groups - 1)};
}

}  // namespace mto::plan
