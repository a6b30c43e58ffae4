// Quantized linear y[M, N] = x[M, K] @ w[N, K]^T (+ bias[N]) for the tensorops tier (MSL 4.0,
// TensorOps): each docs/design/API.md format, float32/float16/bfloat16 activations (T), float32
// accumulation, y in the output dtype Out (rounded once as each element is stored). Compiled only
// at MSL 4.0 (the host sets MTLCompileOptions.languageVersion; docs/design/METAL.md).
//
// The route WWDC26 talk 330 gives for weight formats the hardware path does not know: each step
// dequantizes a BN x BK tile of w (mx_dequant.h, the decoders the cpu backend uses) and stages the
// matching BM x BK tile of x in threadgroup memory (as T where that is exact, else as float32:
// qlinear_tops_stage), and one matmul2d over the threadgroup's SIMD-groups multiplies them,
// mode::multiply_accumulate, into a cooperative destination that lives in registers across the
// whole K loop. K is dynamic: the last step's views are clamped to the K tail (a static K that is
// not a multiple of 32 is truncated on macOS 26.1; ggml 33c9ea5e).
// The epilogue writes each element the calling thread holds at the coordinates
// get_multidimensional_index gives: the element-to-thread layout of a cooperative tensor is
// implementation-defined and differs between GPU generations.
//
// M <= QLINEAR_DECODE_MAX_M runs qlinear_decode (shaders/qlinear.metal) on this tier as well: a
// GEMV is bound by memory bandwidth, not by the matrix units. Plans: native/core/dispatch_plan.cc.
#include <metal_stdlib>

#include "mx_dequant.h"
#include "mx_stage.h"
#include "qlinear_params.h"

#if __METAL_VERSION__ >= 400
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>

using namespace metal;
using namespace mpp::tensor_ops;

// The type x and w tiles are staged in: T itself for float16/bfloat16 x and an MX weight, so that
// matmul2d multiplies 16-bit operands (the hardware's fast rows; an MX value is element * 2^e,
// exact in T where mx_stage.h says so), float32 for float32 x and for affine weights (s * q + b is
// not a 16-bit value in general).
template <typename T, int FMT>
struct qlinear_tops_stage {
  typedef T type;
  static constexpr bool narrow = !mto_format_is_affine(FMT);
};
template <int FMT>
struct qlinear_tops_stage<float, FMT> {
  typedef float type;
  static constexpr bool narrow = false;
};

// The K step of a BM x BN tile staged as S: 64 columns, but 32 for float32 staging of 64 x 64
// tiles (threadgroup memory).
template <typename S, int BM>
struct qlinear_tops_bk {
  static constexpr int value = BM == QLINEAR_TOPS_BIG && sizeof(S) == 4 ? QLINEAR_TOPS_BIG_FLOAT_BK : QLINEAR_TOPS_BK;
};

