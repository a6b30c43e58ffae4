// softmax over the last axis (core/ops.h RowsParams): exp(x - max) / sum, in two passes over a
// row, as the Metal kernel does: the first keeps a running maximum and the sum of exp(x - max)
// (blocks of kRun elements: the block's maximum, the sum rescaled when it grows, then the block's
// exponentials summed in float lanes and added in double), the second writes exp(x - max) / sum
// straight into the output. exp is vmath.h's vectorised exp of non-positive arguments (within
// 1 ulp); the two passes are compiled for AVX2 and AVX-512 too and chosen at run time
// (gemm_isa(), as attention.cc does). A few wide rows (a decode step's logits) are cut into
// column chunks shared by the pool's threads, whose partial maxima and sums are then combined.
// Plain float arithmetic: a NaN in a row, a +inf (inf - inf), or a row of only -inf (0 / 0) makes
// the row NaN, as in PyTorch.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gemm.h"
#include "ops.h"
#include "rows.h"
#include "simd.h"
#include "vmath.h"

namespace mto::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The running statistics of a row (or of a part of it): the maximum m, the sum of exp(x - m), and
// whether a NaN was seen (a NaN never wins a comparison, so the maximum alone would miss it).
struct Stats {
  float m = kNegInf;
  double sum = 0;
  bool nan = false;
};

// Merges b (another part of the row) into a.
void merge(Stats& a, const Stats& b) {
  a.nan = a.nan || b.nan;
  if (b.m == kNegInf) return;  // b saw only -inf (or nothing): it adds 0
  if (a.m == kNegInf) {
    a.m = b.m;
    a.sum = b.sum;
    return;
  }
  const float m = std::max(a.m, b.m);  // +inf: inf - inf makes the sum NaN, as it should
  a.sum = a.sum * std::exp(double(a.m) - double(m)) + b.sum * std::exp(double(b.m) - double(m));
  a.m = m;
}

// Pass 1 over x[0, n), into st.
template <int W>
MTO_INLINE void stats_run(const float* x, int64_t n, Stats& st) {
  for (int64_t b0 = 0; b0 < n; b0 += kRun) {
    const int64_t len = std::min<int64_t>(kRun, n - b0);
    const float* v = x + b0;
    float bm = kNegInf;
    bool nan = false;
    int64_t i = 0;
#if MTO_GNU_EXTENSIONS
    using V = simd::Vec<W>;
    using I = vmath::IVec<W>;
    if (len >= W) {
      V mv;
      simd::splat<W>(mv, kNegInf);
      I bad{};
      for (; i + W <= len; i += W) {
        V xv;
        simd::load<W>(xv, v + i);
        bad |= xv != xv;
        mv = xv > mv ? xv : mv;
      }
      for (int k = 0; k < W; ++k) {
        nan = nan || bad[k] != 0;
        bm = mv[k] > bm ? mv[k] : bm;
      }
    }
#endif
    for (; i < len; ++i) {
      nan = nan || v[i] != v[i];
      bm = v[i] > bm ? v[i] : bm;
    }
    st.nan = st.nan || nan;
    if (bm > st.m) {
      if (st.sum != 0) st.sum *= std::exp(double(st.m) - double(bm));
      st.m = bm;
    }
    if (st.m == kNegInf) continue;  // only -inf so far: nothing to add
    float part = 0;
    i = 0;
#if MTO_GNU_EXTENSIONS
    if (len >= W) {
      V acc{}, mv;
      simd::splat<W>(mv, st.m);
      for (; i + W <= len; i += W) {
        V xv, e;
        simd::load<W>(xv, v + i);
        vmath::exp_neg<V>(xv - mv, V{}, e);
        acc += e;
      }
      part = simd::hsum<W>(acc);
    }
#endif
    for (; i < len; ++i) {
      float e;
      vmath::exp_neg<float>(v[i] - st.m, 0.f, e);
      part += e;
    }
    st.sum += part;
  }
}

// Pass 2: out[i] = exp(x[i] - m) * inv (out may be x).
template <int W>
MTO_INLINE void normalise_run(const float* x, float* out, int64_t n, float m, float inv) {
  int64_t i = 0;
#if MTO_GNU_EXTENSIONS
  using V = simd::Vec<W>;
  V mv, iv;
  simd::splat<W>(mv, m);
  simd::splat<W>(iv, inv);
  for (; i + W <= n; i += W) {
    V xv, e;
    simd::load<W>(xv, x + i);
    vmath::exp_neg<V>(xv - mv, V{}, e);
    simd::store<W>(out + i, e * iv);
  }
#endif
  for (; i < n; ++i) {
    float e;
    vmath::exp_neg<float>(x[i] - m, 0.f, e);
    out[i] = e * inv;
  }
}

