// rmsNorm and layerNorm over the last axis (core/ops.h NormParams): one row at a time, statistics
// summed in double lanes (float squares overflow for rows of 1e30; a row of 8192 float32 squares
// summed in one float loses ~1e-4 relative). The row loop is compiled for AVX2 and AVX-512 too and
// chosen at run time (gemm_isa()), as softmax.cc's.
#include <cmath>
#include <vector>

#include "gemm.h"
#include "simd.h"
#include "ops.h"
#include "rows.h"

namespace mto::cpu {
namespace {

// The sum of (v - c) or of (v - c)^2, in double lanes: a float square overflows from |v| ~ 2e19
// (and underflows below ~1e-19), where a double one stays exact enough; the lanes vectorise.
MTO_INLINE double sum_row(const float* v, int64_t n, double c, bool squares) {
  double acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) {
      const double d = double(v[i + k]) - c;
      acc[k] += squares ? d * d : d;
    }
  }
  double sum = 0;
  for (double a : acc) sum += a;
  for (; i < n; ++i) {
    const double d = double(v[i]) - c;
    sum += squares ? d * d : d;
  }
  return sum;
}

struct Row {
  const float* w;  // null: no weight
  const float* b;  // null: no bias
  float eps;
  bool layer;
};

MTO_INLINE void norm_row(float* v, int64_t n, const Row& r) {
  const double mean = r.layer ? sum_row(v, n, 0.0, false) / double(n) : 0;
  const float m = float(mean);
  const float scale = float(1.0 / std::sqrt(sum_row(v, n, mean, true) / double(n) + double(r.eps)));
  if (r.w && r.b) {
    for (int64_t c = 0; c < n; ++c) v[c] = (v[c] - m) * scale * r.w[c] + r.b[c];
  } else if (r.w) {
    for (int64_t c = 0; c < n; ++c) v[c] = (v[c] - m) * scale * r.w[c];
  } else {
    for (int64_t c = 0; c < n; ++c) v[c] = (v[c] - m) * scale;
  }
}

void row_base(float* v, int64_t n, const Row& r) { norm_row(v, n, r); }
#if MTO_X86_DISPATCH
MTO_TARGET_AVX2 void row_avx2(float* v, int64_t n, const Row& r) { norm_row(v, n, r); }
MTO_TARGET_AVX512 void row_avx512(float* v, int64_t n, const Row& r) { norm_row(v, n, r); }
#endif

}  // namespace

void norm(ThreadPool& pool, const Tensor& x, const Tensor* weight, const Tensor* bias,
          const NormParams& p, Tensor& out) {
  const int64_t cols = p.cols;
  std::vector<float> w(weight ? size_t(cols) : 0), b(bias ? size_t(cols) : 0);
  if (weight) load_f32(*weight, 0, cols, w.data());
  if (bias) load_f32(*bias, 0, cols, b.data());
  const Row r{weight ? w.data() : nullptr, bias ? b.data() : nullptr, p.eps, p.layer};
  void (*row_fn)(float*, int64_t, const Row&) = row_base;
#if MTO_X86_DISPATCH
  const GemmIsa isa = gemm_isa();
  if (isa == GemmIsa::Avx512) row_fn = row_avx512;
  if (isa == GemmIsa::Avx2) row_fn = row_avx2;
#endif
  pool.parallel_for(p.rows, std::max<int64_t>(1, kParallelGrain / cols), [&](int64_t r0, int64_t r1) {
    // float32 out: each row is normalised in place in the output; else in a scratch row.
    const bool direct = out.dtype == DType::Float32;
    float* row = direct ? nullptr : row_scratch(cols);
    for (int64_t i = r0; i < r1; ++i) {
      float* v = direct ? out.data<float>() + i * cols : row;
      load_f32(x, i * cols, cols, v);
      row_fn(v, cols, r);
      if (!direct) store_f32(out, i * cols, cols, v);
    }
  });
}

}  // namespace mto::cpu
