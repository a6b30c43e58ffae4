// rmsNorm and layerNorm on the metal backend (ops.h), mirroring native/cpu/norm.cc: one dispatch
// of shaders/norm.metal (a threadgroup per row); weight and bias bound as stored, whatever their
// float dtypes, y written in x's dtype.
#include "ops.h"

#include "core/error.h"
#include "core/plan/norm.h"

namespace mto::metal {

bool norm(MetalContext& ctx, const Tensor& x, const Tensor* weight, const Tensor* bias, const NormParams& p,
          Tensor& out, Completion done) {
  auto make = [&](uint32_t max_threads) {
    return plan_avoiding(ctx.unusable, ctx.tier, [&](Tier t) {
      return plan::plan_norm(p, x.dtype, out.dtype, weight ? std::optional<DType>(weight->dtype) : std::nullopt,
                             bias ? std::optional<DType>(bias->dtype) : std::nullopt, t, max_threads);
    });
  };
  plan::Dispatch d;
  try {
    d = make(1024);
    // Long rows get 1024 threads; a pipeline that allows fewer on this GPU gets a plan within its
    // limit (the kernel loops over the row with any number of SIMD-groups).
    const uint32_t limit = ctx.stream.max_threads(d);
    if (limit < d.threads_per_threadgroup[0]) d = make(limit);
  } catch (const Error&) {
    return false;  // a size past 32-bit indices, or a pipeline below one SIMD-group: the cpu backend runs it
  }
  ArgTable args;
  using plan::Arg;
  const bool bound = args.bind(Arg::X, x.buffer.get()) && args.bind(Arg::Y, out.buffer.get()) &&
                     (!weight || args.bind(Arg::Weight, weight->buffer.get())) &&
                     (!bias || args.bind(Arg::Bias, bias->buffer.get()));
  if (!bound) return false;
  return ctx.stream.submit({d}, args, nullptr, std::move(done));
}

}  // namespace mto::metal
