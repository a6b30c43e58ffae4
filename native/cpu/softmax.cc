// softmax over the last axis (core/ops.h RowsParams): exp(x - max) / sum. exp is attention's
// vectorisable exp2 of non-positive arguments (attention_tile.h, relative error ~2e-7; the
// library expf runs one element at a time), summed in float over 64 elements at a time and in
// double across them. The row loop is compiled for AVX2 and AVX-512 too and chosen at run time
// (gemm_isa(), as attention.cc does).
// Plain float arithmetic: a NaN in a row, a +inf (inf - inf), or a row of only -inf (0 / 0) makes
// the row NaN, as in PyTorch.
#include <cmath>
#include <cstring>

#include "attention_tile.h"
#include "gemm.h"
#include "ops.h"
#include "rows.h"

namespace mto::cpu {
namespace {

constexpr float kLog2e = 1.4426950408889634f;

// The row in place. W: lanes of the vector type the compiler maps to this ISA's registers.
template <int W>
MTO_INLINE void softmax_row(float* v, int64_t n) {
  float m = -INFINITY;
  bool nan = false;
  int64_t i = 0;
#if MTO_GNU_EXTENSIONS
  using V = simd::Vec<W>;
  if (n >= W) {
    V mv = V{} - INFINITY;
    V bad = V{};
    for (; i + W <= n; i += W) {
      V x;
      std::memcpy(&x, v + i, sizeof x);
      bad += x != x ? V{} + 1.f : V{};
      mv = x > mv ? x : mv;
    }
    for (int k = 0; k < W; ++k) {
      nan |= bad[k] != 0;
      m = mv[k] > m ? mv[k] : m;
    }
  }
#endif
  for (; i < n; ++i) {
    nan |= v[i] != v[i];
    m = v[i] > m ? v[i] : m;
  }
  if (nan) m = NAN;
  double sum = 0;
  i = 0;
#if MTO_GNU_EXTENSIONS
  for (; i + 64 <= n; i += 64) {
    V acc{};
    for (int64_t j = i; j < i + 64; j += W) {
      V x, e;
      std::memcpy(&x, v + j, sizeof x);
      x = (x - m) * kLog2e;
      attention_tile::exp2_nonpos<W>(x, e);
      std::memcpy(v + j, &e, sizeof e);
      acc += e;
    }
    float part = 0;
    for (int k = 0; k < W; ++k) part += acc[k];
    sum += part;
  }
#endif
  for (; i < n; ++i) {
    v[i] = attention_tile::exp2_nonpos((v[i] - m) * kLog2e);
    sum += v[i];
  }
  const float inv = float(1.0 / sum);
  for (i = 0; i < n; ++i) v[i] *= inv;
}

void rows_base(float* v, int64_t n) { softmax_row<4>(v, n); }
#if MTO_X86_DISPATCH
MTO_TARGET_AVX2 void rows_avx2(float* v, int64_t n) { softmax_row<8>(v, n); }
MTO_TARGET_AVX512 void rows_avx512(float* v, int64_t n) { softmax_row<16>(v, n); }
#endif

}  // namespace

void softmax(ThreadPool& pool, const Tensor& x, const RowsParams& p, Tensor& out) {
  const int64_t cols = p.cols;
  void (*row_fn)(float*, int64_t) = rows_base;
#if MTO_X86_DISPATCH
  const GemmIsa isa = gemm_isa();
  if (isa == GemmIsa::Avx512) row_fn = rows_avx512;
  if (isa == GemmIsa::Avx2) row_fn = rows_avx2;
#endif
  pool.parallel_for(p.rows, std::max<int64_t>(1, kParallelGrain / cols), [&](int64_t r0, int64_t r1) {
    // float32 out: the row is computed in place in the output; else in a scratch row.
    const bool direct = out.dtype == DType::Float32;
    float* row = direct ? nullptr : row_scratch(cols);
    for (int64_t r = r0; r < r1; ++r) {
      float* v = direct ? out.data<float>() + r * cols : row;
      load_f32(x, r * cols, cols, v);
      row_fn(v, cols);
      if (!direct) store_f32(out, r * cols, cols, v);
    }
  });
}

}  // namespace mto::cpu
