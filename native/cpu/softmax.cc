// softmax over the last axis (core/ops.h RowsParams): exp(x - max) / sum in two passes over a
// row, as the Metal kernel does. The first reads x once, in blocks of kRun elements: the block's
// maximum raises the running maximum m (the sum so far rescaled), then exp(x - m) is written to
// the output and summed (in float lanes within a block, in double across blocks). The second
// multiplies each block by exp(m_block - max) / sum, a block of the output that is still in the
// caches. One exponential per element (computing them twice, to write the output only once, made
// the op compute-bound with AVX2), and the next block prefetched while a block's exponentials run
// (~12% faster on 64 x 128256: each thread otherwise waits on memory, then computes with memory
// idle). exp is vmath.h's vectorised exp of non-positive arguments (within 1 ulp; terms below
// 2^-126 are 0); both passes are compiled for AVX2 and AVX-512 too and chosen at run time
// (gemm_isa(), as attention.cc does). A few wide rows (a decode step's logits) are cut into
// column chunks shared by the pool's threads, whose maxima and sums are then combined.
// An output larger than the caches goes through a scratch row instead and is written with
// non-temporal stores in pass 2 (no read of each output line for ownership): 3.40 -> 2.76 ms on
// 64 x 128256 on Zen 5, whose 1 MiB L2 holds the 513 KB row (on Zen 3's 512 KiB L2 the same idea
// measured no better, so it is kept to rows of at most 1 MiB).
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

// Pass 1 over x[0, n) (whole blocks of kRun but the last): e[i] = exp(x[i] - m_b), m_b the running
// maximum after x's block b, stored in bmax[b]; the statistics into st. e may be x.
template <int W>
MTO_INLINE void exp_run(const float* x, float* e, int64_t n, float* bmax, Stats& st) {
  for (int64_t b0 = 0; b0 < n; b0 += kRun) {
    const int64_t len = std::min<int64_t>(kRun, n - b0);
    const float* v = x + b0;
    float* ev = e + b0;
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
    *bmax++ = st.m;
    if (st.m == kNegInf) {  // only -inf so far: zeros (pass 2 makes them NaN if the row stays so)
      std::fill(ev, ev + len, 0.f);
      continue;
    }
    float part = 0;
    i = 0;
#if MTO_GNU_EXTENSIONS
    if (len >= W) {
      V acc{}, mv;
      simd::splat<W>(mv, st.m);
      for (; i + W <= len; i += W) {
        // The next block, fetched while this one's exponentials run (else its first loop waits
        // on memory, and memory idles while this loop computes).
        if (i % 16 == 0) {
          simd::prefetch(v + kRun + i);
          simd::prefetch(ev + kRun + i, true);
        }
        V xv, ex;
        simd::load<W>(xv, v + i);
        vmath::exp_neg<V, false>(xv - mv, V{}, ex);
        simd::store<W>(ev + i, ex);
        acc += ex;
      }
      part = simd::hsum<W>(acc);
    }
#endif
    for (; i < len; ++i) {
      float ex;
      vmath::exp_neg<float, false>(v[i] - st.m, 0.f, ex);
      ev[i] = ex;
      part += ex;
    }
    st.sum += part;
  }
}

// Pass 2 over one block: out[i] = e[i] * f (out may be e). Stream: into memory the caches will
// not hold anyway, with non-temporal stores (no read of each output line for ownership), from e in
// the caches; the elements before out's first W-lane boundary plainly.
template <int W, bool Stream = false>
MTO_INLINE void scale_run(const float* e, float* out, int64_t n, float f) {
  int64_t i = 0;
#if MTO_GNU_EXTENSIONS
  if (Stream) {
    for (; i < n && reinterpret_cast<uintptr_t>(out + i) % (W * sizeof(float)) != 0; ++i) out[i] = e[i] * f;
  }
  using V = simd::Vec<W>;
  V fv;
  simd::splat<W>(fv, f);
  for (; i + W <= n; i += W) {
    V v;
    simd::load<W>(v, e + i);
    v *= fv;
    if (Stream) simd::store_stream<W>(out + i, v);
    else simd::store<W>(out + i, v);
  }
#endif
  for (; i < n; ++i) out[i] = e[i] * f;
}

using ExpFn = void (*)(const float*, float*, int64_t, float*, Stats&);
using ScaleFn = void (*)(const float*, float*, int64_t, float);
void exp_base(const float* x, float* e, int64_t n, float* bmax, Stats& st) { exp_run<4>(x, e, n, bmax, st); }
void scale_base(const float* e, float* o, int64_t n, float f) { scale_run<4>(e, o, n, f); }
#if MTO_X86_DISPATCH
MTO_TARGET_AVX2 void exp_avx2(const float* x, float* e, int64_t n, float* bmax, Stats& st) {
  exp_run<8>(x, e, n, bmax, st);
}
MTO_TARGET_AVX2 void scale_avx2(const float* e, float* o, int64_t n, float f) { scale_run<8>(e, o, n, f); }
MTO_TARGET_AVX2 void scale_stream_avx2(const float* e, float* o, int64_t n, float f) {
  scale_run<8, true>(e, o, n, f);
}
MTO_TARGET_AVX512 void exp_avx512(const float* x, float* e, int64_t n, float* bmax, Stats& st) {
  exp_run<16>(x, e, n, bmax, st);
}
MTO_TARGET_AVX512 void scale_avx512(const float* e, float* o, int64_t n, float f) { scale_run<16>(e, o, n, f); }
MTO_TARGET_AVX512 void scale_stream_avx512(const float* e, float* o, int64_t n, float f) {
  scale_run<16, true>(e, o, n, f);
}
#endif

