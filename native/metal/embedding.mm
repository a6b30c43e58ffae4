// embedding on the metal backend (ops.h): shaders/embedding.metal, a dense table copied in its
// own dtype or a quantized one decoded to float32, as plan/embedding.cc decides within the
// pipeline's thread limit on this GPU. The kernel writes
// the first id outside the table into a status buffer of the op's own; the op then fails with the
// cpu backend's message once the GPU is done.
#include "ops.h"

#include "core/error.h"
#include "core/plan/embedding.h"

namespace mto::metal {

bool embedding(MetalContext& ctx, const Operand& table, const Tensor& ids, const EmbeddingParams& p, Tensor& out,
               Completion done) {
  const bool quantized = table.quant != nullptr;
  plan::Dispatch d;
  try {
    d = within_limit(ctx, [&](uint32_t max_threads) {
      return plan_avoiding(ctx.unusable, ctx.tier, [&](Tier t) {
        return quantized ? plan::plan_embedding(p, true, DType::Float32, table.quant->format, table.quant->block, t,
                                                max_threads)
                         : plan::plan_embedding(p, false, table.dense->dtype, Format::MXFP4, 32, t, max_threads);
      });
    });
  } catch (const Error&) {
    return false;  // no ids, sizes past 32-bit indices, a pipeline below one SIMD-group: the cpu backend runs it
  }
  ArgTable args;
  using plan::Arg;
  bool bound = args.bind(Arg::Ids, ids.buffer.get()) && args.bind(Arg::Y, out.buffer.get());
  if (quantized) {
    const QTensor& q = *table.quant;
    bound = bound && args.bind(Arg::WCodes, q.codes.get()) && args.bind(Arg::WScales, q.scales.get()) &&
            (!q.biases || args.bind(Arg::WBiases, q.biases.get()));
  } else {
    bound = bound && args.bind(Arg::X, table.dense->buffer.get());
  }
  if (!bound) return false;
  BufferPtr status = ctx.pool.allocate(size_t(plan::kEmbeddingStatusBytes));
  args.bind(Arg::Status, status.get());
  return ctx.stream.submit({d}, args, nullptr,
                           complete_with_status(status, [p](const int32_t* s) { return plan::embedding_status(s, p); },
                                                std::move(done)));
}

}  // namespace mto::metal
