// The small-M row-streaming products (gemv_t, gemv_n) and the cpu kernels' ISA choice. The
// many-row product, gemm, is in gemm_packed.cc.
//
// gemv_t (linear, few rows of x) dots each decoded W row span with every row of A while it sits
// in L1; gemv_n (matmul, few rows of a) streams rows of B and accumulates C's rows in L1. Neither
// packs: with few rows the work is bound by reading the weights.
//
// Kernels are templates over the vector width and are instantiated for each ISA (simd.h):
// baseline (SSE2 / NEON / plain C++), AVX2+FMA and AVX-512, picked once at run time on x86-64
// (core/cpu_features.h).
#include "gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "../core/cpu_features.h"
#include "scratch.h"
#include "simd.h"

namespace mto::cpu {
namespace {

using simd::Vec;

constexpr int64_t kMinTaskFlops = int64_t(1) << 21;  // below this a thread costs more than it saves
constexpr int64_t kGemvRows = 8;        // W rows gemv_t fetches together
constexpr int64_t kGemvDepth = 2 * kDepthBlock;  // k-chunk of gemv_t (rows + A chunk fit L1)
constexpr int64_t kMinGemvElems = int64_t(1) << 16;
constexpr int64_t kAxpyFloats = 8192;  // gemv_n: C block (M x columns) kept in L1 (32 KiB)
constexpr int64_t kAxpyMinCols = 256;  // gemv_n: shortest run of a B row (contiguous reads)

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---- small-M dot products ----------------------------------------------------------------------

// out[r * ldo + m] += dot(rows[r][0:len], a[m * lda + 0:len]) for r < R, m < MB.
template <int MB, int R, int W>
MTO_INLINE void dots_tile(const float* const* rows, const float* a, int64_t lda, int64_t len,
                          float* out, int64_t ldo) {
  Vec<W> acc[R][MB];
  MTO_UNROLL
  for (int r = 0; r < R; ++r)
    MTO_UNROLL
    for (int m = 0; m < MB; ++m) simd::splat<W>(acc[r][m], 0.f);
  int64_t k = 0;
  for (; k + W <= len; k += W) {
    Vec<W> x[MB];
    MTO_UNROLL
    for (int m = 0; m < MB; ++m) simd::load<W>(x[m], a + m * lda + k);
    MTO_UNROLL
    for (int r = 0; r < R; ++r) {
      Vec<W> w;
      simd::load<W>(w, rows[r] + k);
      MTO_UNROLL
      for (int m = 0; m < MB; ++m) simd::madd<W>(acc[r][m], w, x[m]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int m = 0; m < MB; ++m) {
      float s = simd::hsum<W>(acc[r][m]);
      for (int64_t t = k; t < len; ++t) s += rows[r][t] * a[m * lda + t];
      out[r * ldo + m] += s;
    }
  }
}

// out[r * M + m] += dots of kGemvRows W rows (rows past nrows alias row 0; their sums are
// ignored) with M rows of A. Rows of A go 4 at a time, W rows R at a time, keeping R x MB
// accumulators in registers (at most 8: fits AVX2's 16 registers with the operands).
template <int W>
MTO_INLINE void dots_impl(const float* const* rows, int nrows, const float* a, int64_t lda,
                          int64_t M, int64_t len, float* out) {
  for (int64_t m0 = 0; m0 < M; m0 += 4) {
    const float* am = a + m0 * lda;
    float* o = out + m0;
    switch (std::min<int64_t>(4, M - m0)) {
      case 1:
        dots_tile<1, 8, W>(rows, am, lda, len, o, M);
        break;
      case 2:
        for (int r = 0; r < nrows; r += 4) dots_tile<2, 4, W>(rows + r, am, lda, len, o + r * M, M);
        break;
      case 3:
        for (int r = 0; r < nrows; r += 2) dots_tile<3, 2, W>(rows + r, am, lda, len, o + r * M, M);
        break;
      default:
        for (int r = 0; r < nrows; r += 2) dots_tile<4, 2, W>(rows + r, am, lda, len, o + r * M, M);
        break;
    }
  }
}
static_assert(kGemvRows == 8, "dots_impl works on 8 W rows at a time");

// ---- small-M products with row-major B ---------------------------------------------------------

// c[m * ldc + 0:nc] += sum over r < NK of a[m * lda + r] * rows[r][0:nc], for m < M.
template <int NK, int W>
MTO_INLINE void axpy_tile(int64_t M, int64_t nc, const float* const* rows, const float* a,
                          int64_t lda, float* c, int64_t ldc) {
  for (int64_t m = 0; m < M; ++m) {
    float am[NK];
    MTO_UNROLL
    for (int r = 0; r < NK; ++r) am[r] = a[m * lda + r];
    float* cm = c + m * ldc;
    int64_t j = 0;
    for (; j + W <= nc; j += W) {
      Vec<W> acc, b;
      simd::load<W>(acc, cm + j);
      MTO_UNROLL
      for (int r = 0; r < NK; ++r) {
        simd::load<W>(b, rows[r] + j);
        simd::madd<W>(acc, b, am[r]);
      }
      simd::store<W>(cm + j, acc);
    }
    for (; j < nc; ++j) {
      float s = cm[j];
      for (int r = 0; r < NK; ++r) s += am[r] * rows[r][j];
      cm[j] = s;
    }
  }
}

// Up to kAxpyRows rows of B at a time: C's rows are loaded and stored once per group.
constexpr int kAxpyRows = 4;
template <int W>
MTO_INLINE void axpy_impl(int nk, int64_t M, int64_t nc, const float* const* rows, const float* a,
                          int64_t lda, float* c, int64_t ldc) {
  switch (nk) {
    case 1: return axpy_tile<1, W>(M, nc, rows, a, lda, c, ldc);
    case 2: return axpy_tile<2, W>(M, nc, rows, a, lda, c, ldc);
    case 3: return axpy_tile<3, W>(M, nc, rows, a, lda, c, ldc);
    default: return axpy_tile<4, W>(M, nc, rows, a, lda, c, ldc);
  }
}

// ---- per-ISA instantiations --------------------------------------------------------------------

using DotsFn = void (*)(const float* const*, int, const float*, int64_t, int64_t, int64_t, float*);
using AxpyFn = void (*)(int, int64_t, int64_t, const float* const*, const float*, int64_t, float*,
                        int64_t);

struct Kernels {
  GemmIsa isa;
  DotsFn dots;
  AxpyFn axpy;
};

void dots_base(const float* const* rows, int nrows, const float* a, int64_t lda, int64_t M,
               int64_t len, float* out) {
  dots_impl<4>(rows, nrows, a, lda, M, len, out);
}
void axpy_base(int nk, int64_t M, int64_t nc, const float* const* rows, const float* a, int64_t lda,
               float* c, int64_t ldc) {
  axpy_impl<4>(nk, M, nc, rows, a, lda, c, ldc);
}
constexpr Kernels kBaseKernels{GemmIsa::Baseline, dots_base, axpy_base};

#if MTO_X86_DISPATCH
MTO_TARGET_AVX2 void dots_avx2(const float* const* rows, int nrows, const float* a, int64_t lda,
                               int64_t M, int64_t len, float* out) {
  dots_impl<8>(rows, nrows, a, lda, M, len, out);
}
MTO_TARGET_AVX512 void dots_avx512(const float* const* rows, int nrows, const float* a,
                                   int64_t lda, int64_t M, int64_t len, float* out) {
  dots_impl<16>(rows, nrows, a, lda, M, len, out);
}
MTO_TARGET_AVX2 void axpy_avx2(int nk, int64_t M, int64_t nc, const float* const* rows,
                               const float* a, int64_t lda, float* c, int64_t ldc) {
  axpy_impl<8>(nk, M, nc, rows, a, lda, c, ldc);
}
MTO_TARGET_AVX512 void axpy_avx512(int nk, int64_t M, int64_t nc, const float* const* rows,
                                   const float* a, int64_t lda, float* c, int64_t ldc) {
  axpy_impl<16>(nk, M, nc, rows, a, lda, c, ldc);
}
constexpr Kernels kAvx2Kernels{GemmIsa::Avx2, dots_avx2, axpy_avx2};
constexpr Kernels kAvx512Kernels{GemmIsa::Avx512, dots_avx512, axpy_avx512};
#endif

GemmIsa cpu_isa() {
#if MTO_X86_DISPATCH
  const X86Level level = x86_level();
  if (level >= X86Level::Avx512) return GemmIsa::Avx512;
  if (level == X86Level::Avx2) return GemmIsa::Avx2;
#endif
  return GemmIsa::Baseline;
}

const Kernels& kernels_for(GemmIsa isa) {
#if MTO_X86_DISPATCH
  if (isa == GemmIsa::Avx512) return kAvx512Kernels;
  if (isa == GemmIsa::Avx2) return kAvx2Kernels;
#endif
  (void)isa;
  return kBaseKernels;
}

std::atomic<const Kernels*> g_kernels{nullptr};

const Kernels& kernels() {
  const Kernels* k = g_kernels.load(std::memory_order_acquire);
  if (!k) {
    k = &kernels_for(cpu_isa());
    g_kernels.store(k, std::memory_order_release);
  }
  return *k;
}

thread_local std::vector<float> tl_rows;   // decoded W row spans (gemv_t)
thread_local std::vector<float> tl_sums;   // dot products of gemv_t

}  // namespace

// ---- public entry points -----------------------------------------------------------------------

void gemv_t(ThreadPool& pool, int64_t M, int64_t N, int64_t K, const float* a, int64_t lda,
            const RowSpanSource& w, const float* bias, float* c, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  const Kernels& kern = kernels();
  const int64_t groups = ceil_div(N, kGemvRows);
  const int64_t grain =
      std::max<int64_t>(1, kMinGemvElems / (kGemvRows * std::max<int64_t>(K, 1) * M));
  pool.parallel_for(groups, grain, [&](int64_t g0, int64_t g1) {
    float* tmp = aligned_scratch(tl_rows, size_t(kGemvRows * kGemvDepth));
    float* out = aligned_scratch(tl_sums, size_t(kGemvRows * M));  // [kGemvRows][M] dot products
    for (int64_t gi = g0; gi < g1; ++gi) {
      const int64_t n0 = gi * kGemvRows;
      const int nr = int(std::min<int64_t>(kGemvRows, N - n0));
      std::fill(out, out + kGemvRows * M, 0.f);
      for (int64_t k0 = 0; k0 < K; k0 += kGemvDepth) {
        const int64_t k1 = std::min(K, k0 + kGemvDepth);
        const float* rows[kGemvRows];
        for (int r = 0; r < nr; ++r) rows[r] = w.span(n0 + r, k0, k1, tmp + r * kGemvDepth);
        for (int r = nr; r < kGemvRows; ++r) rows[r] = rows[0];
        kern.dots(rows, nr, a + k0, lda, M, k1 - k0, out);
      }
      for (int64_t m = 0; m < M; ++m)
        for (int r = 0; r < nr; ++r)
          c[m * ldc + n0 + r] = out[r * M + m] + (bias ? bias[n0 + r] : 0.f);
    }
  });
}

void gemv_n(ThreadPool& pool, const GemmArgs& g, const RowSpanSource& b_rows,
            int64_t b_batch_rows) {
  if (g.batch <= 0 || g.M <= 0 || g.N <= 0) return;
  const Kernels& kern = kernels();
  // Column chunks as long as C's rows fit L1 (long contiguous runs of each B row stream fastest),
  // cut shorter only to give every thread work.
  const int64_t threads = pool.size();
  int64_t nc = std::max(kAxpyMinCols, kAxpyFloats / g.M / kPanelWidth * kPanelWidth);
  if (g.batch * ceil_div(g.N, nc) < threads)
    nc = std::max(kAxpyMinCols, ceil_div(ceil_div(g.N, ceil_div(threads, g.batch)), kPanelWidth) *
                                    kPanelWidth);
  nc = std::min(nc, g.N);
  const int64_t nchunks = ceil_div(g.N, nc);
  const int64_t task_flops = 2 * g.M * nc * std::max<int64_t>(g.K, 1);
  const int64_t grain = std::max<int64_t>(1, kMinTaskFlops / task_flops);
  pool.parallel_for(g.batch * nchunks, grain, [&](int64_t t0, int64_t t1) {
    float* tmp = aligned_scratch(tl_rows, size_t(kAxpyRows * nc));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / nchunks;
      const int64_t n0 = t % nchunks * nc;
      const int64_t ncur = std::min(nc, g.N - n0);
      const float* a = g.a + b * g.a_batch_stride;
      float* c = g.c + b * g.c_batch_stride + n0;
      for (int64_t m = 0; m < g.M; ++m) {
        float* row = c + m * g.ldc;
        for (int64_t j = 0; j < ncur; ++j) row[j] = g.bias ? g.bias[n0 + j] : 0.f;
      }
      for (int64_t k = 0; k < g.K; k += kAxpyRows) {
        const int nk = int(std::min<int64_t>(kAxpyRows, g.K - k));
        const float* rows[kAxpyRows];
        for (int r = 0; r < nk; ++r)
          rows[r] = b_rows.span(b * b_batch_rows + k + r, n0, n0 + ncur, tmp + r * nc);
        kern.axpy(nk, g.M, ncur, rows, a + k, g.lda, c, g.ldc);
      }
    }
  });
}

GemmIsa gemm_isa() { return kernels().isa; }

GemmIsa set_gemm_isa(GemmIsa isa) {
  const Kernels& k = kernels_for(std::min(isa, cpu_isa()));
  g_kernels.store(&k, std::memory_order_release);
  return k.isa;
}

const char* gemm_isa_name(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::Avx512: return "avx512";
    case GemmIsa::Avx2: return "avx2";
    default: return "baseline";
  }
}

}  // namespace mto::cpu
