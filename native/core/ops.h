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

// o[B, Hq, Lq, D] = softmax(q k^T * scale + mask) v, FlashAttention semantics of API.md.
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
