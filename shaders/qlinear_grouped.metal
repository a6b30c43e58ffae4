// groupedLinear (a mixture of experts' linear) for the simdgroup tier: y[T, N] where rows
// [o_e, o_e + g_e) of x [T, K] use expert e of a quantized w [E, N, K], the group sizes g read
// on the GPU when the op runs (the host never waits for them). Slots and limits:
// qlinear_params.h; plan: native/core/plan/grouped_linear.cc.
//
//   qlinear_grouped_route: one threadgroup stages the sizes in threadgroup memory and one thread
//   walks them in order, as the cpu does: the first negative size, or a sum other than T, goes to
//   the status buffer (the host turns it into E_ARG; a kernel cannot throw) and leaves every slot
//   empty; else the exclusive prefix sum of the sizes gives each non-empty group's first row, and
//   the groups are listed in slots (at most min(E, T) of them), so that the next pass launches
//   no threadgroup for the empty experts of a decode step.
//   qlinear_grouped_decode: grid (N / 8 decode rows, slots); each threadgroup reads its slot and
//   runs qlinear_decode's dot products (qlinear_decode.h) on its expert's planes for the group's
//   rows, up to QLINEAR_DECODE_MAX_M at a time (PyTorch's grouped_mm reads its offsets on the GPU
//   the same way, tile by tile; MLX's gather_qmv picks the matrix per row through indices).
//   qlinear_grouped_gemm (prefill; dense w at any T): the route cuts each group into slots of at
//   most QLINEAR_GEMM_BM rows; grid (N / BN, slots); each threadgroup computes one BM x BN tile of
//   its slot's rows as qlinear_gemm does (x and w staged in threadgroup memory as float32,
//   simdgroup_matrix products, one rounding per element of y), w decoded from its expert's planes
//   or read from a dense [E, N, K] stack of any float dtype.
#include <metal_stdlib>

#include "mx_dequant.h"
#include "qlinear_decode.h"
#include "qlinear_params.h"

using namespace metal;

