// matmul on the metal backend (ops.h), mirroring native/cpu/matmul.cc: c[batch, M, N] =
// a[batch, M, K] @ b[K, N] or b[batch, K, N] through the dense kernels of shaders/matmul.metal
// (simdgroup tier) or shaders/matmul_tensorops.metal (tensorops tiers), one dispatch over every
// batch as plan_matmul decides; c is written in its own dtype (a's). a and b of different dtypes
// have no kernel (the cpu backend converts them on the way).
#include "ops.h"

#include "core/error.h"

namespace mto::metal {

bool matmul(MetalContext& ctx, const Tensor& a, const Tensor& b, const MatmulParams& p, Tensor& c,
            Completion done) {
  plan::Dispatch d;
  try {
    d = plan_avoiding(ctx.unusable, ctx.tier, [&](Tier t) {
      return plan::plan_matmul(a.dtype, b.dtype, c.dtype, p.batch, p.M, p.N, p.K, p.b_batched, t, ctx.device);
    });
  } catch (const Error&) {
    return false;  // dtypes or a shape without a kernel: the cpu backend runs it
  }
  ArgTable args;
  using plan::Arg;
  if (!args.bind(Arg::A, a.buffer.get()) || !args.bind(Arg::B, b.buffer.get()) ||
      !args.bind(Arg::Y, c.buffer.get())) {
    return false;
  }
  return ctx.stream.submit({d}, args, nullptr, std::move(done));
}

}  // namespace mto::metal
