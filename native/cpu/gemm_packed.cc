// Blocked, packed float32 GEMM (BLIS loop order): linear's and matmul's many-row products.
//
// A (M x K) is packed once per call, before any product, into slivers of MR rows ([kc][MR] per
// depth block of kc = kDepthBlock), shared by every thread: no task packs A again. Then each task
// owns an equal range of 32-column strips of C (and a range of row slivers when strips are too few
// to share): per depth block it packs (converts or decodes) its B panel once, then for each block
// of mc rows of A (kept in L2) runs the MR x 32 micro-kernel over every (strip, sliver) pair; a
// strip of B (32 x kc floats, 32 KiB) stays in L1 while A's slivers stream from L2.
//
// Micro-kernel shapes, chosen so that loads never outnumber what the core can issue beside its
// FMAs: AVX-512 14 rows x 2 zmm (28 accumulators of 32 registers; per step 2 loads of B and 14
// broadcasts feed 28 FMAs); AVX2 6 x 2 ymm on each half of a strip (12 of 16 registers); baseline
// SSE2 3 x 4 and NEON 6 x 4 vectors of 4. Tasks are as equal as the strips allow and, with
// several threads, number a multiple of 4 per thread, so the threads finish together.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "gemm.h"
#include "scratch.h"
#include "simd.h"

namespace mto::cpu {
namespace {

using simd::Vec;

constexpr int64_t kRowBlock = 192;  // mc target: a packed A block is ~192 x kDepthBlock (192 KiB)
constexpr int64_t kMaxPanelCols = 512;  // widest B panel of a task: 512 KiB, beside A's block in L2
constexpr int64_t kMaxPackedA = int64_t(4) << 20;  // floats of packed A held at once (16 MiB)
constexpr int64_t kMinTaskFlops = int64_t(1) << 21;  // below this a thread costs more than it saves

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---- micro-kernel ------------------------------------------------------------------------------

// acc += n steps of pa (MR-row sliver) x pb (strip slice); advances pa and pb.
template <int MR, int NV, int W>
MTO_INLINE void tile_steps(Vec<W> (&acc)[MR][NV], int64_t n, const float*& pa, const float*& pb) {
  for (int64_t k = 0; k < n; ++k) {
    Vec<W> b[NV];
    MTO_UNROLL
    for (int j = 0; j < NV; ++j) simd::load<W>(b[j], pb + j * W);
    MTO_UNROLL
    for (int i = 0; i < MR; ++i) {
      const float a = pa[i];
      MTO_UNROLL
      for (int j = 0; j < NV; ++j) simd::madd<W>(acc[i][j], b[j], a);
    }
    pa += MR;
    pb += kPanelWidth;
  }
}

// Steps before the end of a tile at which its C rows are fetched into L1 (a few hundred cycles,
// enough for an L2 or L3 hit). Fetched at the start they would be evicted again by the A sliver
// streaming through L1 before use.
constexpr int64_t kLateSteps = 24;

// C[0:mr, 0:nr] (row stride ldc) = pa x pb over kc steps, where pa is an MR-row sliver ([kc][MR])
// and pb the first of NV x W columns of a strip ([kc][kPanelWidth]). First depth block: C =
// product (+ bias); later ones: C += product.
template <int MR, int NV, int W>
MTO_INLINE void micro_tile(int64_t kc, const float* pa, const float* pb, float* c, int64_t ldc,
                           int mr, int nr, const float* bias, bool accumulate) {
  constexpr int NR = NV * W;
  // C is larger than the caches and revisited once per depth block: its tile is asked into L2
  // now and into L1 shortly before the end, so the read-back does not stall on a miss.
  if (accumulate)
    MTO_UNROLL
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; j += 16) simd::prefetch_l2(c + i * ldc + j);
  Vec<W> acc[MR][NV];
  MTO_UNROLL
  for (int i = 0; i < MR; ++i)
    MTO_UNROLL
    for (int j = 0; j < NV; ++j) simd::splat<W>(acc[i][j], 0.f);
  const int64_t early = accumulate ? std::max<int64_t>(0, kc - kLateSteps) : kc;
  tile_steps<MR, NV, W>(acc, early, pa, pb);
  if (accumulate) {
    MTO_UNROLL
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; j += 16) simd::prefetch(c + i * ldc + j, true);
    tile_steps<MR, NV, W>(acc, kc - early, pa, pb);
  }
  if (mr == MR && nr == NR) {
    MTO_UNROLL
    for (int i = 0; i < MR; ++i) {
      MTO_UNROLL
      for (int j = 0; j < NV; ++j) {
        float* p = c + i * ldc + j * W;
        Vec<W> v;
        if (accumulate) {
          simd::load<W>(v, p);
          simd::add<W>(acc[i][j], v);
        } else if (bias) {
          simd::load<W>(v, bias + j * W);
          simd::add<W>(acc[i][j], v);
        }
        simd::store<W>(p, acc[i][j]);
      }
    }
    return;
  }
  // Edge tile: only mr x nr of it is C (the rest multiplied zero padding).
  float tile[MR][NR];
  MTO_UNROLL
  for (int i = 0; i < MR; ++i)
    MTO_UNROLL
    for (int j = 0; j < NV; ++j) simd::store<W>(&tile[i][j * W], acc[i][j]);
  for (int i = 0; i < mr; ++i) {
    float* row = c + i * ldc;
    for (int j = 0; j < nr; ++j) {
      const float base = accumulate ? row[j] : (bias ? bias[j] : 0.f);
      row[j] = base + tile[i][j];
    }
  }
}

