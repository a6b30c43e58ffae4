// argmax, topK and sample on the metal backend (ops.h): the kernels of shaders/pick.metal, one
// threadgroup per row, as plan/pick.cc decides, within each pipeline's thread limit on this GPU.
// sample's kernels write what they found in each row into a status buffer of the op's own; a
// row with NaN, +inf or only -inf fails the op with the cpu backend's message once the GPU is
// done. topK's wide kernel (k above PICK_MAX_K) sorts through a scratch buffer of the op's own.
// Every k and every sample option has a kernel; only what the plans refuse (sizes past 32-bit
// indices, a pipeline below one SIMD-group) returns false and runs on the cpu backend.
#include "ops.h"

#include "core/error.h"
#include "core/plan/pick.h"

namespace mto::metal {

bool argmax(MetalContext& ctx, const Tensor& x, const PickParams& p, Tensor& ids, Completion done) {
  plan::Dispatch d;
  try {
    d = within_limit(ctx, [&](uint32_t max_threads) {
      return plan_avoiding(ctx.unusable, ctx.tier,
                           [&](Tier t) { return plan::plan_argmax(x.dtype, p, t, max_threads); });
    });
  } catch (const Error&) {
    return false;
  }
  ArgTable args;
  if (!args.bind(plan::Arg::X, x.buffer.get()) || !args.bind(plan::Arg::Ids, ids.buffer.get())) return false;
  return ctx.stream.submit({d}, args, nullptr, std::move(done));
}

bool top_k(MetalContext& ctx, const Tensor& x, const PickParams& p, Tensor& values, Tensor& ids, Completion done) {
  plan::TopKPlan plan;
  try {
    plan = within_limit(ctx, [&](uint32_t max_threads) {
      return plan_avoiding(ctx.unusable, ctx.tier,
                           [&](Tier t) { return plan::plan_top_k(x.dtype, p, t, max_threads); });
    });
  } catch (const Error&) {
    return false;
  }
  ArgTable args;
  if (!args.bind(plan::Arg::X, x.buffer.get()) || !args.bind(plan::Arg::Ids, ids.buffer.get()) ||
      !args.bind(plan::Arg::Y, values.buffer.get())) {
    return false;
  }
  // The wide kernel's second sort buffer lives only for this op.
  BufferPtr scratch;
  if (plan.scratch_bytes) {
    scratch = ctx.pool.allocate(size_t(plan.scratch_bytes));
    args.bind(plan::Arg::Scratch, scratch.get());
  }
  return ctx.stream.submit(plan.passes, args, scratch, std::move(done));
}

bool sample(MetalContext& ctx, const Tensor& logits, const PickParams& p, Tensor& ids, Completion done) {
  plan::Dispatch d;
  try {
    d = within_limit(ctx, [&](uint32_t max_threads) {
      return plan_avoiding(ctx.unusable, ctx.tier,
                           [&](Tier t) { return plan::plan_sample(logits.dtype, p, t, max_threads); });
    });
  } catch (const Error&) {
    return false;
  }
  ArgTable args;
  if (!args.bind(plan::Arg::X, logits.buffer.get()) || !args.bind(plan::Arg::Ids, ids.buffer.get())) return false;
  BufferPtr status = ctx.pool.allocate(size_t(plan::sample_status_bytes(p)));
  args.bind(plan::Arg::Status, status.get());
  return ctx.stream.submit({d}, args, nullptr,
                           complete_with_status(status, [p](const int32_t* s) { return plan::sample_status(s, p); },
                                                std::move(done)));
}

}  // namespace mto::metal
