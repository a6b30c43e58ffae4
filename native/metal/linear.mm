// linear on the metal backend (ops.h): the qlinear kernels of shaders/qlinear*.metal, as
// plan_linear decides from w's format, x's and y's dtypes (float32, float16 or bfloat16: the
// kernels read x and write y as stored) and the tier: decode for M <= 8, tiled GEMM, matmul2d or,
// on tensorops-mx, scale-plane matmul2d above. Dense w has no Metal kernel here: plan_matmul
// multiplies by b[K, N], not by w[N, K]^T, so the cpu backend runs it.
#include "ops.h"

#include "core/error.h"

namespace mto::metal {

bool linear(MetalContext& ctx, const Operand& x, const Operand& w, const Tensor* bias,
            const LinearParams& p, Tensor& y, Completion done) {
  if (!x.dense || !w.quant) return false;
  if (bias && bias->dtype != DType::Float32) return false;  // the kernels read a float32 bias
  const QTensor& q = *w.quant;
  plan::Dispatch d;
  try {
    d = plan::plan_linear(q.format, q.block, x.dense->dtype, y.dtype, p.M, p.N, p.K, bias != nullptr, ctx.tier);
  } catch (const Error&) {
    return false;  // no kernel for this dtype, shape or format: the cpu backend runs it
  }
  ArgTable args;
  using plan::Arg;
  const bool bound = args.bind(Arg::X, x.dense->buffer.get()) &&
                     args.bind(Arg::WCodes, q.codes.get()) && args.bind(Arg::WScales, q.scales.get()) &&
                     (!q.biases || args.bind(Arg::WBiases, q.biases.get())) &&
                     (!bias || args.bind(Arg::Bias, bias->buffer.get())) &&
                     args.bind(Arg::Y, y.buffer.get());
  if (!bound) return false;
  ctx.stream.submit({d}, args, nullptr, std::move(done));
  return true;
}

}  // namespace mto::metal
