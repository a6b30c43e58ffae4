// Prompt-sized linear with x quantized to int8 (linear's opt-in `activations: 'int8'` for more
// rows than the decode kernels take, dot.h dot_q8_kernels): y = w . x', x' each block of 32 of a
// row of x quantized by quantize_x_block's rule, as the decode kernels compute it, so a prompt and
// the decode steps after it see the same activations rule. Where the decode kernels stream the
// weights once per few rows of x, this unpacks a panel of 16 weight rows into int8 once and runs
// every row of x past it from the caches: integer multiply-adds at 64 a instruction, one float
// scaling per block of 32 for 16 weight rows (kernels/x86/gemm_q8_avx512.cc).
#pragma once
#include <cstddef>
#include <cstdint>

#include "dot.h"

namespace mto::kernels {

struct GemmQ8Kernels {
  const char* name;
  // Whether these kernels take w (the int8-table formats of dot_q8_kernels, affine4/8, mxint8).
  bool (*supports)(const DotWeights& w);
  // Bytes prepare_x writes for M rows of x.
  size_t (*x_bytes)(const DotWeights& w, int64_t M);
  // Quantizes rows [m0, m1) of x[M][K] (row stride ldx, finite values) into xp (sized for M rows).
  void (*prepare_x)(const DotWeights& w, const float* x, int64_t ldx, int64_t M, int64_t m0, int64_t m1,
                    uint8_t* xp);
  // y[m * ldy + n] = dot(x'[m], w row n) for m < M and n in [n0, n1) (n0 a multiple of 16).
  void (*rows)(const DotWeights& w, int64_t n0, int64_t n1, const uint8_t* xp, int64_t M, float* y,
               int64_t ldy);
};

// The kernels for this CPU (AVX-512 with VNNI), or null: callers then use the float path.
const GemmQ8Kernels* gemm_q8_kernels();
const GemmQ8Kernels* gemm_q8_kernels_avx512();

}  // namespace mto::kernels
