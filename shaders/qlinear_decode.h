// The decode (GEMV-like) dot products of the qlinear family: M <= QLINEAR_DECODE_MAX_M rows of x
// against QLINEAR_DECODE_ROWS_PER_SIMDGROUP rows of a quantized w, one SIMD-group, each lane a
// contiguous run of codes per step (qlinear.metal's qlinear_decode explains the shape). Shared
// by qlinear_decode and groupedLinear's qlinear_grouped_decode (qlinear_grouped.metal), which
// pass each expert's planes, so both decode and multiply the same way.
#ifndef MTO_SHADERS_QLINEAR_DECODE_H
#define MTO_SHADERS_QLINEAR_DECODE_H

#include "mx_dequant.h"
#include "qlinear_params.h"

// The loop the kernel cost report measures (scripts/report-kernels.mjs; kernel_abi.h): tag 1, the
// weight elements and the device bytes (one row of x) one lane handles per step.
#define QLINEAR_DECODE_COST(T, FMT, RUN)                                                           \
  MTO_COST_LOOP(1, QLINEAR_DECODE_ROWS_PER_SIMDGROUP * (RUN),                                      \
                (RUN) * int(sizeof(T)) +                                                           \
                    QLINEAR_DECODE_ROWS_PER_SIMDGROUP *                                            \
                        ((RUN) * mto_format_bits(FMT) / 8 +                                        \
                         int(sizeof(typename mto_scale_storage<FMT>::type)) * (mto_format_is_affine(FMT) ? 2 : 1)))

#if defined(__METAL_VERSION__)
// acc[m][r] += this lane's share of dot(x[m, :], w[wrow[r], :]) over K (a multiple of 32); the
// caller sums the lanes (simd_sum) and stores. x rows are K apart; codes, scales and biases are
// the planes of one [N, K] matrix.
template <typename T, int FMT>
inline void qlinear_decode_accumulate(
    device const T* x, device const uchar* codes, device const typename mto_scale_storage<FMT>::type* scales,
    device const half* biases, uint M, uint K, uint group_size, thread const uint* wrow, ushort lane,
    thread float (&acc)[QLINEAR_DECODE_MAX_M][QLINEAR_DECODE_ROWS_PER_SIMDGROUP]) {
  // Codes per lane per step: 8 (8, 6 or 4 bytes) or, for 2-bit formats, 16 (4 bytes). Either
  // divides 32, so a run never crosses a block and K (a multiple of 32) ends on a run boundary.
  constexpr int RUN = mto_format_bits(FMT) == 2 ? 16 : 8;
  constexpr int ROWS = QLINEAR_DECODE_ROWS_PER_SIMDGROUP;
  for (uint k = uint(lane) * RUN; k < K; k += 32 * RUN) {
    QLINEAR_DECODE_COST(T, FMT, RUN);
    float w[ROWS][RUN];
    for (int r = 0; r < ROWS; ++r) mto_dequantize_run<FMT, RUN>(codes, scales, biases, wrow[r], k, K, group_size, w[r]);
    for (uint m = 0; m < M; ++m) {
      const device T* xm = x + ulong(m) * K + k;
      float xv[RUN];
      for (int i = 0; i < RUN; ++i) xv[i] = float(xm[i]);
      for (int r = 0; r < ROWS; ++r) {
        float s = 0.0f;
        for (int i = 0; i < RUN; ++i) s += xv[i] * w[r][i];
        acc[m][r] += s;
      }
    }
  }
}
#endif  // __METAL_VERSION__

#endif  // MTO_SHADERS_QLINEAR_DECODE_H
