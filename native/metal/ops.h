// The metal backend's ops, mirroring native/cpu/ops.h name for name. Each builds the dispatch
// plan (core/dispatch_plan.h), binds the op's buffers and submits it; it returns false, having
// done nothing, when no kernel covers the request (the caller then runs the cpu backend over the
// same unified-memory buffers). Objective-C++ only: include from native/metal/*.mm.
#pragma once
#include "buffers.h"
#include "core/backend.h"
#include "core/library_fallback.h"
#include "encode.h"

namespace mto::metal {

// Every op plans at `tier` through core/library_fallback.h's plan_avoiding: where that plan uses
// a library in `unusable` (it failed to compile on this GPU), the op is planned one tier lower,
// and below simdgroup it is declined (the cpu backend runs it).
struct MetalContext {
  CommandStream& stream;
  MetalBufferPool& pool;
  Tier tier;
  const UnusableLibraries& unusable;
  DeviceProfile device;  // what plans that size their grids by the GPU read (plan_attention)
};

// make(max_threads) within its pipeline's maxTotalThreadsPerThreadgroup on this GPU, for plans
// that size their threadgroups from it (pick, embedding; norm.mm and softmax.mm do the same in
// one step): made with 1024, then again with the pipeline's limit while its threadgroup is
// larger. The limit can move the request to another kernel of the op, whose pipeline has its own
// limit, so this repeats; each round's limit is below the last, and below one SIMD-group the plan
// throws. Throws EncodeNeedsPreparation while a pipeline is not made yet.
template <class Make>
auto within_limit(MetalContext& ctx, Make&& make) -> decltype(make(1024u)) {
  auto made = make(1024u);
  for (;;) {
    const std::vector<plan::Dispatch>& passes = plan_fallback::passes_of(made);
    const uint32_t limit = ctx.stream.max_threads(passes[0]);
    if (limit >= passes[0].threads_per_threadgroup[0]) return made;
    made = make(limit);
  }
}

// linear.mm: y = x @ w^T (+ bias) for float32/float16/bfloat16 x, quantized w, float32 bias.
bool linear(MetalContext& ctx, const Operand& x, const Operand& w, const Tensor* bias,
            const LinearParams& p, Tensor& y, Completion done);

// matmul.mm: c = a @ b for dense a and b of one dtype (float32, float16 or bfloat16).
bool matmul(MetalContext& ctx, const Tensor& a, const Tensor& b, const MatmulParams& p, Tensor& c,
            Completion done);

// attention.mm: FlashAttention for dense q (float32/float16/bfloat16), k/v dense of q's dtype or
// mxfp8; prefill through matmul2d on the tensorops tiers.
bool attention(MetalContext& ctx, const Operand& q, const Operand& k, const Operand& v,
               const AttentionParams& p, Tensor& o, Completion done);

// quantize.mm: MX formats from a dense tensor.
bool quantize(MetalContext& ctx, const Tensor& x, QTensor& out, Completion done);

// The model ops (core/ops.h), each reading and writing its tensors' own dtypes.
// elementwise.mm: silu, gelu, gelu_tanh; add, mul, swiglu with broadcasting.
bool unary(MetalContext& ctx, UnaryOp op, const Tensor& x, const ElementwiseParams& p, Tensor& out, Completion done);
bool binary(MetalContext& ctx, BinaryOp op, const Tensor& a, const Tensor& b, const ElementwiseParams& p, Tensor& out,
            Completion done);
// norm.mm: rmsNorm / layerNorm.
bool norm(MetalContext& ctx, const Tensor& x, const Tensor* weight, const Tensor* bias, const NormParams& p,
          Tensor& out, Completion done);
// rope.mm
bool rope(MetalContext& ctx, const Tensor& x, const Tensor* positions, const Tensor* freqs, const RopeParams& p,
          Tensor& out, Completion done);
// softmax.mm
bool softmax(MetalContext& ctx, const Tensor& x, const RowsParams& p, Tensor& out, Completion done);
// layout.mm: srcs[i] through parts[i] into dst (transpose, slice, concat, write), one pass each.
bool copy(MetalContext& ctx, const std::vector<const Tensor*>& srcs, const std::vector<CopyPart>& parts, Tensor& dst,
          Completion done);

// pick.mm: argmax, topK and sample over the rows of a float32/float16/bfloat16 x (int32 ids);
// sample draws the cpu backend's ids bit for bit, and fails a row without a distribution.
bool argmax(MetalContext& ctx, const Tensor& x, const PickParams& p, Tensor& ids, Completion done);
bool top_k(MetalContext& ctx, const Tensor& x, const PickParams& p, Tensor& values, Tensor& ids, Completion done);
bool sample(MetalContext& ctx, const Tensor& logits, const PickParams& p, Tensor& ids, Completion done);

// embedding.mm: rows of a dense or quantized table by int32 ids; an id outside it fails the op.
bool embedding(MetalContext& ctx, const Operand& table, const Tensor& ids, const EmbeddingParams& p, Tensor& out,
               Completion done);

// linear.mm: groupedLinear for quantized or dense w at any number of rows; sizes that are negative
// or do not add up fail the op.
bool grouped_linear(MetalContext& ctx, const Operand& x, const Operand& w, const Tensor& group_sizes,
                    const GroupedLinearParams& p, Tensor& y, Completion done);

// group_rows.mm: groupRows, a stable counting sort of int32 ids on the GPU; an id outside
// [0, groups) fails the op.
bool group_rows(MetalContext& ctx, const Tensor& ids, const GroupRowsParams& p, Tensor& sizes, Tensor& rows,
                Tensor& positions, Completion done);

// user_kernel.mm: one run of a user kernel this backend compiled (UserKernels); false for a
// program it did not make or a plane that is not Metal storage.
bool user_kernel(MetalContext& ctx, const UserKernelLaunch& launch, Completion done);

}  // namespace mto::metal
