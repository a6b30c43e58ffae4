// Rotary position embedding (core/ops.h RopeParams). The angle of each (position, pair) is worked
// out in double, once per op, so that long positions keep float32 accuracy (pos * inv_freq in
// float32 is off by ~pos * 2^-24 radians: 0.006 at position 100,000). The row loop is compiled
// for AVX2 and AVX-512 too and chosen at run time (gemm_isa()), as softmax.cc's.
#include <cmath>
#include <vector>

#include "gemm.h"
#include "simd.h"
#include "ops.h"
#include "rows.h"

namespace mto::cpu {
namespace {

// Rotates the first 2 * half features of one row by the angles whose cosines and sines are c, s.
MTO_INLINE void rope_row(float* v, const float* c, const float* s, int64_t half, bool neox) {
  if (neox) {
    float* a = v;
    float* b = v + half;
    for (int64_t i = 0; i < half; ++i) {
      const float x1 = a[i], x2 = b[i];
      a[i] = x1 * c[i] - x2 * s[i];
      b[i] = x2 * c[i] + x1 * s[i];
    }
  } else {
    for (int64_t i = 0; i < half; ++i) {
      const float x1 = v[2 * i], x2 = v[2 * i + 1];
      v[2 * i] = x1 * c[i] - x2 * s[i];
      v[2 * i + 1] = x2 * c[i] + x1 * s[i];
    }
  }
}

void row_base(float* v, const float* c, const float* s, int64_t half, bool neox) { rope_row(v, c, s, half, neox); }
#if MTO_X86_DISPATCH
MTO_TARGET_AVX2 void row_avx2(float* v, const float* c, const float* s, int64_t half, bool neox) {
  rope_row(v, c, s, half, neox);
}
MTO_TARGET_AVX512 void row_avx512(float* v, const float* c, const float* s, int64_t half, bool neox) {
  rope_row(v, c, s, half, neox);
}
#endif

}  // namespace

void rope(ThreadPool& pool, const Tensor& x, const Tensor* positions, const Tensor* freqs,
          const RopeParams& p, Tensor& out) {
  const int64_t half = p.dims / 2;
  std::vector<double> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    inv[size_t(i)] = freqs ? double(freqs->data<float>()[i])
                           : std::pow(p.base, -2.0 * double(i) / double(p.dims));
  }
  // The table costs L * dims / 2 double sines and cosines (~5 ms for 2048 x 64 on one core, as
  // much as rotating 64 MiB): it is made on every thread of the pool.
  std::vector<float> cs(size_t(p.L * half)), sn(size_t(p.L * half));
  pool.parallel_for(p.L, std::max<int64_t>(1, 256 / half), [&](int64_t l0, int64_t l1) {
    for (int64_t l = l0; l < l1; ++l) {
      const double pos = positions ? double(positions->data<int32_t>()[l]) : double(p.offset + l);
      for (int64_t i = 0; i < half; ++i) {
        const double a = pos * inv[size_t(i)];
        cs[size_t(l * half + i)] = float(std::cos(a));
        sn[size_t(l * half + i)] = float(std::sin(a));
      }
    }
  });
  const int64_t rows = p.B * p.H * p.L, D = p.D;
  void (*row_fn)(float*, const float*, const float*, int64_t, bool) = row_base;
#if MTO_X86_DISPATCH
  const GemmIsa isa = gemm_isa();
  if (isa == GemmIsa::Avx512) row_fn = row_avx512;
  if (isa == GemmIsa::Avx2) row_fn = row_avx2;
#endif
  pool.parallel_for(rows, std::max<int64_t>(1, kParallelGrain / D), [&](int64_t r0, int64_t r1) {
    const bool direct = out.dtype == DType::Float32;
    float* scratch = direct ? nullptr : row_scratch(D);
    for (int64_t r = r0; r < r1; ++r) {
      // Rows are in memory order: (b, h, l) for bhld, (b, l, h) for blhd.
      const int64_t l = p.blhd ? (r / p.H) % p.L : r % p.L;
      float* v = direct ? out.data<float>() + r * D : scratch;
      load_f32(x, r * D, D, v);
      row_fn(v, &cs[size_t(l * half)], &sn[size_t(l * half)], half, p.neox);
      if (!direct) store_f32(out, r * D, D, v);
    }
  });
}

}  // namespace mto::cpu
