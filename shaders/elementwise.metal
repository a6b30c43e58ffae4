// Elementwise ops on the GPU (simdgroup tier, MSL 3.1): silu, gelu, gelu_tanh of x, and add, mul,
// swiglu of a and b with NumPy broadcasting, each operand read in its own dtype (float32, float16,
// bfloat16), computed in float32 and rounded once into the output's dtype. The same results as
// native/cpu/elementwise.cc: add and mul bit for bit (one float32 operation, one rounding), the
// transcendental ops within a few units in the last place, and the cpu's rules at the infinities
// (silu(-inf) = gelu(-inf) = gelu_tanh(-inf) = -0, gelu_tanh(+inf) = +inf; NaN stays NaN).
// Shapes, slots and op codes: elementwise_params.h; which kernel runs: native/core/plan/elementwise.cc.
//
// Two kernels per op kind, as MLX splits contiguous from general binary kernels: the contiguous
// one covers operands that are one dense run or one repeated value (a_step, b_step of 1 or 0),
// the strided one up to ELEMENTWISE_MAX_DIMS merged dimensions with per-dimension strides.
#include <metal_stdlib>

#include "elementwise_params.h"
#include "nd_index.h"

using namespace metal;

inline float ew_inf() { return as_type<float>(0x7f800000u); }

inline float ew_silu(float x) {
  if (x == -ew_inf()) return -0.0f;  // -inf / (1 + inf) would be NaN
  return x / (1.0f + precise::exp(-x));
}

// erfc(z) for z >= 0 by the Chebyshev-fitted form of Numerical Recipes (erfcc: fractional error
// below 1.2e-7 for every z >= 0), so that gelu's 1 + erf(x / sqrt 2) = erfc(-x / sqrt 2) keeps
// its relative accuracy in the negative tail, where 1 + erf cancels. Metal has no erf.
inline float ew_erfc_nonneg(float z) {
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = fma(p, t, -0.82215223f);
  p = fma(p, t, 1.48851587f);
  p = fma(p, t, -1.13520398f);
  p = fma(p, t, 0.27886807f);
  p = fma(p, t, -0.18628806f);
  p = fma(p, t, 0.09678418f);
  p = fma(p, t, 0.37409196f);
  p = fma(p, t, 1.00002368f);
  p = fma(p, t, -1.26551223f);
  return t * precise::exp(p - z * z);
}

inline float ew_gelu(float x) {
  if (x == -ew_inf()) return -0.0f;
  const float z = -x * 0.70710678118654752f;
  const float one_plus_erf = z >= 0.0f ? ew_erfc_nonneg(z) : 2.0f - ew_erfc_nonneg(-z);
  return 0.5f * x * one_plus_erf;
}

inline float ew_gelu_tanh(float x) {
  if (isinf(x)) return x > 0.0f ? x : -0.0f;
  const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + precise::tanh(inner));
}

inline float ew_unary(int op, float x) {
  switch (op) {
    case ELEMENTWISE_GELU: return ew_gelu(x);
    case ELEMENTWISE_GELU_TANH: return ew_gelu_tanh(x);
    default: return ew_silu(x);
  }
}

// gpt-oss's swiglu (core/ops.h SwigluOai): the comparisons keep a NaN; g = -inf gives -0.
inline float ew_swiglu_oai(float a, float b, float alpha, float limit) {
  const float g = a > limit ? limit : a;
  float u = b > limit ? limit : b;
  u = u < -limit ? -limit : u;
  const float glu = g == -ew_inf() ? -0.0f : g / (1.0f + precise::exp(-alpha * g));
  return glu * (u + 1.0f);
}

inline float ew_binary(constant ElementwiseKernelParams& p, float a, float b) {
  switch (p.op) {
    case ELEMENTWISE_MUL: return a * b;
    case ELEMENTWISE_SWIGLU: return ew_silu(a) * b;
    case ELEMENTWISE_SWIGLU_OAI: return ew_swiglu_oai(a, b, p.alpha, p.limit);
    default: return a + b;
  }
}

