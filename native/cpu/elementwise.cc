// Elementwise ops with broadcasting (core/ops.h ElementwiseParams): operands of any float dtype
// read into float32 runs, computed in float32, written in the output's dtype.
#include <cmath>
#include <algorithm>
#include <limits>
#include <vector>

#include "ops.h"
#include "rows.h"

namespace mto::cpu {
namespace {

// The functions on float32, infinities mapped to the functions' limits (silu(-inf) and
// gelu(-inf) are -0, not the NaN that -inf * 0 would give); NaN stays NaN.
inline float silu(float x) {
  if (x == -std::numeric_limits<float>::infinity()) return -0.0f;
  return x / (1.0f + std::exp(-x));
}
inline float gelu(float x) {
  if (x == -std::numeric_limits<float>::infinity()) return -0.0f;
  return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
}
inline float gelu_tanh(float x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0f;
  const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + std::tanh(inner));
}

template <class F>
void apply_unary(F f, float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = f(v[i]);
}

void unary_run(UnaryOp op, float* v, int64_t n) {
  switch (op) {
    case UnaryOp::Silu: return apply_unary(silu, v, n);
    case UnaryOp::Gelu: return apply_unary(gelu, v, n);
    case UnaryOp::GeluTanh: return apply_unary(gelu_tanh, v, n);
  }
}

void binary_run(BinaryOp op, float* a, const float* b, int64_t n) {
  switch (op) {
    case BinaryOp::Add:
      for (int64_t i = 0; i < n; ++i) a[i] += b[i];
      return;
    case BinaryOp::Mul:
      for (int64_t i = 0; i < n; ++i) a[i] *= b[i];
      return;
    case BinaryOp::Swiglu:
      for (int64_t i = 0; i < n; ++i) a[i] = silu(a[i]) * b[i];
      return;
  }
}

// Reads n elements of `t` from element `at` with stride 0 (one value repeated) or 1.
void load(const Tensor& t, int64_t at, int64_t stride, int64_t n, float* out) {
  if (stride == 1) return load_f32(t, at, n, out);
  float v;
  load_f32(t, at, 1, &v);
  for (int64_t i = 0; i < n; ++i) out[i] = v;
}

// Runs fn(a_run, b_run, n) over the output in runs of at most kRun elements, in parallel over
// chunks of the flat output; a_run is written in place and stored to `out` by the caller's fn.
template <class Fn>
void for_each_run(ThreadPool& pool, const Broadcast& bc, Fn&& fn) {
  const size_t rank = bc.dims.size();
  const int64_t inner = bc.dims.back();
  int64_t total = 1;
  for (int64_t d : bc.dims) total *= d;
  pool.parallel_for(total, kParallelGrain, [&](int64_t begin, int64_t end) {
    // The multi-index of `begin`, then an odometer over the outer dimensions.
    std::vector<int64_t> idx(rank, 0);
    int64_t rest = begin;
    for (size_t k = rank; k-- > 0;) {
      idx[k] = rest % bc.dims[k];
      rest /= bc.dims[k];
    }
    int64_t a_at = 0, b_at = 0;
    for (size_t k = 0; k < rank; ++k) {
      a_at += idx[k] * bc.a_strides[k];
      b_at += idx[k] * bc.b_strides[k];
    }
    int64_t at = begin;
    while (at < end) {
      const int64_t n = std::min<int64_t>({inner - idx[rank - 1], end - at, kRun});
      fn(at, a_at, b_at, n);
      at += n;
      idx[rank - 1] += n;
      a_at += n * bc.a_strides[rank - 1];
      b_at += n * bc.b_strides[rank - 1];
      for (size_t k = rank - 1; k > 0 && idx[k] == bc.dims[k]; --k) {
        a_at += bc.a_strides[k - 1] - idx[k] * bc.a_strides[k];
        b_at += bc.b_strides[k - 1] - idx[k] * bc.b_strides[k];
        idx[k] = 0;
        ++idx[k - 1];
      }
    }
  });
}

}  // namespace

void unary(ThreadPool& pool, UnaryOp op, const Tensor& x, const ElementwiseParams& p, Tensor& out) {
  for_each_run(pool, p.bc, [&](int64_t at, int64_t a_at, int64_t, int64_t n) {
    float v[kRun];
    load(x, a_at, 1, n, v);
    unary_run(op, v, n);
    store_f32(out, at, n, v);
  });
}

void binary(ThreadPool& pool, BinaryOp op, const Tensor& a, const Tensor& b, const ElementwiseParams& p,
            Tensor& out) {
  const int64_t sa = p.bc.a_strides.back(), sb = p.bc.b_strides.back();
  for_each_run(pool, p.bc, [&](int64_t at, int64_t a_at, int64_t b_at, int64_t n) {
    float va[kRun], vb[kRun];
    load(a, a_at, sa, n, va);
    load(b, b_at, sb, n, vb);
    binary_run(op, va, vb, n);
    store_f32(out, at, n, va);
  });
}

}  // namespace mto::cpu
