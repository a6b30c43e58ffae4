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
        if (g > 0 && used < S && negative < 0 && sum + g <= long(p.T)) {
          slots[4 * used] = int(base + i);
          slots[4 * used + 1] = int(sum);
          slots[4 * used + 2] = g;
          slots[4 * used + 3] = 0;
          ++used;
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
  constexpr int ROWS = QLINEAR_DECODE_ROWS_PER_SIMDGROUP;
  const uint rows = uint(slots[4 * group.y + 2]);
  if (rows == 0) return;  // an unused slot (the whole threadgroup leaves; no barrier follows)
  const uint e = uint(slots[4 * group.y]), first = uint(slots[4 * group.y + 1]);
  const uint N = uint(p.N), K = uint(p.K), group_size = uint(p.group_size);
  // Expert e's share of each plane: the planes are [E, N, ...] row-major.
  const uint blocks = mto_format_is_affine(FMT) ? K / group_size : K / 32u;
  const ulong matrix_codes = ulong(N) * (ulong(K) * ulong(mto_format_bits(FMT)) / 8ul);
  const ulong matrix_scales = ulong(N) * ulong(blocks);
  device const uchar* we = codes + ulong(e) * matrix_codes;
  device const typename mto_scale_storage<FMT>::type* se = scales + ulong(e) * matrix_scales;
  device const half* be = biases + (mto_format_is_affine(FMT) ? ulong(e) * matrix_scales : 0ul);

  const uint n0 = (group.x * QLINEAR_DECODE_SIMDGROUPS + simd) * ROWS;
  uint wrow[ROWS];
  for (int r = 0; r < ROWS; ++r) wrow[r] = min(n0 + uint(r), N - 1);  // rows past N: never stored
  for (uint m0 = 0; m0 < rows; m0 += QLINEAR_DECODE_MAX_M) {
    const uint M = min(uint(QLINEAR_DECODE_MAX_M), rows - m0);
    const ulong row0 = ulong(first) + m0;
    float acc[QLINEAR_DECODE_MAX_M][ROWS];
    for (int m = 0; m < QLINEAR_DECODE_MAX_M; ++m)
      for (int r = 0; r < ROWS; ++r) acc[m][r] = 0.0f;
    qlinear_decode_accumulate<T, FMT>(x + row0 * K, we, se, be, M, K, group_size, wrow, lane, acc);
    for (uint m = 0; m < M; ++m) {
      const float4 sum = simd_sum(float4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]));
      if (lane == 0) {
        for (int r = 0; r < ROWS; ++r) {
          const uint n = n0 + uint(r);
          if (n < N) y[(row0 + m) * N + n] = Out(sum[r]);
        }
      }
    }
  }
}

// One instance per format, x dtype and y dtype, named as qlinear's: qlinear_grouped_decode_<format>
// _<x dtype>, then "_of16" / "_obf16" for a float16 / bfloat16 y.
#define MTO_GROUPED_OUT(fmt, name, T, tname, Out, oname) \
  MTO_KERNEL_INSTANCE("qlinear_grouped_decode_" name "_" tname oname, qlinear_grouped_decode, T, Out, fmt)
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
