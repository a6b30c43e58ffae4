// Rotary position embedding on the metal backend (ops.h), mirroring native/cpu/rope.cc: one
// dispatch of shaders/rope.metal; the inverse frequencies of `base` travel in the parameters
// (tabulated in double by plan_rope), positions and freqs are bound as stored.
#include "ops.h"

#include "core/error.h"
#include "core/plan/rope.h"

namespace mto::metal {

bool rope(MetalContext& ctx, const Tensor& x, const Tensor* positions, const Tensor* freqs, const RopeParams& p,
          Tensor& out, Completion done) {
  plan::Dispatch d;
  try {
    d = plan_avoiding(ctx.unusable, ctx.tier, [&](Tier t) { return plan::plan_rope(p, x.dtype, out.dtype, t); });
  } catch (const Error&) {
    return false;  // dims past the tabulated pairs without freqs, or a size past 32 bits
  }
  ArgTable args;
  using plan::Arg;
  const bool bound = args.bind(Arg::X, x.buffer.get()) && args.bind(Arg::Y, out.buffer.get()) &&
                     (!positions || args.bind(Arg::Positions, positions->buffer.get())) &&
                     (!freqs || args.bind(Arg::Freqs, freqs->buffer.get()));
  if (!bound) return false;
  return ctx.stream.submit({d}, args, nullptr, std::move(done));
}

}  // namespace mto::metal