// C[0:mc, 0:nc] for one packed A block (mc rows) and one packed B panel (nc columns). A strip
// wider than the register tile is done in column slices, each kept in L1 over all slivers.
template <int MR, int NV, int W>
MTO_INLINE void block_impl(int64_t kc, int64_t mc, int64_t nc, const float* pa, const float* pb,
                           float* c, int64_t ldc, const float* bias, bool accumulate) {
  constexpr int NR = NV * W;
  static_assert(kPanelWidth % NR == 0, "register tile columns must divide the strip");
  for (int64_t j = 0; j < nc; j += NR) {
    const int nr = int(std::min<int64_t>(NR, nc - j));
    const float* slice = pb + j / kPanelWidth * kPanelWidth * kc + j % kPanelWidth;
    for (int64_t i = 0; i < mc; i += MR) {
      const int mr = int(std::min<int64_t>(MR, mc - i));
      micro_tile<MR, NV, W>(kc, pa + i * kc, slice, c + i * ldc + j, ldc, mr, nr,
                            bias ? bias + j : nullptr, accumulate);
    }
  }
}

// ---- packing -----------------------------------------------------------------------------------

// Stand-in for rows past the edge of A or W: packed as zeros, the micro-kernel needs no branches.
const float kZeroRow[kDepthBlock] = {};

// dst[k * P + r] = rows[r][k] for r < P, k < kc: P rows interleaved into the packed [kc][P]
// layout. T8: 8 x 8 transposes (AVX2/AVX-512 builds), else 4 x 4. next (may be null): P rows
// the following call will read, prefetched in step (weights streaming from memory).
template <int P, bool T8>
MTO_INLINE void interleave_rows(const float* const* rows, int64_t kc, float* dst,
                                const float* const* next = nullptr) {
  constexpr int T = T8 ? 8 : 4;
  constexpr int PT = P / T * T;  // rows done by T x T transposes; the rest one by one
  const int64_t kt = kc / T * T;
  for (int r = 0; r < PT; r += T)
    for (int64_t k = 0; k < kt; k += T) {
      if (next && k % 16 == 0)
        for (int i = r; i < r + T; ++i) simd::prefetch(next[i] + k);
      if constexpr (T8)
        simd::transpose8(rows + r, k, dst + k * P + r, P);
      else
        simd::transpose4(rows[r] + k, rows[r + 1] + k, rows[r + 2] + k, rows[r + 3] + k,
                         dst + k * P + r, P);
    }
  for (int r = PT; r < P; ++r)
    for (int64_t k = 0; k < kt; ++k) dst[k * P + r] = rows[r][k];
  for (int64_t k = kt; k < kc; ++k)
    for (int r = 0; r < P; ++r) dst[k * P + r] = rows[r][k];
}