[[kernel]] void qlinear_grouped_route(
    device const int* sizes [[buffer(QLINEAR_GROUPED_BUFFER_SIZES)]],
    device int* slots [[buffer(QLINEAR_GROUPED_BUFFER_SLOTS)]],
    device int* status [[buffer(QLINEAR_GROUPED_BUFFER_STATUS)]],
    constant QLinearGroupedParams& p [[buffer(QLINEAR_BUFFER_PARAMS)]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup int staged[QLINEAR_GROUPED_ROUTE_CHUNK];
  const uint E = uint(p.E), S = uint(p.slots);
  int negative = -1;    // the first e with a negative size
  long sum = 0;         // of every size (64 bits: E int32 sizes cannot overflow it)
  uint used = 0;        // slots written
  for (uint base = 0; base < E; base += QLINEAR_GROUPED_ROUTE_CHUNK) {
    const uint n = min(uint(QLINEAR_GROUPED_ROUTE_CHUNK), E - base);
    for (uint i = tid; i < n; i += QLINEAR_GROUPED_ROUTE_THREADS) staged[i] = sizes[base + i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid == 0) {
      for (uint i = 0; i < n; ++i) {
        const int g = staged[i];
        if (g < 0 && negative < 0) negative = int(base + i);
        if (g > 0 && negative < 0 && sum + g <= long(p.T)) {
          // Runs of at most block_rows rows (the whole group when 0): the tiled pass's tiles.
          const int step = p.block_rows > 0 ? p.block_rows : g;
          for (int r = 0; r < g && used < S; r += step) {
            slots[4 * used] = int(base + i);
            slots[4 * used + 1] = int(sum) + r;
            slots[4 * used + 2] = min(step, g - r);
            slots[4 * used + 3] = 0;
            ++used;
          }
        }
        sum += g;
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid != 0) return;
  const bool valid = negative < 0 && sum == long(p.T);
  // Invalid sizes leave every slot empty: the second pass then reads nothing outside x and y.
  for (uint s = valid ? used : 0u; s < S; ++s) {
    slots[4 * s] = 0;
    slots[4 * s + 1] = 0;
    slots[4 * s + 2] = 0;
    slots[4 * s + 3] = 0;
  }
  status[0] = negative >= 0 ? QLINEAR_GROUPED_NEGATIVE : valid ? QLINEAR_GROUPED_OK : QLINEAR_GROUPED_SUM;
  status[1] = negative >= 0 ? negative : 0;
  status[2] = negative >= 0 ? sizes[negative] : int(uint(ulong(sum) & 0xFFFFFFFFul));
  status[3] = negative >= 0 ? 0 : int(uint(ulong(sum) >> 32));
}

template <typename T, typename Out, int FMT>
[[kernel]] void qlinear_grouped_decode(
    device const T* x [[buffer(QLINEAR_BUFFER_X)]],
    device const uchar* codes [[buffer(QLINEAR_BUFFER_W_CODES)]],
    device const typename mto_scale_storage<FMT>::type* scales [[buffer(QLINEAR_BUFFER_W_SCALES)]],
    device const half* biases [[buffer(QLINEAR_BUFFER_W_BIASES)]],
    device const int* slots [[buffer(QLINEAR_GROUPED_BUFFER_SLOTS)]],
    device Out* y [[buffer(QLINEAR_BUFFER_Y)]],
    constant QLinearGroupedParams& p [[buffer(QLINEAR_BUFFER_PARAMS)]],
    uint2 group [[threadgroup_position_in_grid]],
    ushort simd [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]]) {
  const uint rows = uint(slots[4 * group.y + 2]);
  if (rows == 0) return;  // an unused slot (the whole threadgroup leaves; no barrier follows)
  threadgroup float table[QLINEAR_DECODE_TABLE(FMT)];
  qlinear_decode_fill_table<FMT>(table, uint(simd) * 32u + uint(lane), 32u * QLINEAR_DECODE_SIMDGROUPS);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint e = uint(slots[4 * group.y]), first = uint(slots[4 * group.y + 1]);
  const uint N = uint(p.N), K = uint(p.K), group_size = uint(p.group_size);
  // Expert e's share of each plane: the planes are [E, N, ...] row-major.
  const uint blocks = mto_format_is_affine(FMT) ? K / group_size : K / 32u;
  const ulong matrix_codes = ulong(N) * (ulong(K) * ulong(mto_format_bits(FMT)) / 8ul);
  const ulong matrix_scales = ulong(N) * ulong(blocks);
  device const uchar* we = codes + ulong(e) * matrix_codes;
  device const typename mto_scale_storage<FMT>::type* se = scales + ulong(e) * matrix_scales;
  device const half* be = biases + (mto_format_is_affine(FMT) ? ulong(e) * matrix_scales : 0ul);

  const uint n0 = (group.x * QLINEAR_DECODE_SIMDGROUPS + simd) * QLINEAR_DECODE_ROWS_PER_SIMDGROUP;
  for (uint m0 = 0; m0 < rows; m0 += QLINEAR_DECODE_MAX_M) {
    const uint M = min(uint(QLINEAR_DECODE_MAX_M), rows - m0);
    const ulong row0 = ulong(first) + m0;
    qlinear_decode_dot<T, Out, FMT>(x + row0 * K, we, se, be, false, nullptr, y + row0 * N, M, N, K, group_size, n0,
                                    lane, table);
  }
}

// What the tiled pass stages of w: RUN consecutive elements w[n, k .. k + RUN) of one expert's
// [N, K] matrix as float32, zeros past K. Quantized (K a multiple of 32, so a run is inside one
// block and never crosses K) or dense (any K, any float dtype W).
#define QLINEAR_GROUPED_RUN 16
template <int FMT>
struct GroupedQuantW {
  device const uchar* codes;
  device const typename mto_scale_storage<FMT>::type* scales;
  device const half* biases;
  uint group_size;
  void stage(uint n, uint k, uint K, threadgroup float* dst) const {
    if (k < K) {
      mto_dequantize_run<FMT, QLINEAR_GROUPED_RUN>(codes, scales, biases, n, k, K, group_size, dst);
    } else {
      for (int i = 0; i < QLINEAR_GROUPED_RUN; ++i) dst[i] = 0.0f;
    }
  }
};
template <typename W>
struct GroupedDenseW {
  device const W* w;
  void stage(uint n, uint k, uint K, threadgroup float* dst) const {
    device const W* row = w + ulong(n) * K;
    for (uint i = 0; i < QLINEAR_GROUPED_RUN; ++i) dst[i] = k + i < K ? float(row[k + i]) : 0.0f;
  }
};

// One BM x BN tile of y = x w^T for the M <= BM rows of x (row stride K) starting at x, columns
// n0.. of w's N: qlinear_gemm's tile (qlinear.metal), with w staged through `w`. The caller owns
// the threadgroup tiles (xs, ws: BM / BN rows of LD floats; ys: BM x BN).
#define QLINEAR_GROUPED_LD (QLINEAR_GEMM_BK + 4)  // the pad staggers staged rows across banks
template <typename T, typename Out, typename WS>
inline void grouped_gemm_tile(device const T* x, WS w, device Out* y, uint M, uint N, uint K, uint n0, ushort tid,
                              ushort simd, threadgroup float (*xs)[QLINEAR_GROUPED_LD],
                              threadgroup float (*ws)[QLINEAR_GROUPED_LD], threadgroup float (*ys)[QLINEAR_GEMM_BN]) {
  constexpr int BN = QLINEAR_GEMM_BN, BK = QLINEAR_GEMM_BK, RUN = QLINEAR_GROUPED_RUN;
  constexpr int THREADS = 32 * QLINEAR_GEMM_SIMDGROUPS;
  static_assert(QLINEAR_GEMM_BM * BK == THREADS * RUN && BN * BK == THREADS * RUN, "loader covers the tiles");
  const uint lr = tid / (BK / RUN), lc = (tid % (BK / RUN)) * RUN;  // this thread's staging run
  const uint sm = (simd / 2) * 16, sn = (simd % 2) * 16;            // this SIMD-group's quarter

  simdgroup_float8x8 acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k0 = 0; k0 < K; k0 += BK) {
    threadgroup_barrier(mem_flags::mem_threadgroup);  // the previous step's tiles are consumed
    // Rows past M or N and columns past K are zeros: they add nothing to the products.
    const uint k = k0 + lc;
    device const T* xr = x + ulong(min(lr, M - 1)) * K;
    for (uint i = 0; i < uint(RUN); ++i) xs[lr][lc + i] = lr < M && k + i < K ? float(xr[k + i]) : 0.0f;
    if (n0 + lr < N) {
      w.stage(n0 + lr, k, K, &ws[lr][lc]);
    } else {
      for (int i = 0; i < RUN; ++i) ws[lr][lc + i] = 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int kk = 0; kk < BK; kk += 8) {
      simdgroup_float8x8 a[2], b[2];
      for (int i = 0; i < 2; ++i) simdgroup_load(a[i], &xs[sm + 8 * i][kk], QLINEAR_GROUPED_LD);
      for (int j = 0; j < 2; ++j) simdgroup_load(b[j], &ws[sn + 8 * j][kk], QLINEAR_GROUPED_LD, ulong2(0, 0), true);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }
  // Through threadgroup memory, so that edge tiles store only the elements inside y.
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) simdgroup_store(acc[i][j], &ys[sm + 8 * i][sn + 8 * j], BN);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint e = tid; e < uint(QLINEAR_GEMM_BM * BN); e += THREADS) {
    const uint r = e / BN, c = e % BN;
    if (r < M && n0 + c < N) y[ulong(r) * N + n0 + c] = Out(ys[r][c]);
  }
}