using StatsFn = void (*)(const float*, int64_t, Stats&);
using NormFn = void (*)(const float*, float*, int64_t, float, float);
void stats_base(const float* x, int64_t n, Stats& st) { stats_run<4>(x, n, st); }
void norm_base(const float* x, float* o, int64_t n, float m, float inv) { normalise_run<4>(x, o, n, m, inv); }
#if MTO_X86_DISPATCH
MTO_TARGET_AVX2 void stats_avx2(const float* x, int64_t n, Stats& st) { stats_run<8>(x, n, st); }
MTO_TARGET_AVX2 void norm_avx2(const float* x, float* o, int64_t n, float m, float inv) {
  normalise_run<8>(x, o, n, m, inv);
}
MTO_TARGET_AVX512 void stats_avx512(const float* x, int64_t n, Stats& st) { stats_run<16>(x, n, st); }
MTO_TARGET_AVX512 void norm_avx512(const float* x, float* o, int64_t n, float m, float inv) {
  normalise_run<16>(x, o, n, m, inv);
}
#endif

struct Kernels {
  StatsFn stats = stats_base;
  NormFn norm = norm_base;
};

// Pass 1 over the elements [c0, c1) of a row at element `at` of x (any float dtype; other than
// float32, converted kRun elements at a time).
void stats_range(const Kernels& k, const Tensor& x, int64_t at, int64_t c0, int64_t c1, Stats& st) {
  if (x.dtype == DType::Float32) return k.stats(x.data<float>() + at + c0, c1 - c0, st);
  float buf[kRun];
  for (int64_t c = c0; c < c1; c += kRun) {
    const int64_t n = std::min<int64_t>(kRun, c1 - c);
    load_f32(x, at + c, n, buf);
    k.stats(buf, n, st);
  }
}

// Pass 2 over the same range, into out's dtype.
void normalise_range(const Kernels& k, const Tensor& x, Tensor& out, int64_t at, int64_t c0, int64_t c1,
                     float m, float inv) {
  const bool in_f32 = x.dtype == DType::Float32, out_f32 = out.dtype == DType::Float32;
  if (in_f32 && out_f32) return k.norm(x.data<float>() + at + c0, out.data<float>() + at + c0, c1 - c0, m, inv);
  float buf[kRun];
  for (int64_t c = c0; c < c1; c += kRun) {
    const int64_t n = std::min<int64_t>(kRun, c1 - c);
    const float* src = in_f32 ? x.data<float>() + at + c : buf;
    float* dst = out_f32 ? out.data<float>() + at + c : buf;
    if (!in_f32) load_f32(x, at + c, n, buf);
    k.norm(src, dst, n, m, inv);
    if (!out_f32) store_f32(out, at + c, n, buf);
  }
}

// The maximum and 1 / sum that pass 2 applies.
void finish(const Stats& st, float& m, float& inv) {
  m = st.m;
  inv = st.nan ? std::numeric_limits<float>::quiet_NaN() : float(1.0 / st.sum);
}

}  // namespace

void softmax(ThreadPool& pool, const Tensor& x, const RowsParams& p, Tensor& out) {
  const int64_t cols = p.cols;
  Kernels k;
#if MTO_X86_DISPATCH
  const GemmIsa isa = gemm_isa();
  if (isa == GemmIsa::Avx512) k = Kernels{stats_avx512, norm_avx512};
  if (isa == GemmIsa::Avx2) k = Kernels{stats_avx2, norm_avx2};
#endif
  // Fewer rows than threads, each wide enough to share: column chunks of at least
  // kParallelGrain elements, one row at a time.
  const int64_t chunks = std::min<int64_t>(pool.size(), cols / kParallelGrain);
  if (p.rows < pool.size() && chunks > 1) {
    const int64_t step = (cols + chunks - 1) / chunks;
    std::vector<Stats> parts(static_cast<size_t>(chunks));
    for (int64_t r = 0; r < p.rows; ++r) {
      const int64_t at = r * cols;
      std::fill(parts.begin(), parts.end(), Stats{});
      pool.parallel_for(chunks, 1, [&](int64_t k0, int64_t k1) {
        for (int64_t c = k0; c < k1; ++c)
          stats_range(k, x, at, c * step, std::min(cols, (c + 1) * step), parts[size_t(c)]);
      });
      Stats st;
      for (const Stats& s : parts) merge(st, s);
      float m, inv;
      finish(st, m, inv);
      pool.parallel_for(chunks, 1, [&](int64_t k0, int64_t k1) {
        for (int64_t c = k0; c < k1; ++c)
          normalise_range(k, x, out, at, c * step, std::min(cols, (c + 1) * step), m, inv);
      });
    }
    return;
  }
  pool.parallel_for(p.rows, std::max<int64_t>(1, kParallelGrain / cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      Stats st;
      stats_range(k, x, r * cols, 0, cols, st);
      float m, inv;
      finish(st, m, inv);
      normalise_range(k, x, out, r * cols, 0, cols, m, inv);
    }
  });
}

}  // namespace mto::cpu