// The K loop and the epilogue with tiles of S (float, or T where every block of the threadgroup's
// weight rows is exact in T): xs (BM rows) and ws (BN rows) in the kernel's threadgroup memory,
// rows of BK + 4 elements of S.
template <typename S, int BM, int BN, typename T, typename Out, int FMT>
inline void qlinear_tops_tiles(device const T* x, device const uchar* codes,
                               device const typename mto_scale_storage<FMT>::type* scales,
                               device const half* biases, device const float* bias, device Out* y,
                               constant QLinearParams& p, uint2 group, ushort tid, threadgroup S* xs) {
  constexpr int BK = qlinear_tops_bk<S, BM>::value;
  constexpr int THREADS = 32 * QLINEAR_TOPS_SIMDGROUPS;
  constexpr int LD = BK + 4;                 // staged row stride: the pad staggers rows across memory banks
  constexpr int RUN = BM * BK / THREADS;     // values one thread stages per step and operand
  static_assert(BM == BN && RUN <= 32 && 32 % RUN == 0, "loader covers the tiles, a run inside one block");
  threadgroup S* ws = xs + BM * LD;

  const uint M = uint(p.M), N = uint(p.N), K = uint(p.K);
  const uint m0 = group.y * BM, n0 = group.x * BN;
  const uint lr = tid / (BK / RUN), lc = (tid % (BK / RUN)) * RUN;  // this thread's staging run

  // y tile (BM x BN) = x tile (BM x K) * w tile^T: the right operand is w as staged (BN rows of
  // K), i.e. transposed. K is read from the views (dynamic), so the K tail is just a shorter view.
  constexpr auto desc = matmul2d_descriptor(BM, BN, static_cast<int>(dynamic_extent), false, true, false,
                                            matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_simdgroups<QLINEAR_TOPS_SIMDGROUPS>> mm;
  typedef tensor<threadgroup S, dextents<int32_t, 2>, tensor_inline> staged_t;
  auto acc = mm.template get_destination_cooperative_tensor<staged_t, staged_t, float>();
  for (int i = 0; i < acc.get_capacity(); ++i)
    if (acc.is_valid_element(i)) acc[i] = 0.0f;

  for (uint k0 = 0; k0 < K; k0 += BK) {
    // The tiles of the previous step must be consumed before they are overwritten.
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // Rows past M or N are zeros (they add nothing and are never stored); columns past K are
    // outside the views.
    const uint k = k0 + lc;
    const uint m = m0 + lr;
    const bool x_in = m < M && k < K;
    threadgroup S* xr = xs + lr * LD + lc;
    for (int i = 0; i < RUN; ++i) xr[i] = x_in ? S(x[ulong(m) * K + k + uint(i)]) : S(0.0f);
    const uint n = n0 + lr;
    threadgroup S* wr = ws + lr * LD + lc;
    if (n < N && k < K) {
      float v[RUN];
      mto_dequantize_run<FMT, RUN>(codes, scales, biases, n, k, K, uint(p.group_size), v);
      for (int i = 0; i < RUN; ++i) wr[i] = S(v[i]);
    } else {
      for (int i = 0; i < RUN; ++i) wr[i] = S(0.0f);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // Views over the staged tiles, innermost (K) first, clamped to the K tail.
    const int kt = int(min(uint(BK), K - k0));
    staged_t tx(xs, dextents<int32_t, 2>(kt, BM), array<int32_t, 2>{1, LD});
    staged_t tw(ws, dextents<int32_t, 2>(kt, BN), array<int32_t, 2>{1, LD});
    mm.run(tx, tw, acc);
  }

  // Each thread stores the elements it holds, wherever the layout put them.
  for (int i = 0; i < acc.get_capacity(); ++i) {
    if (!acc.is_valid_element(i)) continue;
    const auto idx = acc.get_multidimensional_index(i);  // {column (n), row (m)}
    const uint my = m0 + uint(idx[1]), ny = n0 + uint(idx[0]);
    if (my < M && ny < N) y[ulong(my) * N + ny] = Out(acc[i] + (p.has_bias ? bias[ny] : 0.0f));
  }
}

template <typename T, typename Out, int FMT, int BM, int BN>
[[kernel]] void qlinear_tensorops_gemm(
    device const T* x [[buffer(QLINEAR_BUFFER_X)]],
    device const uchar* codes [[buffer(QLINEAR_BUFFER_W_CODES)]],
    device const typename mto_scale_storage<FMT>::type* scales [[buffer(QLINEAR_BUFFER_W_SCALES)]],
    device const half* biases [[buffer(QLINEAR_BUFFER_W_BIASES)]],
    device const float* bias [[buffer(QLINEAR_BUFFER_BIAS)]],
    device Out* y [[buffer(QLINEAR_BUFFER_Y)]],
    constant QLinearParams& p [[buffer(QLINEAR_BUFFER_PARAMS)]],
    uint2 group [[threadgroup_position_in_grid]],
    ushort tid [[thread_index_in_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]]) {
  constexpr int SIMDGROUPS = QLINEAR_TOPS_SIMDGROUPS;
  typedef qlinear_tops_stage<T, FMT> stage;
  typedef typename stage::type S;
  // The x and w tiles of either staging, in floats.
  constexpr int NARROW_FLOATS = (BM + BN) * (qlinear_tops_bk<S, BM>::value + 4) * int(sizeof(S)) / 4;
  constexpr int FLOAT_FLOATS = (BM + BN) * (qlinear_tops_bk<float, BM>::value + 4);
  constexpr int TILE_FLOATS = NARROW_FLOATS > FLOAT_FLOATS ? NARROW_FLOATS : FLOAT_FLOATS;
  threadgroup float tiles[TILE_FLOATS];
  threadgroup int misfit[SIMDGROUPS];  // a block of the threadgroup's weight rows is not exact in S

  // Stage as S when every block scale of this threadgroup's weight rows keeps its values exact in
  // S (a read of K / 32 bytes per row, 1/32 of an 8-bit weight's codes), else as float32: exact
  // either way, and uniform across the threadgroup (its barriers).
  bool narrow = false;
  if (stage::narrow) {
    const uint blocks = uint(p.K) / 32u, n0 = group.x * uint(BN), rows = min(uint(BN), uint(p.N) - n0);
    narrow = mto_mx_blocks_fit<FMT, S, SIMDGROUPS>(scales + ulong(n0) * blocks, rows * blocks, misfit, tid, simd, lane);
  }
  if (narrow) {
    qlinear_tops_tiles<S, BM, BN, T, Out, FMT>(x, codes, scales, biases, bias, y, p, group, tid, (threadgroup S*)&tiles[0]);
  } else {
    qlinear_tops_tiles<float, BM, BN, T, Out, FMT>(x, codes, scales, biases, bias, y, p, group, tid, &tiles[0]);
  }
}

// Host names as in qlinear.metal: qlinear_tensorops_gemm_<format>_<x dtype>[_of16|_obf16], plus
// _t64 (64 x 64 tiles) for float16/bfloat16 x.
#define MTO_QLINEAR_TOPS_OUT(fmt, name, T, tname, Out, oname, tiles, B) \
  MTO_KERNEL_INSTANCE("qlinear_tensorops_gemm_" name "_" tname oname tiles, qlinear_tensorops_gemm, T, Out, fmt, B, B)
#define MTO_QLINEAR_TOPS_DTYPE(fmt, name, T, tname, tiles, B)          \
  MTO_QLINEAR_TOPS_OUT(fmt, name, T, tname, float, "", tiles, B)       \
  MTO_QLINEAR_TOPS_OUT(fmt, name, T, tname, half, "_of16", tiles, B)   \
  MTO_QLINEAR_TOPS_OUT(fmt, name, T, tname, bfloat, "_obf16", tiles, B)
#define MTO_QLINEAR_TOPS_FORMAT(fmt, name)                                         \
  MTO_QLINEAR_TOPS_DTYPE(fmt, name, float, "f32", "", QLINEAR_TOPS_BM)             \
  MTO_QLINEAR_TOPS_DTYPE(fmt, name, half, "f16", "", QLINEAR_TOPS_BM)              \
  MTO_QLINEAR_TOPS_DTYPE(fmt, name, bfloat, "bf16", "", QLINEAR_TOPS_BM)           \
  MTO_QLINEAR_TOPS_DTYPE(fmt, name, half, "f16", "_t64", QLINEAR_TOPS_BIG)         \
  MTO_QLINEAR_TOPS_DTYPE(fmt, name, bfloat, "bf16", "_t64", QLINEAR_TOPS_BIG)

MTO_QLINEAR_TOPS_FORMAT(MTO_FORMAT_MXFP8_E4M3, "mxfp8")
MTO_QLINEAR_TOPS_FORMAT(MTO_FORMAT_MXFP8_E5M2, "mxfp8_e5m2")
MTO_QLINEAR_TOPS_FORMAT(MTO_FORMAT_MXFP6_E3M2, "mxfp6_e3m2")
MTO_QLINEAR_TOPS_FORMAT(MTO_FORMAT_MXFP6_E2M3, "mxfp6_e2m3")
MTO_QLINEAR_TOPS_FORMAT(MTO_FORMAT_MXFP4, "mxfp4")
MTO_QLINEAR_TOPS_FORMAT(MTO_FORMAT_MXINT8, "mxint8")
MTO_QLINEAR_TOPS_FORMAT(MTO_FORMAT_MXINT4, "mxint4")
MTO_QLINEAR_TOPS_FORMAT(MTO_FORMAT_MXINT2, "mxint2")
MTO_QLINEAR_TOPS_FORMAT(MTO_FORMAT_AFFINE4, "affine4")
MTO_QLINEAR_TOPS_FORMAT(MTO_FORMAT_AFFINE8, "affine8")

#endif  // __METAL_VERSION__ >= 400
