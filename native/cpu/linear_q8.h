// Prompt-sized linear with int8 activations (linear's `activations: 'int8'` for more rows than the
// decode kernels take): x quantized once, then the weight rows split across the pool's threads in
// contiguous runs of panels (kernels/gemm_q8.h).
#pragma once
#include <cstdint>

#include "../kernels/gemm_q8.h"
#include "thread_pool.h"

namespace mto::cpu {

// x [M, K] float32 (row stride ldx, finite); y [M, N] (row stride ldy); bias float32 [N] or null.
void linear_q8(ThreadPool& pool, const mto::kernels::GemmQ8Kernels& kern, const mto::kernels::DotWeights& w,
               int64_t M, int64_t N, const float* x, int64_t ldx, const float* bias, float* y, int64_t ldy);

}  // namespace mto::cpu