template <typename T, typename Out, int FMT>
[[max_total_threads_per_threadgroup(32 * QLINEAR_GEMM_SIMDGROUPS)]] [[kernel]] void qlinear_grouped_gemm(
    device const T* x [[buffer(QLINEAR_BUFFER_X)]],
    device const uchar* codes [[buffer(QLINEAR_BUFFER_W_CODES)]],
    device const typename mto_scale_storage<FMT>::type* scales [[buffer(QLINEAR_BUFFER_W_SCALES)]],
    device const half* biases [[buffer(QLINEAR_BUFFER_W_BIASES)]],
    device const int* slots [[buffer(QLINEAR_GROUPED_BUFFER_SLOTS)]],
    device Out* y [[buffer(QLINEAR_BUFFER_Y)]],
    constant QLinearGroupedParams& p [[buffer(QLINEAR_BUFFER_PARAMS)]],
    uint2 group [[threadgroup_position_in_grid]],
    ushort tid [[thread_index_in_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]]) {
  threadgroup float xs[QLINEAR_GEMM_BM][QLINEAR_GROUPED_LD];
  threadgroup float ws[QLINEAR_GEMM_BN][QLINEAR_GROUPED_LD];
  threadgroup float ys[QLINEAR_GEMM_BM][QLINEAR_GEMM_BN];
  const uint rows = uint(slots[4 * group.y + 2]);
  if (rows == 0) return;  // an unused slot (the whole threadgroup leaves before any barrier)
  const uint e = uint(slots[4 * group.y]), first = uint(slots[4 * group.y + 1]);
  const uint N = uint(p.N), K = uint(p.K);
  // Expert e's share of each plane ([E, N, ...] row-major).
  const uint blocks = mto_format_is_affine(FMT) ? K / uint(p.group_size) : K / 32u;
  const ulong expert_codes = ulong(N) * (ulong(K) * ulong(mto_format_bits(FMT)) / 8ul);
  const ulong expert_scales = ulong(N) * ulong(blocks);
  GroupedQuantW<FMT> w;
  w.codes = codes + ulong(e) * expert_codes;
  w.scales = scales + ulong(e) * expert_scales;
  w.biases = biases + (mto_format_is_affine(FMT) ? ulong(e) * expert_scales : 0ul);
  w.group_size = uint(p.group_size);
  grouped_gemm_tile<T, Out>(x + ulong(first) * K, w, y + ulong(first) * N, rows, N, K, group.x * QLINEAR_GEMM_BN,
                            tid, simd, xs, ws, ys);
}

