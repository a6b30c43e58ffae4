// softmax on the metal backend (ops.h), mirroring native/cpu/softmax.cc: one dispatch of
// shaders/softmax.metal (a threadgroup per row), y written in x's dtype.
#include "ops.h"

#include "core/error.h"
#include "core/plan/softmax.h"

namespace mto::metal {

bool softmax(MetalContext& ctx, const Tensor& x, const RowsParams& p, Tensor& out, Completion done) {
  plan::Dispatch d;
  try {
    d = plan_avoiding(ctx.unusable, ctx.tier, [&](Tier t) { return plan::plan_softmax(p, x.dtype, out.dtype, t); });
  } catch (const Error&) {
    return false;  // a size past 32-bit indices: the cpu backend runs it
  }
  ArgTable args;
  using plan::Arg;
  if (!args.bind(Arg::X, x.buffer.get()) || !args.bind(Arg::Y, out.buffer.get())) return false;
  ctx.stream.submit({d}, args, nullptr, std::move(done));
  return true;
}

}  // namespace mto::metal