// x is dense and of out's shape: unary ops never broadcast.
template <typename T>
[[kernel]] void elementwise_unary(
    device const T* x [[buffer(ELEMENTWISE_BUFFER_A)]],
    device T* out [[buffer(ELEMENTWISE_BUFFER_OUT)]],
    constant ElementwiseKernelParams& p [[buffer(ELEMENTWISE_BUFFER_PARAMS)]],
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  const uint total = uint(p.total);
  const uint first = group * uint(ELEMENTWISE_THREADS * ELEMENTWISE_RUN) + tid;
  for (uint r = 0; r < uint(ELEMENTWISE_RUN); ++r) {
    const uint e = first + r * uint(ELEMENTWISE_THREADS);
    if (e < total) out[e] = T(ew_unary(p.op, float(x[e])));
  }
}

// a and b each one dense run of out's length or one value repeated (step 1 or 0).
template <typename A, typename B, typename Out>
[[kernel]] void elementwise_binary(
    device const A* a [[buffer(ELEMENTWISE_BUFFER_A)]],
    device const B* b [[buffer(ELEMENTWISE_BUFFER_B)]],
    device Out* out [[buffer(ELEMENTWISE_BUFFER_OUT)]],
    constant ElementwiseKernelParams& p [[buffer(ELEMENTWISE_BUFFER_PARAMS)]],
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  const uint total = uint(p.total), sa = uint(p.a_step), sb = uint(p.b_step);
  const uint first = group * uint(ELEMENTWISE_THREADS * ELEMENTWISE_RUN) + tid;
  for (uint r = 0; r < uint(ELEMENTWISE_RUN); ++r) {
    const uint e = first + r * uint(ELEMENTWISE_THREADS);
    if (e < total) out[e] = Out(ew_binary(p, float(a[e * sa]), float(b[e * sb])));
  }
}

// Broadcasting over up to ELEMENTWISE_MAX_DIMS merged dimensions ([3, 1, 7] x [1, 5, 1],
// [300, 257] x [257]): each element's offsets from its multi-index.
template <typename A, typename B, typename Out>
[[kernel]] void elementwise_binary_strided(
    device const A* a [[buffer(ELEMENTWISE_BUFFER_A)]],
    device const B* b [[buffer(ELEMENTWISE_BUFFER_B)]],
    device Out* out [[buffer(ELEMENTWISE_BUFFER_OUT)]],
    constant ElementwiseKernelParams& p [[buffer(ELEMENTWISE_BUFFER_PARAMS)]],
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  const uint total = uint(p.total);
  const uint first = group * uint(ELEMENTWISE_THREADS * ELEMENTWISE_RUN) + tid;
  for (uint r = 0; r < uint(ELEMENTWISE_RUN); ++r) {
    const uint e = first + r * uint(ELEMENTWISE_THREADS);
    if (e >= total) break;
    uint ia, ib;
    mto_nd_offsets2(e, p.rank, p.dims, p.a_strides, p.b_strides, ia, ib);
    out[e] = Out(ew_binary(p, float(a[ia]), float(b[ib])));
  }
}

MTO_KERNEL_INSTANCE("elementwise_unary_f32", elementwise_unary, float)
MTO_KERNEL_INSTANCE("elementwise_unary_f16", elementwise_unary, half)
MTO_KERNEL_INSTANCE("elementwise_unary_bf16", elementwise_unary, bfloat)

// Every pair of input dtypes: the output has their dtype when they agree, else float32.
#define MTO_ELEMENTWISE_BINARY(an, A, bn, B, Out)                                                  \
  MTO_KERNEL_INSTANCE("elementwise_binary_" an "_" bn, elementwise_binary, A, B, Out)             \
  MTO_KERNEL_INSTANCE("elementwise_binary_strided_" an "_" bn, elementwise_binary_strided, A, B, Out)

MTO_ELEMENTWISE_BINARY("f32", float, "f32", float, float)
MTO_ELEMENTWISE_BINARY("f32", float, "f16", half, float)
MTO_ELEMENTWISE_BINARY("f32", float, "bf16", bfloat, float)
MTO_ELEMENTWISE_BINARY("f16", half, "f32", float, float)
MTO_ELEMENTWISE_BINARY("f16", half, "f16", half, half)
MTO_ELEMENTWISE_BINARY("f16", half, "bf16", bfloat, float)
MTO_ELEMENTWISE_BINARY("bf16", bfloat, "f32", float, float)
MTO_ELEMENTWISE_BINARY("bf16", bfloat, "f16", half, float)
MTO_ELEMENTWISE_BINARY("bf16", bfloat, "bf16", bfloat, bfloat)