// Dense w [E, N, K] of dtype W (float32, float16 or bfloat16, any K): the same tiles.
template <typename T, typename Out, typename W>
[[max_total_threads_per_threadgroup(32 * QLINEAR_GEMM_SIMDGROUPS)]] [[kernel]] void qlinear_grouped_gemm_dense(
    device const T* x [[buffer(QLINEAR_BUFFER_X)]],
    device const W* wd [[buffer(QLINEAR_BUFFER_W_CODES)]],
    device const int* slots [[buffer(QLINEAR_GROUPED_BUFFER_SLOTS)]],
    device Out* y [[buffer(QLINEAR_BUFFER_Y)]],
    constant QLinearGroupedParams& p [[buffer(QLINEAR_BUFFER_PARAMS)]],
    uint2 group [[threadgroup_position_in_grid]],
    ushort tid [[thread_index_in_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]]) {
  threadgroup float xs[QLINEAR_GEMM_BM][QLINEAR_GROUPED_LD];
  threadgroup float ws[QLINEAR_GEMM_BN][QLINEAR_GROUPED_LD];
  threadgroup float ys[QLINEAR_GEMM_BM][QLINEAR_GEMM_BN];
  const uint rows = uint(slots[4 * group.y + 2]);
  if (rows == 0) return;
  const uint e = uint(slots[4 * group.y]), first = uint(slots[4 * group.y + 1]);
  const uint N = uint(p.N), K = uint(p.K);
  GroupedDenseW<W> w;
  w.w = wd + ulong(e) * ulong(N) * ulong(K);
  grouped_gemm_tile<T, Out>(x + ulong(first) * K, w, y + ulong(first) * N, rows, N, K, group.x * QLINEAR_GEMM_BN,
                            tid, simd, xs, ws, ys);
}

