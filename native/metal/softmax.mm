// softmax on the metal backend (ops.h), mirroring native/cpu/softmax.cc: one dispatch of
// shaders/softmax.metal (a threadgroup per row), y written in x's dtype.
#include "ops.h"

#include "core/error.h"
#include "core/plan/softmax.h"

namespace mto::metal {

bool softmax(MetalContext& ctx, const Tensor& x, const RowsParams& p, Tensor& out, Completion done) {
  auto make = [&](uint32_t max_threads) {
    return plan_avoiding(ctx.unusable, ctx.tier,
                         [&](Tier t) { return plan::plan_softmax(p, x.dtype, out.dtype, t, max_threads); });
  };
  plan::Dispatch d;
  try {
    d = make(1024);
    // Within the pipeline's limit on this GPU, as norm.mm.
    const uint32_t limit = ctx.stream.max_threads(d);
    if (limit < d.threads_per_threadgroup[0]) d = make(limit);
  } catch (const Error&) {
    return false;  // a size past 32-bit indices, or a pipeline below one SIMD-group: the cpu backend runs it
  }
  ArgTable args;
  using plan::Arg;
  if (!args.bind(Arg::X, x.buffer.get()) || !args.bind(Arg::Y, out.buffer.get())) return false;
  return ctx.stream.submit({d}, args, nullptr, std::move(done));
}

}  // namespace mto::metal
