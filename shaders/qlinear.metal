// Quantized linear y[M, N] = x[M, K] @ w[N, K]^T (+ bias[N]) for the simdgroup tier (Apple7+),
// every docs/design/API.md format, float32/float16/bfloat16 activations T, float32 accumulation,
// y in the op's output dtype Out (float32, float16 or bfloat16: linear's outDtype), each element
// rounded once, to nearest even, as it is stored, so no float32 copy is left for the host to
// convert. Activations are converted to float32 as they are read (exact for all three) and weights
// are dequantized to float32, not to T: an MX scale spans 2^-127..2^127, beyond float16's range,
// and bfloat16 would round the decoded values. Weights are dequantized inside the kernel by
// mx_dequant.h (the decoders of mx_formats.h, shared with the cpu backend). Shapes and slots:
// qlinear_params.h; which kernel runs: native/core/dispatch_plan.cc.
//
//   qlinear_decode (M <= 8, token generation) is bound by memory bandwidth: each SIMD-group
//   streams 4 weight rows once, every lane 16 consecutive codes per row and step in one wide
//   load, decoded through a table in threadgroup memory and scaled once per block, dotted with
//   all M rows of x and reduced with simd_sum at the end (the shape of MLX's qmv_fast, with the
//   M rows sharing each weight read). The loop is qlinear_decode.h's, shared with groupedLinear
//   (qlinear_grouped.metal); its cost in an arm64 proxy is in docs/kernel-costs.md.
//   qlinear_gemm (larger M) is bound by arithmetic: 32 x 32 tiles of y, x and dequantized w staged
//   in threadgroup memory 64 columns of K at a time, four SIMD-groups each accumulating a 16 x 16
//   quarter in simdgroup_matrix 8x8 tiles (the structure of llama.cpp's kernel_mul_mm).
#include <metal_stdlib>

#include "mx_dequant.h"
#include "qlinear_decode.h"
#include "qlinear_params.h"

using namespace metal;

template <typename T, typename Out, int FMT>
[[kernel]] void qlinear_decode(
    device const T* x [[buffer(QLINEAR_BUFFER_X)]],
    device const uchar* codes [[buffer(QLINEAR_BUFFER_W_CODES)]],
    device const typename mto_scale_storage<FMT>::type* scales [[buffer(QLINEAR_BUFFER_W_SCALES)]],
    device const half* biases [[buffer(QLINEAR_BUFFER_W_BIASES)]],
    device const float* bias [[buffer(QLINEAR_BUFFER_BIAS)]],
    device Out* y [[buffer(QLINEAR_BUFFER_Y)]],
    constant QLinearParams& p [[buffer(QLINEAR_BUFFER_PARAMS)]],
    uint group [[threadgroup_position_in_grid]],
    ushort simd [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup float table[QLINEAR_DECODE_TABLE(FMT)];
  qlinear_decode_fill_table<FMT>(table, uint(simd) * 32u + uint(lane), 32u * QLINEAR_DECODE_SIMDGROUPS);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint n0 = (group * QLINEAR_DECODE_SIMDGROUPS + simd) * QLINEAR_DECODE_ROWS_PER_SIMDGROUP;
  qlinear_decode_dot<T, Out, FMT>(x, codes, scales, biases, p.has_bias != 0, bias, y, uint(p.M), uint(p.N),
                                  uint(p.K), uint(p.group_size), n0, lane, table);
}

template <typename T, typename Out, int FMT>
[[kernel]] void qlinear_gemm(
    device const T* x [[buffer(QLINEAR_BUFFER_X)]],
    device const uchar* codes [[buffer(QLINEAR_BUFFER_W_CODES)]],
    device const typename mto_scale_storage<FMT>::type* scales [[buffer(QLINEAR_BUFFER_W_SCALES)]],
    device const half* biases [[buffer(QLINEAR_BUFFER_W_BIASES)]],
    device const float* bias [[buffer(QLINEAR_BUFFER_BIAS)]],
    device Out* y [[buffer(QLINEAR_BUFFER_Y)]],
    constant QLinearParams& p [[buffer(QLINEAR_BUFFER_PARAMS)]],
    uint2 group [[threadgroup_position_in_grid]],
    ushort tid [[thread_index_in_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]]) {
  constexpr int BM = QLINEAR_GEMM_BM, BN = QLINEAR_GEMM_BN, BK = QLINEAR_GEMM_BK;
  constexpr int THREADS = 32 * QLINEAR_GEMM_SIMDGROUPS;
  constexpr int LD = BK + 4;   // staged row stride: the pad staggers rows across memory banks
  constexpr int RUN = 16;      // values one thread stages per tile and operand (inside one block)
  static_assert(BM * BK == THREADS * RUN && BN * BK == THREADS * RUN, "loader covers the tiles");
  static_assert(BM == 32 && BN == 32 && QLINEAR_GEMM_SIMDGROUPS == 4, "2 x 2 SIMD-groups of 16 x 16");

  threadgroup float xs[BM][LD];
  threadgroup float ws[BN][LD];
  threadgroup float ys[BM][BN];

  const uint M = uint(p.M), N = uint(p.N), K = uint(p.K);
  const uint m0 = group.y * BM, n0 = group.x * BN;
  const uint lr = tid / (BK / RUN), lc = (tid % (BK / RUN)) * RUN;  // this thread's staging run
  const uint sm = (simd / 2) * 16, sn = (simd % 2) * 16;            // this SIMD-group's quarter

  simdgroup_float8x8 acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);

  for (uint k0 = 0; k0 < K; k0 += BK) {
    // The tiles of the previous step must be consumed before they are overwritten.
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // Stage x and dequantized w; rows past M or N and columns past K (the K tail) are zeros, so
    // they add nothing to the products.
    const uint k = k0 + lc;
    const uint m = m0 + lr;
    const bool x_in = m < M && k < K;
    for (int i = 0; i < RUN; ++i) xs[lr][lc + i] = x_in ? float(x[ulong(m) * K + k + uint(i)]) : 0.0f;
    const uint n = n0 + lr;
    if (n < N && k < K) {
      mto_dequantize_run<FMT, RUN>(codes, scales, biases, n, k, K, uint(p.group_size), &ws[lr][lc]);
    } else {
      for (int i = 0; i < RUN; ++i) ws[lr][lc + i] = 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    for (int kk = 0; kk < BK; kk += 8) {
      simdgroup_float8x8 a[2], b[2];
      for (int i = 0; i < 2; ++i) simdgroup_load(a[i], &xs[sm + 8 * i][kk], LD);
      // w is staged as rows of W; the right operand is W^T, so load it transposed.
      for (int j = 0; j < 2; ++j) simdgroup_load(b[j], &ws[sn + 8 * j][kk], LD, ulong2(0, 0), true);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }

  // Through threadgroup memory, so that edge tiles store only the elements inside y.
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) simdgroup_store(acc[i][j], &ys[sm + 8 * i][sn + 8 * j], BN);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint e = tid; e < uint(BM * BN); e += THREADS) {
    const uint r = e / BN, c = e % BN;
    const uint my = m0 + r, ny = n0 + c;
    if (my < M && ny < N) y[ulong(my) * N + ny] = Out(ys[r][c] + (p.has_bias ? bias[ny] : 0.0f));
  }
}

