// The elementwise ops on the metal backend (ops.h), mirroring native/cpu/elementwise.cc: the
// kernels of shaders/elementwise.metal as plan_unary / plan_binary decide (contiguous or strided,
// by the broadcast), each operand bound as stored and the output written in its own dtype.
#include "ops.h"

#include "core/error.h"
#include "core/plan/elementwise.h"

namespace mto::metal {

bool unary(MetalContext& ctx, UnaryOp op, const Tensor& x, const ElementwiseParams& p, Tensor& out,
           Completion done) {
  plan::Dispatch d;
  try {
    d = plan_avoiding(ctx.unusable, ctx.tier, [&](Tier t) { return plan::plan_unary(op, x.dtype, out.dtype, p.bc, t); });
  } catch (const Error&) {
    return false;  // no kernel for this dtype or size: the cpu backend runs it
  }
  ArgTable args;
  using plan::Arg;
  if (!args.bind(Arg::X, x.buffer.get()) || !args.bind(Arg::Y, out.buffer.get())) return false;
  return ctx.stream.submit({d}, args, nullptr, std::move(done));
}

bool binary(MetalContext& ctx, BinaryOp op, const Tensor& a, const Tensor& b, const ElementwiseParams& p, Tensor& out,
            Completion done) {
  plan::Dispatch d;
  try {
    d = plan_avoiding(ctx.unusable, ctx.tier,
                      [&](Tier t) { return plan::plan_binary(op, a.dtype, b.dtype, out.dtype, p.bc, t, p.alpha, p.limit); });
  } catch (const Error&) {
    return false;  // more merged dimensions than the kernel takes, or a size past 32 bits
  }
  ArgTable args;
  using plan::Arg;
  if (!args.bind(Arg::A, a.buffer.get()) || !args.bind(Arg::B, b.buffer.get()) ||
      !args.bind(Arg::Y, out.buffer.get())) {
    return false;
  }
  return ctx.stream.submit({d}, args, nullptr, std::move(done));
}

}  // namespace mto::metal
