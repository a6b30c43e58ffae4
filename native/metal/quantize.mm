// quantize on the metal backend (ops.h): the MX kernels of shaders/quantize.metal. Affine
// formats and dequantize have no kernels; the cpu backend runs those.
#include "ops.h"

#include "core/error.h"

namespace mto::metal {

bool quantize(MetalContext& ctx, const Tensor& x, QTensor& out, Completion done) {
  plan::Dispatch d;
  try {
    // One library for every tier: unusable, the op runs on the cpu backend.
    d = plan_avoiding(ctx.unusable, ctx.tier,
                      [&](Tier) { return plan::plan_quantize(out.format, x.dtype, out.rows(), out.cols()); });
  } catch (const Error&) {
    return false;
  }
  ArgTable args;
  using plan::Arg;
  if (!args.bind(Arg::X, x.buffer.get()) || !args.bind(Arg::Codes, out.codes.get()) ||
      !args.bind(Arg::Scales, out.scales.get())) {
    return false;
  }
  return ctx.stream.submit({d}, args, nullptr, std::move(done));
}

}  // namespace mto::metal