// One instance per format, activation type and output type (linear takes any float outDtype for
// any float x). Host names: qlinear_{decode,gemm}_<format>_<x dtype>, then "_of16" / "_obf16" for
// a float16 / bfloat16 y (none for float32).
#define MTO_QLINEAR_OUT(fmt, name, T, tname, Out, oname)                                         \
  MTO_KERNEL_INSTANCE("qlinear_decode_" name "_" tname oname, qlinear_decode, T, Out, fmt)        \
  MTO_KERNEL_INSTANCE("qlinear_gemm_" name "_" tname oname, qlinear_gemm, T, Out, fmt)
#define MTO_QLINEAR_DTYPE(fmt, name, T, tname)           \
  MTO_QLINEAR_OUT(fmt, name, T, tname, float, "")        \
  MTO_QLINEAR_OUT(fmt, name, T, tname, half, "_of16")    \
  MTO_QLINEAR_OUT(fmt, name, T, tname, bfloat, "_obf16")
#define MTO_QLINEAR_FORMAT(fmt, name)            \
  MTO_QLINEAR_DTYPE(fmt, name, float, "f32")     \
  MTO_QLINEAR_DTYPE(fmt, name, half, "f16")      \
  MTO_QLINEAR_DTYPE(fmt, name, bfloat, "bf16")

MTO_QLINEAR_FORMAT(MTO_FORMAT_MXFP8_E4M3, "mxfp8")
MTO_QLINEAR_FORMAT(MTO_FORMAT_MXFP8_E5M2, "mxfp8_e5m2")
MTO_QLINEAR_FORMAT(MTO_FORMAT_MXFP6_E3M2, "mxfp6_e3m2")
MTO_QLINEAR_FORMAT(MTO_FORMAT_MXFP6_E2M3, "mxfp6_e2m3")
MTO_QLINEAR_FORMAT(MTO_FORMAT_MXFP4, "mxfp4")
MTO_QLINEAR_FORMAT(MTO_FORMAT_MXINT8, "mxint8")
MTO_QLINEAR_FORMAT(MTO_FORMAT_MXINT4, "mxint4")
MTO_QLINEAR_FORMAT(MTO_FORMAT_MXINT2, "mxint2")
MTO_QLINEAR_FORMAT(MTO_FORMAT_AFFINE4, "affine4")
MTO_QLINEAR_FORMAT(MTO_FORMAT_AFFINE8, "affine8")