// a[0:mc, 0:kc] (row stride lda) -> slivers of MR rows, each [kc][MR], rows past mc zero.
template <int MR, bool T8>
MTO_INLINE void pack_a_impl(const float* a, int64_t lda, int64_t mc, int64_t kc, float* dst) {
  for (int64_t i = 0; i < mc; i += MR, dst += kc * MR) {
    const float* rows[MR];
    MTO_UNROLL
    for (int r = 0; r < MR; ++r) rows[r] = i + r < mc ? a + (i + r) * lda : kZeroRow;
    interleave_rows<MR, T8>(rows, kc, dst);
  }
}

// ---- per-ISA instantiations --------------------------------------------------------------------

using BlockFn = void (*)(int64_t, int64_t, int64_t, const float*, const float*, float*, int64_t,
                         const float*, bool);
using PackAFn = void (*)(const float*, int64_t, int64_t, int64_t, float*);
using PackStripFn = void (*)(const float* const*, int64_t, float*, const float* const*);

struct Kernels {
  int mr;             // rows of A per micro-kernel call (the packed A sliver height)
  BlockFn block;
  PackAFn pack_a;
  PackStripFn strip;  // kPanelWidth row spans -> one packed B strip (prefetching the next)
};

#if defined(__aarch64__) || defined(_M_ARM64)
constexpr int kBaseMr = 6;  // NEON: 32 registers, 6 x 4 accumulators
#else
constexpr int kBaseMr = 3;  // SSE2: 16 registers, 3 x 4 accumulators
#endif
void block_base(int64_t kc, int64_t mc, int64_t nc, const float* pa, const float* pb, float* c,
                int64_t ldc, const float* bias, bool acc) {
  block_impl<kBaseMr, 4, 4>(kc, mc, nc, pa, pb, c, ldc, bias, acc);
}
void pack_a_base(const float* a, int64_t lda, int64_t mc, int64_t kc, float* dst) {
  pack_a_impl<kBaseMr, false>(a, lda, mc, kc, dst);
}
void strip_base(const float* const* rows, int64_t kc, float* dst, const float* const* next) {
  interleave_rows<kPanelWidth, false>(rows, kc, dst, next);
}
constexpr Kernels kBaseKernels{kBaseMr, block_base, pack_a_base, strip_base};

#if MTO_X86_DISPATCH
MTO_TARGET_AVX2 void block_avx2(int64_t kc, int64_t mc, int64_t nc, const float* pa,
                                const float* pb, float* c, int64_t ldc, const float* bias,
                                bool acc) {
  block_impl<6, 2, 8>(kc, mc, nc, pa, pb, c, ldc, bias, acc);
}
MTO_TARGET_AVX2 void pack_a_avx2(const float* a, int64_t lda, int64_t mc, int64_t kc, float* dst) {
  pack_a_impl<6, false>(a, lda, mc, kc, dst);
}
MTO_TARGET_AVX2 void strip_avx2(const float* const* rows, int64_t kc, float* dst,
                                const float* const* next) {
  interleave_rows<kPanelWidth, true>(rows, kc, dst, next);
}
MTO_TARGET_AVX512 void block_avx512(int64_t kc, int64_t mc, int64_t nc, const float* pa,
                                    const float* pb, float* c, int64_t ldc, const float* bias,
                                    bool acc) {
  block_impl<14, 2, 16>(kc, mc, nc, pa, pb, c, ldc, bias, acc);
}
MTO_TARGET_AVX512 void pack_a_avx512(const float* a, int64_t lda, int64_t mc, int64_t kc,
                                     float* dst) {
  pack_a_impl<14, false>(a, lda, mc, kc, dst);
}
constexpr Kernels kAvx2Kernels{6, block_avx2, pack_a_avx2, strip_avx2};
constexpr Kernels kAvx512Kernels{14, block_avx512, pack_a_avx512, strip_avx2};
#endif

