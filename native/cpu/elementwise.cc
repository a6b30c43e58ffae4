// Elementwise ops with broadcasting (core/ops.h ElementwiseParams): operands of any float dtype
// read into float32 runs, computed in float32, written in the output's dtype. silu, gelu and
// swiglu are vmath.h's vectorised functions (a prefill's activations are compute-bound: the
// library's expf / erff / tanhf run one element at a time); the run loops are compiled for AVX2
// and AVX-512 too and chosen at run time (gemm_isa()), as softmax.cc's.
#include <algorithm>
#include <vector>

#include "gemm.h"
#include "ops.h"
#include "rows.h"
#include "simd.h"
#include "vmath.h"

namespace mto::cpu {
namespace {

// dst[i] = f(a[i], b[i]) over [0, n) (b null for a unary op; dst may be a): W lanes at a time,
// then the scalar form of the same steps for the tail (and for every element where there are no
// vector types). Stream: dst's vectors are stored non-temporally (simd::store_stream), the
// elements before its first W-lane boundary plainly.
template <int W, bool Stream, class F>
MTO_INLINE void map_run(F f, float* dst, const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  const auto one = [&](int64_t k) {
    float r;
    f(a[k], b ? b[k] : 0.f, r);
    dst[k] = r;
  };
#if MTO_GNU_EXTENSIONS
  if (Stream) {
    for (; i < n && reinterpret_cast<uintptr_t>(dst + i) % (W * sizeof(float)) != 0; ++i) one(i);
  }
  using V = simd::Vec<W>;
  for (; i + W <= n; i += W) {
    V x, y{}, r;
    simd::load<W>(x, a + i);
    if (b) simd::load<W>(y, b + i);
    f(x, y, r);
    if (Stream) simd::store_stream<W>(dst + i, r);
    else simd::store<W>(dst + i, r);
  }
#endif
  for (; i < n; ++i) one(i);
}

// The functions, on one float or a vector (out by reference: simd.h).
struct SiluF {
  template <class T> MTO_INLINE void operator()(const T& x, const T&, T& r) const { vmath::silu<T>(x, r); }
};
struct GeluF {
  template <class T> MTO_INLINE void operator()(const T& x, const T&, T& r) const { vmath::gelu_erf<T>(x, r); }
};
struct GeluTanhF {
  template <class T> MTO_INLINE void operator()(const T& x, const T&, T& r) const { vmath::gelu_tanh<T>(x, r); }
};
struct AddF {
  template <class T> MTO_INLINE void operator()(const T& x, const T& y, T& r) const { r = x + y; }
};
struct MulF {
  template <class T> MTO_INLINE void operator()(const T& x, const T& y, T& r) const { r = x * y; }
};
struct SwigluF {
  template <class T> MTO_INLINE void operator()(const T& x, const T& y, T& r) const {
    vmath::silu<T>(x, r);
    r = r * y;
  }
};
// gpt-oss's: g = min(x, limit), u = clamp(y, -limit, limit), g sigmoid(alpha g) (u + 1). The
// comparisons keep a NaN (false either way); g = -inf gives -0 (the limit), as silu.
struct SwigluOaiF {
  float alpha, limit;
  template <class T> MTO_INLINE void operator()(const T& x, const T& y, T& r) const {
    T lim, nlim, a, one;
    vmath::splat<T>(lim, limit);
    vmath::splat<T>(nlim, -limit);
    vmath::splat<T>(a, alpha);
    vmath::splat<T>(one, 1.f);
    const T g = x > lim ? lim : x;
    T u = y > lim ? lim : y;
    u = u < nlim ? nlim : u;
    T s;
    vmath::sigmoid<T>(a * g, s);
    r = g * s;
    vmath::minus_inf_to_zero<T>(g, r);
    r = r * (u + one);
  }
};

template <int W, bool Stream>
MTO_INLINE void run_as(int op, bool binary, float* dst, const float* a, const float* b, int64_t n, float alpha,
                       float limit) {
  if (!binary) {
    switch (UnaryOp(op)) {
      case UnaryOp::Silu: return map_run<W, Stream>(SiluF{}, dst, a, nullptr, n);
      case UnaryOp::Gelu: return map_run<W, Stream>(GeluF{}, dst, a, nullptr, n);
      case UnaryOp::GeluTanh: return map_run<W, Stream>(GeluTanhF{}, dst, a, nullptr, n);
    }
    return;
  }
  switch (BinaryOp(op)) {
    case BinaryOp::Add: return map_run<W, Stream>(AddF{}, dst, a, b, n);
    case BinaryOp::Mul: return map_run<W, Stream>(MulF{}, dst, a, b, n);
    case BinaryOp::Swiglu: return map_run<W, Stream>(SwigluF{}, dst, a, b, n);
    case BinaryOp::SwigluOai: return map_run<W, Stream>(SwigluOaiF{alpha, limit}, dst, a, b, n);
  }
}

// op: a UnaryOp (b null) or a BinaryOp, as an int (one function pointer type for both).
template <int W>
MTO_INLINE void run(int op, bool binary, bool stream, float* dst, const float* a, const float* b, int64_t n,
                    float alpha, float limit) {
  if (stream) run_as<W, true>(op, binary, dst, a, b, n, alpha, limit);
  else run_as<W, false>(op, binary, dst, a, b, n, alpha, limit);
}

void run_base(int op, bool binary, bool stream, float* dst, const float* a, const float* b, int64_t n,
              float alpha, float limit) {
  run<4>(op, binary, stream, dst, a, b, n, alpha, limit);
}
#if MTO_X86_DISPATCH
MTO_TARGET_AVX2 void run_avx2(int op, bool binary, bool stream, float* dst, const float* a, const float* b,
                              int64_t n, float alpha, float limit) {
  run<8>(op, binary, stream, dst, a, b, n, alpha, limit);
}
MTO_TARGET_AVX512 void run_avx512(int op, bool binary, bool stream, float* dst, const float* a, const float* b,
                                  int64_t n, float alpha, float limit) {
  run<16>(op, binary, stream, dst, a, b, n, alpha, limit);
}
#endif

using RunFn = void (*)(int, bool, bool, float*, const float*, const float*, int64_t, float, float);
RunFn pick_run() {
#if MTO_X86_DISPATCH
  const GemmIsa isa = gemm_isa();
  if (isa == GemmIsa::Avx512) return run_avx512;
  if (isa == GemmIsa::Avx2) return run_avx2;
#endif
  return run_base;
}

// Elements [at, at + n) of `t` (stride 1) or its element `at` repeated (stride 0) as float32:
// float32 runs are read where they lie, anything else is converted into `buf`.
const float* operand(const Tensor& t, int64_t at, int64_t stride, int64_t n, float* buf) {
  if (stride == 1) {
    if (t.dtype == DType::Float32) return t.data<float>() + at;
    load_f32(t, at, n, buf);
    return buf;
  }
  float v;
  load_f32(t, at, 1, &v);
  for (int64_t i = 0; i < n; ++i) buf[i] = v;
  return buf;
}

// Where a run's results go: straight into a float32 output (streamed where it is large), else
// into `buf`, converted into the output's dtype by finish_run.
float* result_run(Tensor& out, int64_t at, float* buf) {
  return out.dtype == DType::Float32 ? out.data<float>() + at : buf;
}
void finish_run(Tensor& out, int64_t at, int64_t n, const float* buf) {
  if (out.dtype != DType::Float32) store_f32(out, at, n, buf);
}

// Runs fn(at, a_at, b_at, n) over the output in runs of at most kRun elements (never across the
// innermost dimension), in parallel over chunks of the flat output.
template <class Fn>
void for_each_run(ThreadPool& pool, const Broadcast& bc, bool stream, Fn&& fn) {
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
    if (stream) stream_fence();
  });
}

}  // namespace

