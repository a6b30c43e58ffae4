// rmsNorm and layerNorm over the last axis (core/ops.h NormParams): one row at a time, statistics
// summed in double lanes (float squares overflow for rows of 1e30; a row of 8192 float32 squares
// summed in one float loses ~1e-4 relative). The row loop is compiled for AVX2 and AVX-512 too and
// chosen at run time (gemm_isa()), as softmax.cc's.
#include <cfloat>
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

// dst[i] = (x[i] * f - m) * scale (* w[i] (+ b[i])) over [0, n) (f a power of two, norm_row's
// prescale, 1 for most rows): W lanes at a time, dst's vectors
// stored non-temporally where Stream says (the elements before its first W-lane boundary plainly).
// `next` (the next row of x, or null) is prefetched as the row is written: reading it then overlaps
// these stores, where it would otherwise start only once they are done (rmsNorm 4096 x 4096 on
// Zen 5: ~4.0 -> ~3.1 ms).
template <int W, bool Stream>
MTO_INLINE void write_row(float* dst, const float* x, int64_t n, float f, float m, float scale, const Row& r,
                          const float* next) {
  int64_t c = 0;
  const auto one = [&](int64_t k) {
    float v = (x[k] * f - m) * scale;
    if (r.w) v *= r.w[k];
    if (r.b) v += r.b[k];
    dst[k] = v;
  };
#if MTO_GNU_EXTENSIONS
  if (Stream) {
    for (; c < n && reinterpret_cast<uintptr_t>(dst + c) % (W * sizeof(float)) != 0; ++c) one(c);
  }
  using V = simd::Vec<W>;
  V vf, vm, vs;
  simd::splat<W>(vf, f);
  simd::splat<W>(vm, m);
  simd::splat<W>(vs, scale);
  for (; c + W <= n; c += W) {
    if (next) simd::prefetch(next + c);
    V v, t;
    simd::load<W>(v, x + c);
    v = (v * vf - vm) * vs;
    if (r.w) {
      simd::load<W>(t, r.w + c);
      v *= t;
    }
    if (r.b) {
      simd::load<W>(t, r.b + c);
      v += t;
    }
    if (Stream) simd::store_stream<W>(dst + c, v);
    else simd::store<W>(dst + c, v);
  }
#endif
  for (; c < n; ++c) one(c);
}

// dst[0, n) = the normalised x[0, n) (dst may be x). The statistics are exact enough in double,
// but 1 / sqrt(var + eps) leaves float32's normal range where the row's rms does (below 2^-126
// with eps = 0: a row of subnormals, up to inf; above 2^126: a subnormal scale losing bits, and
// x - mean may overflow). Such a row is scaled by f = 2^64 or 2^-64 first, as shaders/norm.metal
// prescales it (norm_prescale):
// x * f is exact there, the mean is scaled in double and the scale divided by f, so the outputs
// stay finite and the cpu's answer is the kernel's. A scale of inf (a zero row, eps = 0), 0 (an
// inf in the row) or NaN stays as plain arithmetic gives it, as in the kernel.
template <int W>
MTO_INLINE void norm_row(float* dst, const float* x, int64_t n, const Row& r, bool stream, const float* next) {
  const double mean = r.layer ? sum_row(x, n, 0.0, false) / double(n) : 0;
  const double var = sum_row(x, n, mean, true) / double(n);
  const double scale = 1.0 / std::sqrt(var + double(r.eps));
  double f = 1.0;
  if (std::isfinite(scale) && scale > double(FLT_MAX)) f = 0x1p64;
  // |x - mean| <= sqrt(n var): from 2^126 up it may pass FLT_MAX in float (layerNorm of a row of
  // +-3e38), so such rows are scaled down too.
  if ((scale > 0 && scale < double(FLT_MIN)) || (std::isfinite(var) && var * double(n) >= 0x1p252)) f = 0x1p-64;
  const float fs = float(f), m = float(mean * f), s = float(scale / f);
  if (stream) write_row<W, true>(dst, x, n, fs, m, s, r, next);
  else write_row<W, false>(dst, x, n, fs, m, s, r, next);
}

using RowFn = void (*)(float*, const float*, int64_t, const Row&, bool, const float*);
void row_base(float* dst, const float* x, int64_t n, const Row& r, bool stream, const float* next) {
  norm_row<4>(dst, x, n, r, stream, next);
}
#if MTO_X86_DISPATCH
MTO_TARGET_AVX2 void row_avx2(float* dst, const float* x, int64_t n, const Row& r, bool stream,
                              const float* next) {
  norm_row<8>(dst, x, n, r, stream, next);
}
MTO_TARGET_AVX512 void row_avx512(float* dst, const float* x, int64_t n, const Row& r, bool stream,
                                  const float* next) {
  norm_row<16>(dst, x, n, r, stream, next);
}
#endif

}  // namespace

void norm(ThreadPool& pool, const Tensor& x, const Tensor* weight, const Tensor* bias,
          const NormParams& p, Tensor& out) {
  const int64_t cols = p.cols;
  std::vector<float> w(weight ? size_t(cols) : 0), b(bias ? size_t(cols) : 0);
  if (weight) load_f32(*weight, 0, cols, w.data());
  if (bias) load_f32(*bias, 0, cols, b.data());
  const Row r{weight ? w.data() : nullptr, bias ? b.data() : nullptr, p.eps, p.layer};
  RowFn row_fn = row_base;
#if MTO_X86_DISPATCH
  const GemmIsa isa = gemm_isa();
  if (isa == GemmIsa::Avx512) row_fn = row_avx512;
  if (isa == GemmIsa::Avx2) row_fn = row_avx2;
#endif
  // float32 x is read where it lies and a float32 output written directly (a non-float32 one goes
  // through a scratch row).
  const bool direct_in = x.dtype == DType::Float32, direct_out = out.dtype == DType::Float32;
  const bool stream = streams_output(out, p.rows * cols);
  pool.parallel_for(p.rows, std::max<int64_t>(1, kParallelGrain / cols), [&](int64_t r0, int64_t r1) {
    float* row = direct_in && direct_out ? nullptr : row_scratch(cols);
    for (int64_t i = r0; i < r1; ++i) {
      const float* in = direct_in ? x.data<float>() + i * cols : row;
      if (!direct_in) load_f32(x, i * cols, cols, row);
      float* dst = direct_out ? out.data<float>() + i * cols : row;
      const float* next = direct_in && i + 1 < r1 ? in + cols : nullptr;
      row_fn(dst, in, cols, r, stream, next);
      if (!direct_out) store_f32(out, i * cols, cols, row);
    }
    if (stream) stream_fence();
  });
}

}  // namespace mto::cpu