const Kernels& kernels() {
#if MTO_X86_DISPATCH
  switch (gemm_isa()) {
    case GemmIsa::Avx512: return kAvx512Kernels;
    case GemmIsa::Avx2: return kAvx2Kernels;
    default: break;
  }
#endif
  return kBaseKernels;
}

thread_local std::vector<float> tl_panel;  // packed B panel of a gemm task
thread_local std::vector<float> tl_rows;   // decoded W row spans (TransposedPanels)
thread_local std::vector<float> tl_apack;  // packed A of the calling thread's gemm

// How one group of rows (a range of batches, or a range of rows of one batch) is cut into tasks.
struct Split {
  int64_t colparts = 1;  // ranges of strips per batch
  int64_t rowparts = 1;  // ranges of slivers per batch
};

Split split_tasks(int64_t threads, int64_t nb, int64_t rows, int64_t N, int64_t K, int mr) {
  const int64_t strips = ceil_div(N, kPanelWidth);
  const int64_t slivers = ceil_div(rows, mr);
  const int64_t flops = 2 * nb * rows * N * std::max<int64_t>(K, 1);
  const int64_t most = std::max<int64_t>(1, flops / kMinTaskFlops);
  // Panels no wider than kMaxPanelCols; with several threads, a multiple of 4 tasks per thread
  // (parallel_for then deals equal chunks of them: every thread gets the same share).
  int64_t total = nb * ceil_div(N, kMaxPanelCols);
  if (threads > 1) {
    const int64_t unit = 4 * threads;
    total = std::min(ceil_div(std::max(total, unit), unit) * unit, most);
    if (total > threads) total = total / threads * threads;
  }
  Split s;
  s.colparts = std::min(strips, ceil_div(total, nb));
  s.rowparts = std::min(slivers, ceil_div(total, nb * s.colparts));
  return s;
}

}  // namespace

// ---- public entry points -----------------------------------------------------------------------

void TransposedPanels::pack(int64_t, int64_t n0, int64_t nc, int64_t k0, int64_t kc,
                            float* dst) const {
  const Kernels& kern = kernels();
  float* tmp = aligned_scratch(tl_rows, size_t(kPanelWidth * kc));
  // Rows in place (float32 weights) are read straight from memory: the next strip's rows are
  // prefetched while this one is transposed.
  const bool in_place = rows_.in_place(n0, k0) != nullptr;
  for (int64_t s = 0; s < nc; s += kPanelWidth, dst += kPanelWidth * kc) {
    const int nr = int(std::min<int64_t>(kPanelWidth, nc - s));
    const float* rows[kPanelWidth];
    const float* next[kPanelWidth];
    for (int r = 0; r < kPanelWidth; ++r) {
      rows[r] = r < nr ? rows_.span(n0 + s + r, k0, k0 + kc, tmp + r * kc) : kZeroRow;
      const int64_t n = n0 + s + kPanelWidth + r;
      next[r] = in_place && s + kPanelWidth + r < nc ? rows_.in_place(n, k0) : kZeroRow;
    }
    kern.strip(rows, kc, dst, in_place ? next : nullptr);
  }
}

