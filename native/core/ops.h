// Op declarations shared by every backend: operands, parameters, and the shape/dtype rules.
// Each check_* validates its inputs (throwing mto::Error with a message that names the argument,
// the value and what is accepted) and returns the parameters the backends run with.
#pragma once
#include <cstdint>
#include <optional>

#include "tensor.h"

namespace mto {

// An operand of linear/matmul/attention: exactly one of dense / quant is set.
struct Operand {
  const Tensor* dense = nullptr;
  const QTensor* quant = nullptr;
  const Shape& shape() const { return dense ? dense->shape : quant->shape; }
};

// y[M, N] = x[M, K] @ w[N, K]^T (+ bias[N]); x's leading dims are folded into M.
struct LinearParams {
  int64_t M = 0, N = 0, K = 0;
  Shape out_shape;  // x.shape[:-1] + [N]
  DType out_dtype = DType::Float32;
};
LinearParams check_linear(const Operand& x, const Operand& w, const Tensor* bias,
                          std::optional<DType> out_dtype);

// c[batch, M, N] = a[batch, M, K] @ b[K, N] (b shared by every batch) or b[batch, K, N].
struct MatmulParams {
  int64_t batch = 1, M = 0, N = 0, K = 0;
  bool b_batched = false;
  Shape out_shape;
  DType out_dtype = DType::Float32;
};
MatmulParams check_matmul(const Tensor& a, const Tensor& b);

// o[B, Hq, Lq, D] = softmax(q k^T * scale + mask) v, FlashAttention as in docs/design/API.md.
// NaN and inf, identical on every backend and kernel: a key that query row i does not see (hidden
// by causal, a false bool mask or an additive -inf: any score of -inf) is never read, so a NaN in
// its K or V changes nothing (unlike PyTorch's math path, where NaN + -inf and 0 * NaN are NaN;
// FlashAttention kernels skip hidden tiles, so only this rule is tile-independent). Over the keys
// row i sees, plain float arithmetic (PyTorch's math path in float): a NaN in q row i, in a seen
// K row, or in the additive mask of a seen key makes row i all NaN, and so does a +inf score
// (exp(inf - inf)); a NaN in V[j][c] makes o[i][c] NaN for every row i that sees key j, even when
// its weight rounds to 0 (0 * NaN = NaN); an inf in V gives inf, or NaN where +inf meets -inf or a
// zero weight (not pinned down: whether a weight reaches 0 in the online rescale depends on the
// kernel's exp2; the simdgroup-tier prefill keeps the inf). An mxfp8 block with scale byte 0xFF (or a NaN code) decodes to NaN and counts as
// NaN. A row that sees no key is zeros, whatever its q holds.
struct AttentionParams {
  int64_t B = 0, Hq = 0, Hkv = 0, Lq = 0, Lk = 0, D = 0;
  float scale = 0.f;
  bool causal = false;          // bottom-right aligned: query i sees keys j <= i + (Lk - Lq)
  const Tensor* mask = nullptr; // bool (true = attend) or additive float, broadcast to [B,Hq,Lq,Lk]
  int64_t mask_stride[4] = {0, 0, 0, 0};  // element strides of mask over (b, h, i, j); 0 = broadcast
  DType out_dtype = DType::Float32;
  Shape out_shape;
};
AttentionParams check_attention(const Operand& q, const Operand& k, const Operand& v,
                                std::optional<float> scale, bool causal, const Tensor* mask);

// Validates a quantization request for a dense tensor of `shape`.
void check_quantize(const Shape& shape, Format f, int block);

}  // namespace mto