void unary(ThreadPool& pool, UnaryOp op, const Tensor& x, const ElementwiseParams& p, Tensor& out) {
  const RunFn fn = pick_run();
  const bool stream = streams_output(out, shape_numel(out.shape));
  for_each_run(pool, p.bc, stream, [&](int64_t at, int64_t a_at, int64_t, int64_t n) {
    float vx[kRun], vr[kRun];
    float* r = result_run(out, at, vr);
    fn(int(op), false, stream, r, operand(x, a_at, 1, n, vx), nullptr, n, 1.f, 0.f);
    finish_run(out, at, n, r);
  });
}

void binary(ThreadPool& pool, BinaryOp op, const Tensor& a, const Tensor& b, const ElementwiseParams& p,
            Tensor& out) {
  const int64_t sa = p.bc.a_strides.back(), sb = p.bc.b_strides.back();
  const RunFn fn = pick_run();
  const bool stream = streams_output(out, shape_numel(out.shape));
  for_each_run(pool, p.bc, stream, [&](int64_t at, int64_t a_at, int64_t b_at, int64_t n) {
    float va[kRun], vb[kRun], vr[kRun];
    float* r = result_run(out, at, vr);
    fn(int(op), true, stream, r, operand(a, a_at, sa, n, va), operand(b, b_at, sb, n, vb), n, p.alpha,
       p.limit);
    finish_run(out, at, n, r);
  });
}

}  // namespace mto::cpu
