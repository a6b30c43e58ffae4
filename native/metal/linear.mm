// linear on the metal backend (ops.h): the qlinear kernels of shaders/qlinear*.metal, as
// plan_linear decides from w's format, x's and y's dtypes (float32, float16 or bfloat16: the
// kernels read x and write y as stored) and the tier: decode for M <= 8, tiled GEMM, matmul2d or,
// on tensorops-mx, scale-plane matmul2d above (w bound as its MTLTensor with an E8M0 scale plane,
// qtensor.h). A dense w of x's dtype runs the simdgroup GEMM of shaders/matmul.metal with w as its
// transposed operand (plan_linear_dense); other dtype mixes run on the cpu backend.
// groupedLinear (a mixture of experts' linear) sits beside it, as in the cpu backend's linear.cc:
// shaders/qlinear_grouped.metal, two passes (route, then decode or tiles), for quantized w at any
// number of rows and dense w of any float dtype; activations: 'int8' is computed in float32 here,
// as for linear (docs/design/API.md: a permission, not a promise).
#include "ops.h"

#include "core/error.h"
#include "core/plan/grouped_linear.h"
#include "qtensor.h"

namespace mto::metal {

namespace {

// A dense w: the simdgroup GEMM with w as its transposed operand (plan_linear_dense), for x, w and
// y of one dtype; anything else runs on the cpu backend.
bool linear_dense(MetalContext& ctx, const Tensor& x, const Tensor& w, const Tensor* bias, const LinearParams& p,
                  Tensor& y, Completion done) {
  plan::Dispatch d;
  try {
    d = plan_avoiding(ctx.unusable, ctx.tier, [&](Tier t) {
      return plan::plan_linear_dense(x.dtype, w.dtype, y.dtype, p.M, p.N, p.K, bias != nullptr, t, ctx.device);
    });
  } catch (const Error&) {
    return false;
  }
  ArgTable args;
  using plan::Arg;
  const bool bound = args.bind(Arg::X, x.buffer.get()) && args.bind(Arg::Weight, w.buffer.get()) &&
                     (!bias || args.bind(Arg::Bias, bias->buffer.get())) && args.bind(Arg::Y, y.buffer.get());
  if (!bound) return false;
  return ctx.stream.submit({d}, args, nullptr, std::move(done));
}

}  // namespace

bool linear(MetalContext& ctx, const Operand& x, const Operand& w, const Tensor* bias,
            const LinearParams& p, Tensor& y, Completion done) {
  if (!x.dense) return false;
  if (bias && bias->dtype != DType::Float32) return false;  // the kernels read a float32 bias
  if (w.dense) return linear_dense(ctx, *x.dense, *w.dense, bias, p, y, std::move(done));
  if (!w.quant) return false;
  const QTensor& q = *w.quant;
  auto plan_at = [&](Tier tier) {
    return plan_avoiding(ctx.unusable, tier, [&](Tier t) {
      return plan::plan_linear(q.format, q.block, x.dense->dtype, y.dtype, p.M, p.N, p.K, bias != nullptr, t, ctx.device);
    });
  };
  plan::Dispatch d;
  id w_tensor = nil;
  try {
    d = plan_at(ctx.tier);
    // The tensorops-mx kernel takes w as one tensor argument: the MTLTensor with its scale plane
    // attached to q when it was made (qtensor.h). Without one of the plan's layout (an SDK or
    // macOS without multi-plane tensors, a descriptor Metal refused) the tensorops kernel, which
    // reads the planes, runs instead.
    if (!d.tensors.empty()) {
      w_tensor = scale_plane_tensor_for(q, d.tensors[0]);
      if (w_tensor == nil) d = plan_at(Tier::TensorOps);
    }
  } catch (const Error&) {
    return false;  // no kernel (or no usable library) for this dtype, shape or format: the cpu backend runs it
  }
  ArgTable args;
  using plan::Arg;
  const bool bound = args.bind(Arg::X, x.dense->buffer.get()) &&
                     args.bind(Arg::WCodes, q.codes.get()) && args.bind(Arg::WScales, q.scales.get()) &&
                     (!q.biases || args.bind(Arg::WBiases, q.biases.get())) &&
                     (d.tensors.empty() || args.bind_tensor(Arg::WTensor, w_tensor)) &&
                     (!bias || args.bind(Arg::Bias, bias->buffer.get())) &&
                     args.bind(Arg::Y, y.buffer.get());
  if (!bound) return false;
  return ctx.stream.submit({d}, args, nullptr, std::move(done));
}

bool grouped_linear(MetalContext& ctx, const Operand& x, const Operand& w, const Tensor& group_sizes,
                    const GroupedLinearParams& p, Tensor& y, Completion done) {
  if (!x.dense) return false;
  const QTensor* q = w.quant;
  plan::GroupedLinearPlan plan;
  try {
    plan = plan_avoiding(ctx.unusable, ctx.tier, [&](Tier t) {
      return q ? plan::plan_grouped_linear(p, q->format, q->block, x.dense->dtype, y.dtype, t)
               : plan::plan_grouped_linear_dense(p, w.dense->dtype, x.dense->dtype, y.dtype, t);
    });
  } catch (const Error&) {
    return false;  // no kernel for the dtype or the shape (sizes past 32-bit indices): the cpu backend runs it
  }
  ArgTable args;
  using plan::Arg;
  const bool weights = q ? args.bind(Arg::WCodes, q->codes.get()) && args.bind(Arg::WScales, q->scales.get()) &&
                               (!q->biases || args.bind(Arg::WBiases, q->biases.get()))
                         : args.bind(Arg::Weight, w.dense->buffer.get());
  const bool bound = weights && args.bind(Arg::X, x.dense->buffer.get()) &&
                     args.bind(Arg::GroupSizes, group_sizes.buffer.get()) && args.bind(Arg::Y, y.buffer.get());
  if (!bound) return false;
  // The route pass's slots live only for this op; its status is read once the GPU is done.
  BufferPtr slots = ctx.pool.allocate(size_t(plan.slots_bytes));
  BufferPtr status = ctx.pool.allocate(size_t(plan::kGroupedLinearStatusBytes));
  args.bind(Arg::GroupSlots, slots.get());
  args.bind(Arg::Status, status.get());
  auto read = [p](const int32_t* s) { return plan::grouped_linear_status(s, p); };
  return ctx.stream.submit(plan.passes, args, slots, complete_with_status(status, read, std::move(done)));
}

}  // namespace mto::metal
