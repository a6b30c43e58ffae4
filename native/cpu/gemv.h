// Decode-time linear: y[M, N] = x[M, K] @ w^T (+ bias) for a few rows of x, with w quantized
// (dequantized in registers) or float16 / bfloat16 / float32, through the fused decode-and-dot
// kernels of kernels/dot.h (no float32 copy of w).
#pragma once
#include <cstdint>

#include "../kernels/dot.h"
#include "thread_pool.h"

namespace mto::cpu {

// Up to this many rows of x the fused kernels run (they keep M accumulators per weight row).
constexpr int64_t kFusedMaxRows = 8;

// x [M, K] float32 (row stride ldx), M in 1..kFusedMaxRows; y [M, N] (row stride ldy); bias
// float32 [N] or null. Rows of w are split across the pool's threads in long contiguous runs.
void gemv_fused(ThreadPool& pool, const mto::kernels::DotKernels& kern,
                const mto::kernels::DotWeights& w, int64_t M, int64_t N, const float* x,
                int64_t ldx, const float* bias, float* y, int64_t ldy);

}  // namespace mto::cpu
