// argmax, topK and sample on the metal backend (ops.h): the kernels of shaders/pick.metal, one
// threadgroup per row, as plan/pick.cc decides. sample's kernel writes what it found in each row
// into a status buffer of the op's own; a row with NaN, +inf or only -inf fails the op with the
// cpu backend's message once the GPU is done. Requests the kernels do not take (topK above
// PICK_MAX_K, topP alone on wide rows) return false: the cpu backend runs them.
#include "ops.h"

#include "core/error.h"
#include "core/plan/pick.h"

namespace mto::metal {

bool argmax(MetalContext& ctx, const Tensor& x, const PickParams& p, Tensor& ids, Completion done) {
  plan::Dispatch d;
  try {
    d = plan_avoiding(ctx.unusable, ctx.tier, [&](Tier t) { return plan::plan_argmax(x.dtype, p, t); });
  } catch (const Error&) {
    return false;
  }
  ArgTable args;
  if (!args.bind(plan::Arg::X, x.buffer.get()) || !args.bind(plan::Arg::Ids, ids.buffer.get())) return false;
  ctx.stream.submit({d}, args, nullptr, std::move(done));
  return true;
}

bool top_k(MetalContext& ctx, const Tensor& x, const PickParams& p, Tensor& values, Tensor& ids, Completion done) {
  plan::Dispatch d;
  try {
    d = plan_avoiding(ctx.unusable, ctx.tier, [&](Tier t) { return plan::plan_top_k(x.dtype, p, t); });
  } catch (const Error&) {
    return false;
  }
  ArgTable args;
  if (!args.bind(plan::Arg::X, x.buffer.get()) || !args.bind(plan::Arg::Ids, ids.buffer.get()) ||
      !args.bind(plan::Arg::Y, values.buffer.get())) {
    return false;
  }
  ctx.stream.submit({d}, args, nullptr, std::move(done));
  return true;
}

bool sample(MetalContext& ctx, const Tensor& logits, const PickParams& p, Tensor& ids, Completion done) {
  plan::Dispatch d;
  try {
    d = plan_avoiding(ctx.unusable, ctx.tier, [&](Tier t) { return plan::plan_sample(logits.dtype, p, t); });
  } catch (const Error&) {
    return false;
  }
  ArgTable args;
  if (!args.bind(plan::Arg::X, logits.buffer.get()) || !args.bind(plan::Arg::Ids, ids.buffer.get())) return false;
  BufferPtr status = ctx.pool.allocate(size_t(plan::sample_status_bytes(p)));
  args.bind(plan::Arg::Status, status.get());
  ctx.stream.submit({d}, args, nullptr,
                    complete_with_status(status, [p](const int32_t* s) { return plan::sample_status(s, p); },
                                         std::move(done)));
  return true;
}

}  // namespace mto::metal
