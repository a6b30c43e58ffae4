// The cpu backend's attention: FlashAttention-2 with online softmax, never a whole [Lq, Lk] matrix.
//
// Work is split into tasks over (batch, kv head, query block[, kv split]). One task handles every
// query head that shares its kv head (GQA group, as MLX's sdpa_vector does), so each K/V tile is
// converted or dequantized to float32 once and reused by all R = G heads x Bq queries of the task
// (the pool hands them out in guided chunks, each head's last query block first: Plan::query_block):
//
//   Q = q rows * scale * log2(e)  [R, D] float32        (scores live in the log2 domain: exp2)
//   for each tile of kTileK keys (tiles past the causal diagonal are skipped):
//     S = Q K_tile^T      R > kDotRows: K tile transposed into scratch, register-blocked gemm
//                         R <= kDotRows (decode): dot products straight from K's rows
//     causal / mask -> -inf or + mask; m' = max(m, rowmax S); P = 2^(S - m')
//     l = l 2^(m - m') + rowsum P;  O = O 2^(m - m') + P V_tile          (gemm; float32 V in place)
//   o = O / l; a row that saw no key (l == 0, m == -inf throughout) gives zeros, never NaN.
//   With sinks, the head's sink logit joins the denominator once, at the end (finish_row).
// NaN/inf follow float arithmetic over the keys a row sees, and a hidden key (score -inf) is never
// read (the rule: native/core/ops.h, check_attention). So a NaN score poisons P, l and O (and m,
// for the merge; softmax_row), and the P V product, where a hidden key's P = 0 still meets its V
// (0 * NaN = NaN), is redone without the hidden keys for a row whose product is not finite.
//
// With few (batch, kv head, query block) tasks and many keys (decode), the keys are also split
// across tasks (flash-decoding): each split keeps its own (m, l, O), and the split that finishes its
// group last merges them (split_done).
// Portable C++17: the register blocks use simd.h's compiler vectors (no intrinsics) and the other
// loops are written to auto-vectorise; on x86-64 Linux the hot loops are also compiled for AVX2+FMA
// and AVX-512 and chosen at run time by the same switch as gemm.cc (gemm_isa()).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "../core/error.h"
#include "attention_tile.h"
#include "gemm.h"  // gemm_isa(): the one ISA choice (and its env override) for all cpu kernels
#include "ops.h"
#include "simd.h"

namespace mto::cpu {
namespace {

using namespace attention_tile;

constexpr int64_t kTileK = 64;      // keys per K/V tile (a multiple of kNR)
constexpr int64_t kTaskRows = 128;  // query rows (heads x queries) per task: reuse of a K/V tile
constexpr float kLog2e = 1.44269504088896340736f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// max(a, b) that returns a NaN b (std::max drops it); a NaN a stays.
MTO_INLINE float max_nan(float a, float b) { return (b > a || b != b) ? b : a; }

// P of a key the row does not see: -0, told apart from an underflowed weight (+0) by pv_tile.
MTO_INLINE bool hidden_p(float p) { return p == 0.f && std::signbit(p); }

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Rows of a [rows, D] operand (dense of any dtype, or quantized along D) as float32.
struct RowSource {
  const void* dense = nullptr;
  DType dtype = DType::Float32;
  bool quantized = false;
  QuantView view{};
  int64_t D = 0;

  int64_t code_row_bytes = 0, scale_row_bytes = 0;  // quantized: per row

