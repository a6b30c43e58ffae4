// Rotary position embedding (core/ops.h RopeParams). The angle of each (position, pair) is worked
// out in fixed-point turns (core/rope_turns.h), exact at every int32 position (pos * inv_freq in
// float32 is off by ~pos * 2^-24 radians: 0.006 at position 100,000; in double by |pos * f| *
// 2^-53, 2e-5 at position 2^31 for an explicit frequency of 93); the cosine and sine table is kept for the next
// op with the same positions and frequencies (a model's q and k, and every layer, share it: made
// afresh it cost 1 to 5 ms for 2048 positions, as much as rotating the 64 MiB of a layer's q).
// Float32 rows are rotated straight from x into the output (other dtypes through a float32 row);
// the row loop is compiled for AVX2 and AVX-512 too and chosen at run time (gemm_isa()), as
// softmax.cc's.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "../core/rope_turns.h"
#include "gemm.h"
#include "simd.h"
#include "ops.h"
#include "rows.h"

namespace mto::cpu {
namespace {

// The table of one op: for each position l, `width` cosines and as many sines. neox: one entry
// per pair (width = half). Interleaved: one per feature (width = 2 * half), each pair's cosine
// twice and its sine as (-s, +s), so that out = x * c + swap_pairs(x) * s for whole vectors.
struct Table {
  int64_t L = 0, half = 0;
  bool neox = true;
  int64_t offset = 0;
  std::vector<int32_t> positions;  // empty: positions offset, offset + 1, ...
  std::vector<double> inv;         // the inverse frequencies
  std::vector<float> c, s;
  int64_t width() const { return neox ? half : 2 * half; }
};

// The last table made (shared: each op holds its own reference while it runs). Tables over 64 MiB
// (a million positions of 128 features) are not kept.
std::mutex g_table_mutex;
std::shared_ptr<const Table> g_table;
constexpr size_t kKeepBytes = size_t(64) << 20;

std::shared_ptr<const Table> table_for(ThreadPool& pool, const Tensor* positions, const RopeParams& p,
                                       std::vector<double> inv) {
  const int64_t half = p.dims / 2;
  std::vector<int32_t> pos;
  if (positions) pos.assign(positions->data<int32_t>(), positions->data<int32_t>() + p.L);
  {
    std::lock_guard<std::mutex> lock(g_table_mutex);
    const Table* t = g_table.get();
    if (t && t->L == p.L && t->half == half && t->neox == p.neox && t->inv == inv &&
        t->positions == pos && (positions || t->offset == p.offset))
      return g_table;
  }
  auto t = std::make_shared<Table>();
  t->L = p.L;
  t->half = half;
  t->neox = p.neox;
  t->offset = positions ? 0 : p.offset;
  t->positions = std::move(pos);
  t->inv = std::move(inv);
  const int64_t w = t->width();
  t->c.resize(size_t(p.L * w));
  t->s.resize(size_t(p.L * w));
  Table& tt = *t;
  // Each frequency in fixed-point turns (core/rope_turns.h: exact angles at every int32 position).
  std::vector<uint64_t> turns(size_t(std::max<int64_t>(half, 0)));
  for (int64_t i = 0; i < half; ++i) turns[size_t(i)] = rope_turns(tt.inv[size_t(i)]);
  // L * half double sines and cosines (~5 ms for 2048 x 64 on one core): on every pool thread.
  pool.parallel_for(p.L, std::max<int64_t>(1, 256 / std::max<int64_t>(half, 1)), [&](int64_t l0, int64_t l1) {
    for (int64_t l = l0; l < l1; ++l) {
      const int64_t ps = tt.positions.empty() ? tt.offset + l : int64_t(tt.positions[size_t(l)]);
      float* c = &tt.c[size_t(l * w)];
      float* s = &tt.s[size_t(l * w)];
      for (int64_t i = 0; i < half; ++i) {
        const double a = rope_angle(ps, turns[size_t(i)]);
        const float ca = float(std::cos(a)), sa = float(std::sin(a));
        if (tt.neox) {
          c[i] = ca;
          s[i] = sa;
        } else {
          c[2 * i] = c[2 * i + 1] = ca;
          s[2 * i] = -sa;
          s[2 * i + 1] = sa;
        }
      }
    }
  });
  std::shared_ptr<const Table> done = std::move(t);
  if (done->c.size() * 2 * sizeof(float) <= kKeepBytes) {
    std::lock_guard<std::mutex> lock(g_table_mutex);
    g_table = done;
  }
  return done;
}

#if defined(MTO_HAS_SHUFFLE)
// v with the lanes of each pair exchanged: (v1, v0, v3, v2, ...).
template <int W>
MTO_INLINE void swap_pairs(const simd::Vec<W>& v, simd::Vec<W>& out) {
  if constexpr (W == 4) {
    out = __builtin_shufflevector(v, v, 1, 0, 3, 2);
  } else if constexpr (W == 8) {
    out = __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6);
  } else {
    out = __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
  }
}
#endif

// One row of D features from x into out (the same row allowed: every element is read before its
// position is written): the first 2 * half rotated by the position's table row (c, s), the rest
// copied.
template <int W>
MTO_INLINE void rope_row(const float* x, float* out, const float* c, const float* s, int64_t half,
                         int64_t D, bool neox) {
  int64_t i = 0;
  if (neox) {
    const float* xa = x;
    const float* xb = x + half;
    float* oa = out;
    float* ob = out + half;
#if MTO_GNU_EXTENSIONS
    using V = simd::Vec<W>;
    for (; i + W <= half; i += W) {
      V a, b, cv, sv;
      simd::load<W>(a, xa + i);
      simd::load<W>(b, xb + i);
      simd::load<W>(cv, c + i);
      simd::load<W>(sv, s + i);
      const V ra = a * cv - b * sv;
      const V rb = b * cv + a * sv;
      simd::store<W>(oa + i, ra);
      simd::store<W>(ob + i, rb);
    }
#endif
    for (; i < half; ++i) {
      const float a = xa[i], b = xb[i];
      oa[i] = a * c[i] - b * s[i];
      ob[i] = b * c[i] + a * s[i];
    }
  } else {
    // out[2i] = x[2i] c - x[2i+1] s, out[2i+1] = x[2i+1] c + x[2i] s, with s stored as (-s, s).
    const int64_t n = 2 * half;
#if defined(MTO_HAS_SHUFFLE)
    using V = simd::Vec<W>;
    for (; i + W <= n; i += W) {
      V a, sw, cv, sv;
      simd::load<W>(a, x + i);
      simd::load<W>(cv, c + i);
      simd::load<W>(sv, s + i);
      swap_pairs<W>(a, sw);
      const V r = a * cv + sw * sv;
      simd::store<W>(out + i, r);
    }
#endif
    for (; i < n; i += 2) {
      const float a = x[i], b = x[i + 1];
      out[i] = a * c[i] + b * s[i];
      out[i + 1] = b * c[i + 1] + a * s[i + 1];
    }
  }
  if (out != x && D > 2 * half) std::memcpy(out + 2 * half, x + 2 * half, size_t(D - 2 * half) * sizeof(float));
}

using RowFn = void (*)(const float*, float*, const float*, const float*, int64_t, int64_t, bool);
void row_base(const float* x, float* o, const float* c, const float* s, int64_t half, int64_t D, bool neox) {
  rope_row<4>(x, o, c, s, half, D, neox);
}
#if MTO_X86_DISPATCH
MTO_TARGET_AVX2 void row_avx2(const float* x, float* o, const float* c, const float* s, int64_t half, int64_t D,
                              bool neox) {
  rope_row<8>(x, o, c, s, half, D, neox);
}
MTO_TARGET_AVX512 void row_avx512(const float* x, float* o, const float* c, const float* s, int64_t half,
                                  int64_t D, bool neox) {
  rope_row<16>(x, o, c, s, half, D, neox);
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
  const std::shared_ptr<const Table> table = table_for(pool, positions, p, std::move(inv));
  const float* cs = table->c.data();
  const float* sn = table->s.data();
  const int64_t w = table->width();
  const int64_t rows = p.B * p.H * p.L, D = p.D;
  RowFn row_fn = row_base;
#if MTO_X86_DISPATCH
  const GemmIsa isa = gemm_isa();
  if (isa == GemmIsa::Avx512) row_fn = row_avx512;
  if (isa == GemmIsa::Avx2) row_fn = row_avx2;
#endif
  const bool in_f32 = x.dtype == DType::Float32, out_f32 = out.dtype == DType::Float32;
  pool.parallel_for(rows, std::max<int64_t>(1, kParallelGrain / D), [&](int64_t r0, int64_t r1) {
    float* scratch = in_f32 && out_f32 ? nullptr : row_scratch(D);
    for (int64_t r = r0; r < r1; ++r) {
      // Rows are in memory order: (b, h, l) for bhld, (b, l, h) for blhd.
      const int64_t l = p.blhd ? (r / p.H) % p.L : r % p.L;
      const float* src = in_f32 ? x.data<float>() + r * D : scratch;
      float* dst = out_f32 ? out.data<float>() + r * D : scratch;
      if (!in_f32) load_f32(x, r * D, D, scratch);
      row_fn(src, dst, cs + l * w, sn + l * w, half, D, p.neox);
      if (!out_f32) store_f32(out, r * D, D, scratch);
    }
  });
}

}  // namespace mto::cpu
