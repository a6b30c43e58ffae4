// groupRows on the metal backend (ops.h): shaders/group_rows.metal's three passes (count, scan,
// scatter) as plan/group_rows.cc decides, so a mixture of experts' routing stays on the GPU. The
// scan pass writes the first id outside [0, groups) into a status buffer of the op's own; the op
// then fails with the cpu backend's message once the GPU is done.
#include "ops.h"

#include "core/error.h"
#include "core/plan/group_rows.h"

namespace mto::metal {

bool group_rows(MetalContext& ctx, const Tensor& ids, const GroupRowsParams& p, Tensor& sizes, Tensor& rows,
                Tensor& positions, Completion done) {
  plan::GroupRowsPlan plan;
  try {
    plan = plan_avoiding(ctx.unusable, ctx.tier, [&](Tier t) { return plan::plan_group_rows(p, t); });
  } catch (const Error&) {
    return false;  // no entries, or more chunks times groups than the scan takes: the cpu backend runs it
  }
  ArgTable args;
  using plan::Arg;
  const bool bound = args.bind(Arg::Ids, ids.buffer.get()) && args.bind(Arg::GroupSizes, sizes.buffer.get()) &&
                     args.bind(Arg::Rows, rows.buffer.get()) && args.bind(Arg::Positions, positions.buffer.get());
  if (!bound) return false;
  // The per-chunk counts live only for this op; its status is read once the GPU is done.
  BufferPtr counts = ctx.pool.allocate(size_t(plan.counts_bytes));
  BufferPtr status = ctx.pool.allocate(size_t(plan::kGroupRowsStatusBytes));
  args.bind(Arg::GroupSlots, counts.get());
  args.bind(Arg::Status, status.get());
  return ctx.stream.submit(plan.passes, args, counts,
                           complete_with_status(status, [p](const int32_t* s) { return plan::group_rows_status(s, p); },
                                                std::move(done)));
}

}  // namespace mto::metal
