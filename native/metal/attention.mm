// attention on the metal backend (ops.h): the FlashAttention kernels of shaders/attention.metal
// and, for prefill on the tensorops tiers, shaders/attention_tensorops.metal (matmul2d), in the
// passes plan_attention decides (decode, split decode + merge, or prefill). q is float32, float16
// or bfloat16 as stored; dense k and v must have q's dtype (one kernel instance reads all three),
// and the last pass writes o in its own dtype (q's). On tensorops-mx a float16 q's prefill reads
// an mxfp8 K as its scale-plane MTLTensor (qtensor.h), bound through the Metal 4 argument table.
#include "ops.h"

#include "core/error.h"
#include "qtensor.h"

namespace mto::metal {

bool attention(MetalContext& ctx, const Operand& q, const Operand& k, const Operand& v,
               const AttentionParams& p, Tensor& o, Completion done) {
  if (!q.dense || (k.quant != nullptr) != (v.quant != nullptr)) return false;
  const bool kv_quantized = k.quant != nullptr;
  if (kv_quantized && k.quant->format != v.quant->format) return false;
  if (!kv_quantized && (k.dense->dtype != q.dense->dtype || v.dense->dtype != q.dense->dtype)) return false;
  const Format kv_format = kv_quantized ? k.quant->format : Format::MXFP8_E4M3;
  const DType mask_dtype = p.mask ? p.mask->dtype : DType::Bool;
  auto plan_at = [&](Tier tier) {
    return plan_avoiding(ctx.unusable, tier, [&](Tier t) {
      return plan::plan_attention(p, q.dense->dtype, o.dtype, kv_quantized, kv_format, mask_dtype, t, ctx.device);
    });
  };
  plan::AttentionPlan plan;
  id k_tensor = nil;
  try {
    plan = plan_at(ctx.tier);
    // On tensorops-mx, a float16 q's prefill reads an mxfp8 K as one tensor argument: the MTLTensor
    // with its scale plane attached to K when it was made (qtensor.h). Without one of the plan's
    // layout, the tensorops prefill, which stages K from its planes, runs instead.
    for (const plan::Dispatch& d : plan.passes) {
      if (d.tensors.empty()) continue;
      k_tensor = scale_plane_tensor_for(*k.quant, d.tensors[0]);
      if (k_tensor == nil) plan = plan_at(Tier::TensorOps);
      break;
    }
  } catch (const Error&) {
    return false;  // head dim or dtype without a kernel: the cpu backend runs it
  }
  ArgTable args;
  using plan::Arg;
  bool bound = args.bind(Arg::Q, q.dense->buffer.get()) && args.bind(Arg::O, o.buffer.get()) &&
               (!p.mask || args.bind(Arg::Mask, p.mask->buffer.get())) &&
               (!p.sinks || args.bind(Arg::Sinks, p.sinks->buffer.get()));
  if (kv_quantized) {
    bound = bound && args.bind(Arg::K, k.quant->codes.get()) && args.bind(Arg::KScales, k.quant->scales.get()) &&
            args.bind(Arg::V, v.quant->codes.get()) && args.bind(Arg::VScales, v.quant->scales.get()) &&
            (k_tensor == nil || args.bind_tensor(Arg::KTensor, k_tensor));
  } else {
    bound = bound && args.bind(Arg::K, k.dense->buffer.get()) && args.bind(Arg::V, v.dense->buffer.get());
  }
  if (!bound) return false;
  // Split decode's partial results live only for this op.
  struct Scratch {
    BufferPtr partial_o, partial_ml;
  };
  std::shared_ptr<Scratch> scratch;
  if (plan.partial_o_bytes > 0) {
    scratch = std::make_shared<Scratch>();
    scratch->partial_o = ctx.pool.allocate(size_t(plan.partial_o_bytes));
    scratch->partial_ml = ctx.pool.allocate(size_t(plan.partial_ml_bytes));
    args.bind(Arg::PartialO, scratch->partial_o.get());
    args.bind(Arg::PartialML, scratch->partial_ml.get());
  }
  return ctx.stream.submit(plan.passes, args, scratch, std::move(done));
}

}  // namespace mto::metal