  explicit RowSource(const Operand& op, int64_t d) : D(d) {
    if (op.dense) {
      dense = op.dense->buffer->data();
      dtype = op.dense->dtype;
    } else {
      quantized = true;
      view = op.quant->view();
      code_row_bytes = int64_t(row_code_bytes(view.format, view.cols));
      scale_row_bytes = int64_t(row_scale_bytes(view.format, view.cols, view.block));
    }
  }
  bool is_f32() const { return !quantized && dtype == DType::Float32; }
  // Codes and scales of quantized rows [row0, row0 + n) (clipped to the operand) toward the cache.
  void prefetch_rows(int64_t row0, int64_t n) const {
    n = std::min(n, view.rows - row0);
    if (n <= 0) return;
    prefetch_span(view.codes + row0 * code_row_bytes, n * code_row_bytes);
    prefetch_span(static_cast<const char*>(view.scales) + row0 * scale_row_bytes,
                  n * scale_row_bytes);
    if (view.biases) {
      prefetch_span(reinterpret_cast<const char*>(view.biases) + row0 * scale_row_bytes,
                    n * scale_row_bytes);
    }
  }
  static void prefetch_span(const void* p, int64_t bytes) {
    const char* c = static_cast<const char*>(p);
    for (int64_t i = 0; i < bytes; i += 64) simd::prefetch(c + i);
  }
  const float* f32_row(int64_t row) const { return static_cast<const float*>(dense) + row * D; }
  // Rows [row0, row0 + n) into dst, packed with row stride ld (>= D). core's converters and
  // dequantize_span pick their own vector kernels (kernels/decode.h). Quantized rows go a chunk at
  // a time, each beside a prefetch of its counterpart in the next n rows (the next tile): those
  // arrive while this tile computes (a quantized tile is small enough that its misses, left to the
  // conversion itself, would stall it).
  void load(int64_t row0, int64_t n, float* dst, int64_t ld) const {
    if (quantized) {
      constexpr int64_t kChunk = 8;
      for (int64_t r = 0; r < n; r += kChunk) {
        const int64_t c = std::min(kChunk, n - r);
        prefetch_rows(row0 + n + r, c);
        if (ld == D) {
          dequantize_rows(view, row0 + r, c, dst + r * ld);
        } else {
          for (int64_t i = r; i < r + c; ++i) dequantize_span(view, row0 + i, 0, D, dst + i * ld);
        }
      }
      return;
    }
    const size_t es = dtype_size(dtype);
    const char* src = static_cast<const char*>(dense) + size_t(row0 * D) * es;
    if (ld == D) {
      to_float32(dtype, src, dst, size_t(n * D));
    } else {
      for (int64_t r = 0; r < n; ++r)
        to_float32(dtype, src + size_t(r * D) * es, dst + r * ld, size_t(D));
    }
  }
};

// Everything a task needs, fixed for one attention call.
struct Plan {
  const AttentionParams* p = nullptr;
  const RowSource* q = nullptr;
  const RowSource* k = nullptr;
  const RowSource* v = nullptr;
  const void* mask = nullptr;
  DType mask_dtype = DType::Bool;
  const float* sinks = nullptr;  // [Hq] float32 logits, or null
  int64_t G = 1;        // query heads per kv head
  int64_t Bq = 1;       // queries per block
  int64_t nqb = 1;      // query blocks
  int64_t nsplit = 1;   // kv splits
  int64_t split_len = 0;  // keys per split (a multiple of kTileK)
  int64_t Dp = 0;       // D rounded up to kNR
  int64_t Rmax = 0;     // G * Bq
  float qscale = 0.f;   // scale * log2(e): scores are kept in the log2 domain
  float* o = nullptr;
  float* partial = nullptr;  // nsplit > 1: per (task, split): m[Rmax], l[Rmax], O[Rmax * Dp]
  std::atomic<int64_t>* splits_done = nullptr;  // nsplit > 1: per task0, splits written so far
  int64_t partial_stride() const { return Rmax * (Dp + 2); }
  // The query block of (batch, kv head, block) task task0: the last first. Causal blocks see
  // more keys the later they come, so the pool's guided chunks hand out the dearest tasks of each
  // head first and end on cheap ones (in block order, one of 16 threads took the late half of a
  // head, ~3x the work of the early half).
  int64_t query_block(int64_t task0) const { return nqb - 1 - task0 % nqb; }
};

// Per-thread scratch, allocated once per parallel_for chunk; buffers a call does not need stay
// empty (float32 K/V are read in place).
struct Scratch {
  std::vector<float> q, kt, ktmp, vt, s, o, pv, m, l, masktmp;
  explicit Scratch(const Plan& pl);
};

// Scores of one row of a tile get -inf where the bool mask is false, or the additive mask (times
// log2(e): scores are in the log2 domain); an additive -inf hides the key like a false bool, even
// from a NaN score. tmp: room for n floats.
MTO_INLINE void apply_mask_row(const Plan& pl, int64_t base, int64_t j0, int64_t n,
                               float* __restrict s, float* __restrict tmp) {
  const int64_t sj = pl.p->mask_stride[3];
  if (pl.mask_dtype == DType::Bool) {
    const uint8_t* mk = static_cast<const uint8_t*>(pl.mask) + base + j0 * sj;
    for (int64_t j = 0; j < n; ++j) s[j] = mk[j * sj] ? s[j] : kNegInf;
    return;
  }
  const size_t es = dtype_size(pl.mask_dtype);
  const char* mk = static_cast<const char*>(pl.mask) + size_t(base + j0 * sj) * es;
  if (sj == 1) {  // a contiguous span: one bulk conversion
    to_float32(pl.mask_dtype, mk, tmp, size_t(n));
    for (int64_t j = 0; j < n; ++j) s[j] = tmp[j] == kNegInf ? kNegInf : s[j] + tmp[j] * kLog2e;
  } else {        // broadcast along keys (sj == 0) or strided
    for (int64_t j = 0; j < n; ++j) to_float32(pl.mask_dtype, mk + size_t(j * sj) * es, tmp + j, 1);
    for (int64_t j = 0; j < n; ++j) s[j] = tmp[j] == kNegInf ? kNegInf : s[j] + tmp[j] * kLog2e;
  }
}

// Online-softmax update of one row for one tile of nc scores (keys past the tile are -inf already).
// Returns false when the row has still seen no key (its P row is left all hidden). A NaN score
// gives NaN P, l and O (exp2(NaN - m)); the tile's max skips it (std::max: vectorises), so a tile
// of only NaN and hidden scores is caught below, and m is made NaN too: a poisoned split must
// poison the merge.
template <int W>
MTO_INLINE bool softmax_row(float* __restrict s, int64_t nc, float* m, float* l,
                            float* __restrict orow, int64_t Dp) {
  float mx[kNR];
#if MTO_GNU_EXTENSIONS
  // In vectors (GCC did not vectorise the form below): lane c of vector k is column k * W + c.
  {
    using V = simd::Vec<W>;
    constexpr int kV = kNR / W;
    V vmx[kV];
    MTO_UNROLL
    for (int k = 0; k < kV; ++k) simd::splat<W>(vmx[k], kNegInf);
    for (int64_t j = 0; j < nc; j += kNR)
      MTO_UNROLL
      for (int k = 0; k < kV; ++k) {
        V x;
        simd::load<W>(x, s + j + k * W);
        vmx[k] = vmx[k] < x ? x : vmx[k];  // std::max lane by lane: a NaN x is skipped
      }
    MTO_UNROLL
    for (int k = 0; k < kV; ++k) simd::store<W>(mx + k * W, vmx[k]);
  }
#else
  for (int c = 0; c < kNR; ++c) mx[c] = kNegInf;
  for (int64_t j = 0; j < nc; j += kNR)
    for (int c = 0; c < kNR; ++c) mx[c] = std::max(mx[c], s[j + c]);
#endif
  float tmax = kNegInf;
  for (int c = 0; c < kNR; ++c) tmax = std::max(tmax, mx[c]);
  const float m_new = max_nan(*m, tmax);  // a NaN m stays
  if (m_new == kNegInf) {  // nothing visible yet: exp2(-inf - -inf) would be NaN
    for (int64_t j = 0; j < nc; ++j) {
      if (s[j] != s[j]) *m = *l = std::numeric_limits<float>::quiet_NaN();
      s[j] = -0.f;
    }
    return false;
  }
  float sum[kNR];
#if MTO_GNU_EXTENSIONS
  // In vectors of the instruction set's width (explicit: GCC vectorised the scalar loop below for
  // AVX-512 only), with the same bits as that loop: lane c of vector k sums column k * W + c.
  using V = simd::Vec<W>;
  constexpr int kV = kNR / W;
  V vsum[kV];
  MTO_UNROLL
  for (int k = 0; k < kV; ++k) simd::splat<W>(vsum[k], 0.f);
  const V hidden = -V{};  // -0 in every lane (splat's 0 + -0 would be +0)
  for (int64_t j = 0; j < nc; j += kNR) {
    MTO_UNROLL
    for (int k = 0; k < kV; ++k) {
      V x, e;
      simd::load<W>(x, s + j + k * W);
      exp2_nonpos<W>(x - m_new, e);  // 0 for a hidden key (NaN once m is NaN)
      simd::store<W>(s + j + k * W, x == kNegInf ? hidden : e);
      vsum[k] += e;
    }
  }
  MTO_UNROLL
  for (int k = 0; k < kV; ++k) simd::store<W>(sum + k * W, vsum[k]);
#else
  for (int c = 0; c < kNR; ++c) sum[c] = 0.f;
  for (int64_t j = 0; j < nc; j += kNR)
    for (int c = 0; c < kNR; ++c) {
      const float x = s[j + c];
      const float e = exp2_nonpos(x - m_new);  // 0 for a hidden key (NaN once m is NaN)
      s[j + c] = x == kNegInf ? -0.f : e;
      sum[c] += e;
    }
#endif
  float tsum = 0.f;
  for (int c = 0; c < kNR; ++c) tsum += sum[c];
  if (m_new != *m) {
    const float alpha = exp2_nonpos(*m - m_new);  // 0 when m was -inf
    *l *= alpha;
    for (int64_t d = 0; d < Dp; ++d) orow[d] *= alpha;
    *m = m_new;
  }
  *l += tsum;
  return true;
}

// O += P V for one tile: the gemm into T, then a row whose product is not finite (a NaN or inf in
// V or P) is recomputed from the keys it sees, since a hidden key's P = -0 times a NaN V is NaN.
template <int MR, int W>
MTO_INLINE void pv_tile(int64_t R, int64_t n, int64_t Dp, const float* __restrict P, int64_t ldp,
                        const float* __restrict V, int64_t ldv, float* __restrict T,
                        float* __restrict O) {
  if (R <= kDotRows) {  // decode: pv's independent accumulator chains (attention_tile.h)
    std::fill(T, T + R * Dp, 0.f);
    pv<W>(R, n, Dp, P, ldp, V, ldv, T, Dp);
  } else {
    gemm<MR, W>(R, Dp, n, P, ldp, V, ldv, T, Dp, false);
  }
  for (int64_t r = 0; r < R; ++r) {
    float* t = T + r * Dp;
    float* orow = O + r * Dp;
    float probe[kNR] = {};  // NaN iff some t[d] is NaN or inf (kNR chains: vectorises)
    for (int64_t d = 0; d < Dp; d += kNR)
      for (int c = 0; c < kNR; ++c) probe[c] += t[d + c] * 0.f;
    float bad = 0.f;
    for (int c = 0; c < kNR; ++c) bad += probe[c];
    if (bad != bad) {
      const float* prow = P + r * ldp;
      std::fill(t, t + Dp, 0.f);
      for (int64_t j = 0; j < n; ++j) {
        if (hidden_p(prow[j])) continue;
        for (int64_t d = 0; d < Dp; ++d) t[d] += prow[j] * V[j * ldv + d];
      }
    }
    for (int64_t d = 0; d < Dp; ++d) orow[d] += t[d];
  }
}

// The attention sink of head h (a learned logit in the denominator, no value), applied once to a
// row's final (m, l, O) that saw a key: M' = max(m, s), o = O 2^(m - M') / (l 2^(m - M') + 2^(s - M')),
// s in the log2 domain like m. A NaN sink makes the row NaN, +inf too (2^(inf - inf)), -inf is no
// sink. Writes o into dst[0, D) from src (may alias).
MTO_INLINE void finish_row(const Plan& pl, int64_t h, float m, float l, const float* src, float* dst,
                           int64_t D) {
  float c = 1.f, denom = l;
  if (pl.sinks) {
    const float s = pl.sinks[h] * kLog2e;
    const float M = max_nan(m, s);
    c = std::exp2(m - M);
    denom = l * c + std::exp2(s - M);
  }
  const float inv = c / denom;
  for (int64_t d = 0; d < D; ++d) dst[d] = src[d] * inv;
}

// Flash-decoding merge: o = sum_s 2^(m_s - M) O_s / sum_s 2^(m_s - M) l_s, M = max_s m_s.
void merge_splits(const Plan& pl, int64_t task0) {
  const AttentionParams& p = *pl.p;
  const int64_t D = p.D, Dp = pl.Dp;
  const int64_t qb = pl.query_block(task0);
  const int64_t kvh = (task0 / pl.nqb) % p.Hkv;
  const int64_t b = task0 / (pl.nqb * p.Hkv);
  const int64_t i0 = qb * pl.Bq, nq = std::min(p.Lq, i0 + pl.Bq) - i0;
  const float* base = pl.partial + task0 * pl.nsplit * pl.partial_stride();
  for (int64_t r = 0; r < pl.G * nq; ++r) {
    const int64_t g = r / nq, i = i0 + r % nq, h = kvh * pl.G + g;
    float* dst = pl.o + ((b * p.Hq + h) * p.Lq + i) * D;
    float M = kNegInf, L = 0.f;
    for (int64_t s = 0; s < pl.nsplit; ++s) M = max_nan(M, base[s * pl.partial_stride() + r]);
    for (int64_t d = 0; d < D; ++d) dst[d] = 0.f;
    if (M == kNegInf) continue;  // no key seen: zeros
    for (int64_t s = 0; s < pl.nsplit; ++s) {
      const float* part = base + s * pl.partial_stride();
      if (part[r] == kNegInf) continue;  // this split saw no key: l = 0, O = 0
      const float w = exp2_nonpos(part[r] - M);  // NaN when M is (a NaN split poisons the row)
      L += w * part[pl.Rmax + r];
      const float* os = part + 2 * pl.Rmax + r * Dp;
      for (int64_t d = 0; d < D; ++d) dst[d] += w * os[d];
    }
    finish_row(pl, h, M, L, dst, dst, D);
  }
}

// Called once each split of group task0 has written its partial result: the last one merges the
// group within the same parallel_for (a second round would wake every thread again, which with
// 8-16 threads took longer than the merges). acq_rel: the other splits' results are visible to the
// merging thread. Out of line, so that the hot loops of run_tasks_* are compiled as before.
MTO_NOINLINE void split_done(const Plan& pl, int64_t task0) {
  if (pl.splits_done[task0].fetch_add(1, std::memory_order_acq_rel) == pl.nsplit - 1)
    merge_splits(pl, task0);
}

// One task: query block qb of kv head kvh in batch b, keys of split `split`.
// MR: gemm row block, chosen per instruction set (enough accumulators, no spills).
template <int MR, int W>
MTO_INLINE void run_task(const Plan& pl, Scratch& sc, int64_t task) {
  const AttentionParams& p = *pl.p;
  const int64_t D = p.D, Dp = pl.Dp, G = pl.G;
  const int64_t split = task % pl.nsplit;
  const int64_t task0 = task / pl.nsplit;
  const int64_t qb = pl.query_block(task0);
  const int64_t kvh = (task0 / pl.nqb) % p.Hkv;
  const int64_t b = task0 / (pl.nqb * p.Hkv);
  const int64_t i0 = qb * pl.Bq, i1 = std::min(p.Lq, i0 + pl.Bq), nq = i1 - i0;
  const int64_t R = G * nq;
  const int64_t off = p.Lk - p.Lq;  // causal: query i sees keys j <= i + off

  int64_t j_begin = split * pl.split_len;
  int64_t j_end = std::min(p.Lk, j_begin + pl.split_len);
  if (p.causal) j_end = std::min(j_end, i1 + off);  // the last query of the block sees j < i1 + off

  float* Q = sc.q.data();
  float* S = sc.s.data();
  float* O = sc.o.data();
  float* m = sc.m.data();
  float* l = sc.l.data();
  for (int64_t r = 0; r < R; ++r) {
    m[r] = kNegInf;
    l[r] = 0.f;
  }
  std::fill(O, O + R * Dp, 0.f);

  if (j_end > j_begin) {
    // Q rows r = g * nq + (i - i0), pre-scaled so that scores come out in the log2 domain.
    for (int64_t g = 0; g < G; ++g) {
      const int64_t h = kvh * G + g;
      pl.q->load((b * p.Hq + h) * p.Lq + i0, nq, Q + g * nq * D, D);
    }
    for (int64_t x = 0; x < R * D; ++x) Q[x] *= pl.qscale;
  }

  const int64_t kv_row0 = (b * p.Hkv + kvh) * p.Lk;
  float* Kt = sc.kt.data();
  for (int64_t j0 = j_begin; j0 < j_end; j0 += kTileK) {
    const int64_t n = std::min(kTileK, j_end - j0);
    const int64_t nc = round_up(n, kNR);

    const float* ksrc;  // K[j0 : j0 + n] as float32 rows
    if (pl.k->is_f32()) {
      ksrc = pl.k->f32_row(kv_row0 + j0);
    } else {
      pl.k->load(kv_row0 + j0, n, sc.ktmp.data(), D);
      ksrc = sc.ktmp.data();
    }
    if (R <= kDotRows) {
      // float32 K/V in place: fetch the next K tile and this V tile while the dots run.
      const bool in_place = pl.k->is_f32() && pl.v->is_f32();
      const int64_t row = kv_row0 + j0;
      dots<W>(R, n, D, Q, ksrc, D, S, kTileK,
              in_place && j0 + kTileK < j_end ? pl.k->f32_row(row + kTileK) : nullptr,
              in_place ? pl.v->f32_row(row) : nullptr);
    } else {
      // Kt[d, j] = K[j0 + j, d]; columns [n, nc) zero. 8 x 8 blocks by shuffles (simd.h), the
      // edges element by element: scalar moves took ~8% of a prefill.
      const int64_t n8 = n / 8 * 8, D8 = D / 8 * 8;
      for (int64_t j = 0; j < n8; j += 8) {
        const float* rows[8];
        for (int i = 0; i < 8; ++i) rows[i] = ksrc + (j + i) * D;
        for (int64_t d = 0; d < D8; d += 8) simd::transpose8(rows, d, Kt + d * kTileK + j, kTileK);
        for (int64_t d = D8; d < D; ++d)
          for (int i = 0; i < 8; ++i) Kt[d * kTileK + j + i] = rows[i][d];
      }
      for (int64_t j = n8; j < n; ++j)
        for (int64_t d = 0; d < D; ++d) Kt[d * kTileK + j] = ksrc[j * D + d];
      if (nc > n)
        for (int64_t d = 0; d < D; ++d)
          for (int64_t j = n; j < nc; ++j) Kt[d * kTileK + j] = 0.f;
      gemm<MR, W>(R, nc, D, Q, D, Kt, kTileK, S, kTileK, false);
    }

    bool any_live = false;
    for (int64_t r = 0; r < R; ++r) {
      const int64_t g = r / nq, i = i0 + r % nq, h = kvh * G + g;
      float* srow = S + r * kTileK;
      int64_t visible = n;  // keys [0, visible) of the tile pass the causal rule
      if (p.causal) visible = std::max<int64_t>(0, std::min(n, i + off + 1 - j0));
      for (int64_t j = visible; j < nc; ++j) srow[j] = kNegInf;
      if (pl.mask && visible > 0) {
        const int64_t base = b * p.mask_stride[0] + h * p.mask_stride[1] + i * p.mask_stride[2];
        apply_mask_row(pl, base, j0, visible, srow, sc.masktmp.data());
      }
      any_live |= softmax_row<W>(srow, nc, m + r, l + r, O + r * Dp, Dp);
    }
    if (!any_live) continue;

    // O += P V_tile
    const float* V;
    int64_t ldv;
    if (pl.v->is_f32() && Dp == D) {
      V = pl.v->f32_row(kv_row0 + j0);
      ldv = D;
    } else {
      pl.v->load(kv_row0 + j0, n, sc.vt.data(), Dp);
      V = sc.vt.data();
      ldv = Dp;
    }
    pv_tile<MR, W>(R, n, Dp, S, kTileK, V, ldv, sc.pv.data(), O);
  }

  if (pl.nsplit == 1) {
    for (int64_t r = 0; r < R; ++r) {
      const int64_t g = r / nq, i = i0 + r % nq, h = kvh * G + g;
      float* dst = pl.o + ((b * p.Hq + h) * p.Lq + i) * D;
      const float* src = O + r * Dp;
      if (l[r] == 0.f) {  // saw no key
        for (int64_t d = 0; d < D; ++d) dst[d] = 0.f;
      } else {
        finish_row(pl, h, m[r], l[r], src, dst, D);
      }
    }
  } else {
    float* part = pl.partial + task * pl.partial_stride();
    std::copy(m, m + R, part);
    std::copy(l, l + R, part + pl.Rmax);
    std::copy(O, O + R * Dp, part + 2 * pl.Rmax);
  }
}

Scratch::Scratch(const Plan& pl) {
  const int64_t D = pl.p->D;
  try {
    q.resize(size_t(pl.Rmax * D));
    if (pl.Rmax > kDotRows) kt.resize(size_t(D * kTileK));
    if (!pl.k->is_f32()) ktmp.resize(size_t(kTileK * D));
    if (!(pl.v->is_f32() && pl.Dp == D)) vt.assign(size_t(kTileK * pl.Dp), 0.f);  // [D, Dp) stays 0
    s.resize(size_t(pl.Rmax * kTileK));
    o.resize(size_t(pl.Rmax * pl.Dp));
    pv.resize(size_t(pl.Rmax * pl.Dp));
    m.resize(size_t(pl.Rmax));
    l.resize(size_t(pl.Rmax));
    if (pl.mask) masktmp.resize(size_t(kTileK));
  } catch (const std::bad_alloc&) {
    throw Error(code::OOM, "attention: could not allocate its per-thread scratch");
  }
}

// The hot loops: everything run_task calls is inlined into these, so each instantiation is
// compiled for the instruction set of its caller.
template <int MR, int W>
MTO_INLINE void run_tasks_impl(const Plan& pl, int64_t t0, int64_t t1) {
  Scratch sc(pl);
  for (int64_t t = t0; t < t1; ++t) {
    run_task<MR, W>(pl, sc, t);
    if (pl.nsplit > 1) split_done(pl, t / pl.nsplit);
  }
}

// One instantiation per instruction set; gemm_isa() (gemm.h) picks, as for linear and matmul.
// Baseline, 4-float vectors: 2 rows x 4 vectors of accumulators fit SSE2's 16 registers; NEON
// has 32, so 4 rows.
#if defined(__aarch64__) || defined(_M_ARM64)
constexpr int kBaseMR = 4;
#else
constexpr int kBaseMR = 2;
#endif
void run_tasks_base(const Plan& pl, int64_t t0, int64_t t1) {
  run_tasks_impl<kBaseMR, 4>(pl, t0, t1);
}
#if MTO_X86_DISPATCH
// AVX2: 4 rows x 2 ymm = 8 accumulators of 16 registers.
MTO_TARGET_AVX2 void run_tasks_avx2(const Plan& pl, int64_t t0, int64_t t1) {
  run_tasks_impl<4, 8>(pl, t0, t1);
}
// AVX-512: 8 rows x 1 zmm of 32 registers.
MTO_TARGET_AVX512 void run_tasks_avx512(const Plan& pl, int64_t t0, int64_t t1) {
  run_tasks_impl<8, 16>(pl, t0, t1);
}
#endif

void run_tasks(GemmIsa isa, const Plan& pl, int64_t t0, int64_t t1) {
#if MTO_X86_DISPATCH
  if (isa == GemmIsa::Avx512) return run_tasks_avx512(pl, t0, t1);
  if (isa == GemmIsa::Avx2) return run_tasks_avx2(pl, t0, t1);
#endif
  (void)isa;
  run_tasks_base(pl, t0, t1);
}

}  // namespace

void attention(ThreadPool& pool, const Operand& q, const Operand& k, const Operand& v,
               const AttentionParams& p, float* o) {
  const int64_t total = p.B * p.Hq * p.Lq * p.D;
  if (total == 0) return;
  if (p.Lk == 0) {  // no keys at all: every row sees nothing
    std::fill(o, o + total, 0.f);
    return;
  }
  const RowSource qs(q, p.D), ks(k, p.D), vs(v, p.D);
  Plan pl;
  pl.p = &p;
  pl.q = &qs;
  pl.k = &ks;
  pl.v = &vs;
  if (p.mask) {
    pl.mask = p.mask->buffer->data();
    pl.mask_dtype = p.mask->dtype;
  }
  if (p.sinks) pl.sinks = static_cast<const float*>(p.sinks->buffer->data());
  pl.G = p.Hq / p.Hkv;
  pl.Dp = round_up(p.D, kNR);
  pl.qscale = p.scale * kLog2e;

  // Query blocks: about 128 rows per task so a converted K/V tile is reused widely, but small
  // enough to give every thread several tasks.
  const int64_t threads = pool.size();
  pl.Bq = std::min(p.Lq, std::max<int64_t>(1, kTaskRows / pl.G));
  auto count_tasks = [&](int64_t bq) { return p.B * p.Hkv * ((p.Lq + bq - 1) / bq); };
  while (pl.Bq > 8 && count_tasks(pl.Bq) < 4 * threads) pl.Bq = (pl.Bq + 1) / 2;
  pl.nqb = (p.Lq + pl.Bq - 1) / pl.Bq;
  pl.Rmax = pl.G * pl.Bq;
  const int64_t tasks0 = p.B * p.Hkv * pl.nqb;

  // Flash-decoding: split the keys when there are too few tasks to keep the threads busy.
  constexpr int64_t kMinSplitKeys = 4 * kTileK;
  pl.split_len = round_up(p.Lk, kTileK);
  if (threads > 1 && tasks0 < 2 * threads && p.Lk >= 2 * kMinSplitKeys) {
    const int64_t want = (4 * threads + tasks0 - 1) / tasks0;
    const int64_t most = p.Lk / kMinSplitKeys;
    const int64_t ns = std::min(want, most);
    pl.split_len = round_up((p.Lk + ns - 1) / ns, kTileK);
  }
  pl.nsplit = (p.Lk + pl.split_len - 1) / pl.split_len;

  std::vector<float> partial;
  std::unique_ptr<std::atomic<int64_t>[]> splits_done;
  if (pl.nsplit > 1) {
    try {
      partial.resize(size_t(tasks0 * pl.nsplit * pl.partial_stride()));
      splits_done.reset(new std::atomic<int64_t>[size_t(tasks0)]);
    } catch (const std::bad_alloc&) {
      throw Error(code::OOM, "attention: could not allocate the flash-decoding partial results");
    }
    for (int64_t t = 0; t < tasks0; ++t) splits_done[t].store(0, std::memory_order_relaxed);
    pl.partial = partial.data();
    pl.splits_done = splits_done.get();
  }
  pl.o = o;
  const GemmIsa isa = gemm_isa();
  pool.parallel_for(tasks0 * pl.nsplit, 1,
                    [&](int64_t t0, int64_t t1) { run_tasks(isa, pl, t0, t1); },
                    ThreadPool::Schedule::Guided);
}

}  // namespace mto::cpu
