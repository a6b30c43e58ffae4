// The cpu backend's ops. native/metal mirrors these names file for file.
// linear, matmul, attention and dequantize write float32, which the caller converts to the
// requested dtype; the model ops below write their outputs' dtypes.
#pragma once
#include "../core/ops.h"
#include "thread_pool.h"

namespace mto::cpu {

// linear.cc: y[M, N] (float32, row-major) = x @ w^T (+ bias).
void linear(ThreadPool& pool, const Operand& x, const Operand& w, const Tensor* bias,
            const LinearParams& p, float* y);

// matmul.cc: c[batch, M, N] = a @ b, dense float32/float16/bfloat16 inputs.
void matmul(ThreadPool& pool, const Tensor& a, const Tensor& b, const MatmulParams& p, float* c);

// attention.cc: o[B, Hq, Lq, D] as float32.
void attention(ThreadPool& pool, const Operand& q, const Operand& k, const Operand& v,
               const AttentionParams& p, float* o);

// quantize.cc: fills out's planes from a dense tensor (any dtype), and the reverse.
void quantize(ThreadPool& pool, const Tensor& x, QTensor& out);
void dequantize(ThreadPool& pool, const QTensor& q, float* out);

// The model ops, each reading and writing its tensors' own dtypes (rows.h).
// elementwise.cc
void unary(ThreadPool& pool, UnaryOp op, const Tensor& x, const ElementwiseParams& p, Tensor& out);
void binary(ThreadPool& pool, BinaryOp op, const Tensor& a, const Tensor& b, const ElementwiseParams& p,
            Tensor& out);
// norm.cc: rmsNorm / layerNorm.
void norm(ThreadPool& pool, const Tensor& x, const Tensor* weight, const Tensor* bias,
          const NormParams& p, Tensor& out);
// rope.cc
void rope(ThreadPool& pool, const Tensor& x, const Tensor* positions, const Tensor* freqs,
          const RopeParams& p, Tensor& out);
// softmax.cc
void softmax(ThreadPool& pool, const Tensor& x, const RowsParams& p, Tensor& out);
// pick.cc: argmax, topK, sample (int32 ids), embedding and groupRows.
void argmax(ThreadPool& pool, const Tensor& x, const PickParams& p, Tensor& ids);
void top_k(ThreadPool& pool, const Tensor& x, const PickParams& p, Tensor& values, Tensor& ids);
void sample(ThreadPool& pool, const Tensor& logits, const PickParams& p, Tensor& ids);
void embedding(ThreadPool& pool, const Operand& table, const Tensor& ids, const EmbeddingParams& p, Tensor& out);
void group_rows(const Tensor& ids, const GroupRowsParams& p, Tensor& sizes, Tensor& rows, Tensor& positions);
// linear.cc: y[T, N] (float32) for rows grouped by expert.
void grouped_linear(ThreadPool& pool, const Operand& x, const Operand& w, const Tensor& group_sizes,
                    const GroupedLinearParams& p, float* y);
// layout.cc: one strided copy from src into dst.
void copy(ThreadPool& pool, const Tensor& src, const CopyPart& p, Tensor& dst);

}  // namespace mto::cpu