void gemm(ThreadPool& pool, const GemmArgs& g, const PanelSource& src) {
  if (g.batch <= 0 || g.M <= 0 || g.N <= 0) return;
  if (g.K <= 0) {  // empty sum: C = bias (or 0)
    for (int64_t b = 0; b < g.batch; ++b)
      for (int64_t i = 0; i < g.M; ++i) {
        float* row = g.c + b * g.c_batch_stride + i * g.ldc;
        for (int64_t j = 0; j < g.N; ++j) row[j] = g.bias ? g.bias[j] : 0.f;
      }
    return;
  }
  const Kernels& kern = kernels();
  const int64_t mr = kern.mr, K = g.K;
  const int64_t threads = pool.size();
  const int64_t nkb = ceil_div(K, kDepthBlock);
  const int64_t mc_max = std::max<int64_t>(kRowBlock / mr, 1) * mr;

  // Groups of rows whose packed A fits kMaxPackedA: several whole batches, or rows of one batch.
  const int64_t Mp = ceil_div(g.M, mr) * mr;
  const int64_t rows_max = std::max(mr, kMaxPackedA / K / mr * mr);
  const int64_t group_rows = std::min(Mp, rows_max);  // rows per group (per batch)
  const int64_t group_batches = group_rows < Mp ? 1 : std::max<int64_t>(1, rows_max / Mp);
  float* apack = aligned_scratch(
      tl_apack, size_t(std::min(group_batches, g.batch) * group_rows * K));

  for (int64_t b0 = 0; b0 < g.batch; b0 += group_batches) {
    const int64_t nb = std::min(group_batches, g.batch - b0);
    for (int64_t m0 = 0; m0 < g.M; m0 += group_rows) {
      const int64_t rows = std::min(group_rows, g.M - m0);
      const int64_t rows_p = ceil_div(rows, mr) * mr;
      // Packed A of batch b0 + bi: depth block kb at apack + bi * rows_p * K + k0 * rows_p.
      const int64_t pack_grain = std::max<int64_t>(1, (int64_t(1) << 16) / (rows_p * kDepthBlock));
      pool.parallel_for(nb * nkb, pack_grain, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t bi = t / nkb, k0 = t % nkb * kDepthBlock;
          const int64_t kc = std::min(kDepthBlock, K - k0);
          const float* a = g.a + (b0 + bi) * g.a_batch_stride + m0 * g.lda + k0;
          kern.pack_a(a, g.lda, rows, kc, apack + bi * rows_p * K + k0 * rows_p);
        }
      });

      const Split sp = split_tasks(threads, nb, rows, g.N, K, int(mr));
      const int64_t strips = ceil_div(g.N, kPanelWidth);
      const int64_t slivers = rows_p / mr;
      const int64_t widest = ceil_div(strips, sp.colparts) * kPanelWidth;
      pool.parallel_for(nb * sp.colparts * sp.rowparts, 1, [&](int64_t t0, int64_t t1) {
        float* pb = aligned_scratch(tl_panel, size_t(kDepthBlock * widest));
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t bi = t / (sp.colparts * sp.rowparts);
          const int64_t cp = t / sp.rowparts % sp.colparts, rp = t % sp.rowparts;
          const int64_t n0 = cp * strips / sp.colparts * kPanelWidth;
          const int64_t n1 = std::min(g.N, (cp + 1) * strips / sp.colparts * kPanelWidth);
          const int64_t i0 = rp * slivers / sp.rowparts * mr;  // rows of this group
          const int64_t i1 = std::min(rows, (rp + 1) * slivers / sp.rowparts * mr);
          if (n0 >= n1 || i0 >= i1) continue;
          const int64_t b = b0 + bi;
          const float* pa_b = apack + bi * rows_p * K;
          float* c = g.c + b * g.c_batch_stride + (m0 + i0) * g.ldc + n0;
          const float* bias = g.bias ? g.bias + n0 : nullptr;
          for (int64_t k0 = 0; k0 < K; k0 += kDepthBlock) {
            const int64_t kc = std::min(kDepthBlock, K - k0);
            src.pack(b, n0, n1 - n0, k0, kc, pb);
            const float* pa_k = pa_b + k0 * rows_p;
            for (int64_t i = i0; i < i1; i += mc_max) {
              const int64_t mc = std::min(mc_max, i1 - i);
              kern.block(kc, mc, n1 - n0, pa_k + i * kc, pb, c + (i - i0) * g.ldc, g.ldc,
                         k0 == 0 ? bias : nullptr, k0 > 0);
            }
          }
        }
      });
    }
  }
}

}  // namespace mto::cpu