struct Kernels {
  ExpFn exp = exp_base;
  ScaleFn scale = scale_base;
  ScaleFn stream = nullptr;  // non-temporal pass 2 (x86), or none
};

// Pass 1 over the columns [c0, c1) (c0 a multiple of kRun) of the row at element `at` of x (any
// float dtype; other than float32, converted a block at a time) into e (the row's float32
// intermediate: the output itself when it is float32) and bmax (one entry per block of the row).
void exp_range(const Kernels& k, const Tensor& x, int64_t at, int64_t c0, int64_t c1, float* e, float* bmax,
               Stats& st) {
  if (x.dtype == DType::Float32) return k.exp(x.data<float>() + at + c0, e + c0, c1 - c0, bmax + c0 / kRun, st);
  for (int64_t c = c0; c < c1; c += kRun) {
    const int64_t n = std::min<int64_t>(kRun, c1 - c);
    load_f32(x, at + c, n, e + c);
    k.exp(e + c, e + c, n, bmax + c / kRun, st);
  }
}

// Pass 2 over the same columns: block b times exp(bmax[b] - m) / sum, into the output's dtype.
void scale_range(const Kernels& k, float* e, Tensor& out, int64_t at, int64_t c0, int64_t c1, const float* bmax,
                 float m, double inv) {
  const bool direct = out.dtype == DType::Float32;
  for (int64_t c = c0; c < c1; c += kRun) {
    const int64_t n = std::min<int64_t>(kRun, c1 - c);
    // m = bmax = -inf (a row of only -inf): exp(NaN), NaN as it should be.
    const float f = float(std::exp(double(bmax[c / kRun]) - double(m)) * inv);
    k.scale(e + c, e + c, n, f);
    if (!direct) store_f32(out, at + c, n, e + c);
  }
}

// The maximum and 1 / sum that pass 2 applies.
void finish(const Stats& st, float& m, double& inv) {
  m = st.m;
  inv = st.nan ? std::numeric_limits<double>::quiet_NaN() : 1.0 / st.sum;
}

}  // namespace

void softmax(ThreadPool& pool, const Tensor& x, const RowsParams& p, Tensor& out) {
  const int64_t cols = p.cols;
  const int64_t blocks = (cols + kRun - 1) / kRun;
  const bool direct = out.dtype == DType::Float32;
  Kernels k;
#if MTO_X86_DISPATCH
  const GemmIsa isa = gemm_isa();
  if (isa == GemmIsa::Avx512) k = Kernels{exp_avx512, scale_avx512, scale_stream_avx512};
  if (isa == GemmIsa::Avx2) k = Kernels{exp_avx2, scale_avx2, scale_stream_avx2};
#endif
  // Fewer rows than threads, each wide enough to share: column chunks of whole blocks, at least
  // kParallelGrain elements each, one row at a time.
  const int64_t chunks = std::min<int64_t>(pool.size(), cols / kParallelGrain);
  if (p.rows < pool.size() && chunks > 1) {
    const int64_t step = (blocks + chunks - 1) / chunks * kRun;
    std::vector<Stats> parts(static_cast<size_t>(chunks));
    std::vector<float> bmax(static_cast<size_t>(blocks)), row(direct ? 0 : size_t(cols));
    for (int64_t r = 0; r < p.rows; ++r) {
      const int64_t at = r * cols;
      float* e = direct ? out.data<float>() + at : row.data();
      std::fill(parts.begin(), parts.end(), Stats{});
      pool.parallel_for(chunks, 1, [&](int64_t k0, int64_t k1) {
        for (int64_t c = k0; c < k1; ++c)
          exp_range(k, x, at, std::min(cols, c * step), std::min(cols, (c + 1) * step), e, bmax.data(), parts[size_t(c)]);
      });
      Stats st;
      for (const Stats& s : parts) merge(st, s);
      float m;
      double inv;
      finish(st, m, inv);
      pool.parallel_for(chunks, 1, [&](int64_t k0, int64_t k1) {
        for (int64_t c = k0; c < k1; ++c)
          scale_range(k, e, out, at, std::min(cols, c * step), std::min(cols, (c + 1) * step), bmax.data(), m, inv);
      });
    }
    return;
  }
  // An output larger than the caches (64 x 128256 float32: 33 MB) is written with non-temporal
  // stores from a scratch row in L2: each output line then crosses to memory once, not read for
  // ownership first and written back later (3 -> 2 transfers per element).
  const bool stream = direct && k.stream && p.rows * cols * 4 >= (int64_t(1) << 25) && cols * 4 <= (int64_t(1) << 20);
  pool.parallel_for(p.rows, std::max<int64_t>(1, kParallelGrain / cols), [&](int64_t r0, int64_t r1) {
    // The float32 intermediate: the output row itself, else a scratch row (and its block maxima).
    const bool own = direct && !stream;
    float* scratch = row_scratch((own ? 0 : cols) + blocks);
    float* bmax = scratch + (own ? 0 : cols);
    for (int64_t r = r0; r < r1; ++r) {
      float* e = own ? out.data<float>() + r * cols : scratch;
      Stats st;
      exp_range(k, x, r * cols, 0, cols, e, bmax, st);
      float m;
      double inv;
      finish(st, m, inv);
      if (stream) {
        float* o = out.data<float>() + r * cols;
        for (int64_t c = 0; c < cols; c += kRun) {
          const int64_t n = std::min<int64_t>(kRun, cols - c);
          k.stream(e + c, o + c, n, float(std::exp(double(bmax[c / kRun]) - double(m)) * inv));
        }
        continue;
      }
      scale_range(k, e, out, r * cols, 0, cols, bmax, m, inv);
    }
    if (stream) stream_fence();  // this thread's streamed lines, before the pool's join publishes them
  });
}

}  // namespace mto::cpu
