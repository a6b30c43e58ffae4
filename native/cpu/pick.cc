// argmax, topK and sample over the last axis (core/ops.h PickParams), one row per task.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "../../shaders/pick_sample.h"
#include "../core/error.h"
#include "ops.h"
#include "rows.h"

namespace mto::cpu {
namespace {

// a before b: larger first, NaN largest, ties to the lower index.
struct Before {
  const float* v;
  bool operator()(int32_t a, int32_t b) const {
    const float x = v[a], y = v[b];
    const bool xn = x != x, yn = y != y;
    if (xn != yn) return xn;
    if (!xn && x != y) return x > y;
    return a < b;
  }
};

int32_t argmax_row(const float* v, int64_t n) {
  int32_t best = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (v[i] != v[i]) return int32_t(i);
    if (v[i] > v[best]) best = int32_t(i);
  }
  return best;
}

template <class Fn>
void for_rows(ThreadPool& pool, const Tensor& x, const PickParams& p, Fn&& fn) {
  pool.parallel_for(p.rows, std::max<int64_t>(1, kParallelGrain / p.cols), [&](int64_t r0, int64_t r1) {
    float* row = row_scratch(p.cols);
    for (int64_t r = r0; r < r1; ++r) {
      load_f32(x, r * p.cols, p.cols, row);
      fn(r, row);
    }
  });
}

int32_t sample_row(const float* v, const PickParams& p, int64_t r) {
  const int64_t n = p.cols;
  for (int64_t i = 0; i < n; ++i) {
    if (v[i] != v[i] || v[i] == INFINITY) {
      throw Error(code::Arg, "sample: logits row " + std::to_string(r) + " holds " + (v[i] != v[i] ? "NaN" : "+inf") +
                                 " at " + std::to_string(i) + "; no distribution to draw from");
    }
  }
  if (p.temperature == 0) return argmax_row(v, n);
  // The candidates, largest first (only when top_k or top_p cut the list; else in index order).
  std::vector<int32_t> idx;
  const bool ranked = p.top_k > 0 || p.top_p < 1;
  const int64_t k = p.top_k > 0 ? std::min(p.top_k, n) : n;
  idx.resize(size_t(n));
  std::iota(idx.begin(), idx.end(), 0);
  if (ranked) std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), Before{v});
  idx.resize(size_t(k));
  const float m = v[ranked ? idx[0] : argmax_row(v, n)];
  if (m == -INFINITY) throw Error(code::Arg, "sample: logits row " + std::to_string(r) + " is all -inf");
  // Integer weights (shaders/pick_sample.h): the GPU kernels draw the same id bit for bit.
  const float c = sample_log2e_over_t(p.temperature);
  std::vector<uint64_t> w(idx.size());
  uint64_t total = 0;
  for (size_t i = 0; i < idx.size(); ++i) total += (w[i] = mto_sample_weight(v[idx[i]], m, c));
  size_t keep = idx.size();
  if (p.top_p < 1) {  // the smallest prefix whose probability reaches top_p
    const uint64_t top_p = sample_top_p_q32(p.top_p);
    uint64_t cum = 0;
    for (size_t i = 0; i < idx.size(); ++i) {
      cum += w[i];
      if (mto_sample_reaches(cum, total, top_p)) {
        keep = i + 1;
        break;
      }
    }
  }
  uint64_t kept = 0;
  for (size_t i = 0; i < keep; ++i) kept += w[i];
  // The largest logit weighs 2^32, so kept > target and the loop returns.
  const uint64_t target = mto_sample_target(mto_sample_bits(p.seed, uint64_t(r)), kept);
  uint64_t cum = 0;
  for (size_t i = 0; i < keep; ++i) {
    cum += w[i];
    if (target < cum) return idx[i];
  }
  return idx[0];
}

}  // namespace

void argmax(ThreadPool& pool, const Tensor& x, const PickParams& p, Tensor& ids) {
  int32_t* out = ids.data<int32_t>();
  for_rows(pool, x, p, [&](int64_t r, const float* v) { out[r] = argmax_row(v, p.cols); });
}

void top_k(ThreadPool& pool, const Tensor& x, const PickParams& p, Tensor& values, Tensor& ids) {
  int32_t* out = ids.data<int32_t>();
  for_rows(pool, x, p, [&](int64_t r, const float* v) {
    std::vector<int32_t> idx(static_cast<size_t>(p.cols));
    std::iota(idx.begin(), idx.end(), 0);
    std::partial_sort(idx.begin(), idx.begin() + p.k, idx.end(), Before{v});
    std::vector<float> vals(static_cast<size_t>(p.k));
    for (int64_t i = 0; i < p.k; ++i) {
      out[r * p.k + i] = idx[size_t(i)];
      vals[size_t(i)] = v[idx[size_t(i)]];
    }
    store_f32(values, r * p.k, p.k, vals.data());
  });
}

void sample(ThreadPool& pool, const Tensor& logits, const PickParams& p, Tensor& ids) {
  int32_t* out = ids.data<int32_t>();
  for_rows(pool, logits, p, [&](int64_t r, const float* v) { out[r] = sample_row(v, p, r); });
}

void embedding(ThreadPool& pool, const Operand& table, const Tensor& ids, const EmbeddingParams& p, Tensor& out) {
  check_embedding_ids(ids, p);
  if (p.count == 0 || p.dim == 0) return;
  const int32_t* id = ids.data<int32_t>();
  pool.parallel_for(p.count, std::max<int64_t>(1, kParallelGrain / p.dim), [&](int64_t i0, int64_t i1) {
    if (table.dense) {
      const size_t row = size_t(p.dim) * dtype_size(table.dense->dtype);
      const auto* src = static_cast<const uint8_t*>(table.dense->buffer->data());
      auto* dst = static_cast<uint8_t*>(out.buffer->data());
      for (int64_t i = i0; i < i1; ++i) std::copy_n(src + size_t(id[i]) * row, row, dst + size_t(i) * row);
    } else {
      const QuantView view = table.quant->view();
      for (int64_t i = i0; i < i1; ++i) dequantize_rows(view, id[i], 1, out.data<float>() + i * p.dim);
    }
  });
}

// A stable counting sort of the entries of ids by value, on one thread: entries are few (tokens
// times experts per token) and the passes are serial by nature.
void group_rows(const Tensor& ids, const GroupRowsParams& p, Tensor& sizes, Tensor& rows, Tensor& positions) {
  check_group_ids(ids, p);
  const int64_t n = p.rows * p.k;
  const int32_t* id = n ? ids.data<int32_t>() : nullptr;
  int32_t* size = sizes.data<int32_t>();
  std::fill(size, size + p.groups, 0);
  for (int64_t i = 0; i < n; ++i) ++size[id[i]];
  std::vector<int64_t> next(size_t(p.groups), 0);  // where each group's next entry goes
  for (int64_t g = 1; g < p.groups; ++g) next[size_t(g)] = next[size_t(g - 1)] + size[g - 1];
  int32_t* row = n ? rows.data<int32_t>() : nullptr;
  int32_t* pos = n ? positions.data<int32_t>() : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t at = next[size_t(id[i])]++;
    row[at] = int32_t(i / p.k);
    pos[i] = int32_t(at);
  }
}

}  // namespace mto::cpu
