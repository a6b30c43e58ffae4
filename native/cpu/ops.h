// The cpu backend's ops. native/metal mirrors these names file for file.
// Every kernel writes float32 output; the caller converts to the requested dtype.
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

}  // namespace mto::cpu