// One instance per format, x dtype and y dtype, named as qlinear's: qlinear_grouped_{decode,gemm}_
// <format>_<x dtype>, then "_of16" / "_obf16" for a float16 / bfloat16 y; dense w:
// qlinear_grouped_gemm_dense_<w dtype>_<x dtype>[_of16|_obf16].
#define MTO_GROUPED_OUT(fmt, name, T, tname, Out, oname)                                                  \
  MTO_KERNEL_INSTANCE("qlinear_grouped_decode_" name "_" tname oname, qlinear_grouped_decode, T, Out, fmt) \
  MTO_KERNEL_INSTANCE("qlinear_grouped_gemm_" name "_" tname oname, qlinear_grouped_gemm, T, Out, fmt)
#define MTO_GROUPED_DTYPE(fmt, name, T, tname)           \
  MTO_GROUPED_OUT(fmt, name, T, tname, float, "")        \
  MTO_GROUPED_OUT(fmt, name, T, tname, half, "_of16")    \
  MTO_GROUPED_OUT(fmt, name, T, tname, bfloat, "_obf16")
#define MTO_GROUPED_FORMAT(fmt, name)            \
  MTO_GROUPED_DTYPE(fmt, name, float, "f32")     \
  MTO_GROUPED_DTYPE(fmt, name, half, "f16")      \
  MTO_GROUPED_DTYPE(fmt, name, bfloat, "bf16")

MTO_GROUPED_FORMAT(MTO_FORMAT_MXFP8_E4M3, "mxfp8")
MTO_GROUPED_FORMAT(MTO_FORMAT_MXFP8_E5M2, "mxfp8_e5m2")
MTO_GROUPED_FORMAT(MTO_FORMAT_MXFP6_E3M2, "mxfp6_e3m2")
MTO_GROUPED_FORMAT(MTO_FORMAT_MXFP6_E2M3, "mxfp6_e2m3")
MTO_GROUPED_FORMAT(MTO_FORMAT_MXFP4, "mxfp4")
MTO_GROUPED_FORMAT(MTO_FORMAT_MXINT8, "mxint8")
MTO_GROUPED_FORMAT(MTO_FORMAT_MXINT4, "mxint4")
MTO_GROUPED_FORMAT(MTO_FORMAT_MXINT2, "mxint2")
MTO_GROUPED_FORMAT(MTO_FORMAT_AFFINE4, "affine4")
MTO_GROUPED_FORMAT(MTO_FORMAT_AFFINE8, "affine8")

#define MTO_GROUPED_DENSE_OUT(W, wname, T, tname)                                                                  \
  MTO_KERNEL_INSTANCE("qlinear_grouped_gemm_dense_" wname "_" tname, qlinear_grouped_gemm_dense, T, float, W)      \
  MTO_KERNEL_INSTANCE("qlinear_grouped_gemm_dense_" wname "_" tname "_of16", qlinear_grouped_gemm_dense, T, half, W) \
  MTO_KERNEL_INSTANCE("qlinear_grouped_gemm_dense_" wname "_" tname "_obf16", qlinear_grouped_gemm_dense, T, bfloat, W)
#define MTO_GROUPED_DENSE(W, wname)              \
  MTO_GROUPED_DENSE_OUT(W, wname, float, "f32")  \
  MTO_GROUPED_DENSE_OUT(W, wname, half, "f16")   \
  MTO_GROUPED_DENSE_OUT(W, wname, bfloat, "bf16")

MTO_GROUPED_DENSE(float, "f32")
MTO_GROUPED_DENSE(half, "f16")
MTO_GROUPED_DENSE(bfloat, "bf16")
