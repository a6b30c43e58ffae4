// The decode (GEMV-like) part of the qlinear family: M <= QLINEAR_DECODE_MAX_M rows of x against
// QLINEAR_DECODE_ROWS_PER_SIMDGROUP rows of a quantized w per SIMD-group, reduced with simd_sum
// and stored. Shared by qlinear_decode (qlinear.metal) and groupedLinear's qlinear_grouped_decode
// (qlinear_grouped.metal), which pass each expert's planes, so both decode and multiply alike.
//
// The shape of MLX's qmv_fast, written for our formats (docs/design/STYLE.md):
//   - a lane takes QLINEAR_DECODE_RUN (16) consecutive codes of each weight row per step, read
//     with one wide load per row (4, 8, 12 or 16 bytes), so a step of the SIMD-group covers 512
//     values of a row; 16 divides 32 and every affine group, so a run never leaves its block;
//   - MX elements decode through a table of their 2^bits values in threadgroup memory (ggml's
//     kvalues idea), filled once per threadgroup by mx_formats.h's decoder, so the values are the
//     cpu backend's bit for bit; affine codes are small integers and convert directly;
//   - the block scale is applied once per run, not per element: for MX the run's dot product of
//     x and the element values times 2^(scale - 127) (a power of two: the same products as scaling
//     each element, up to float32 over- and underflow), for affine s * sum(x q) + b * sum(x)
//     (MLX's form of sum(x (s q + b)));
//   - the number of x rows is a template parameter (1, 2, 4 or 8, chosen at run time from M; rows
//     past M repeat row M - 1 and are never stored), so every accumulator index is a compile-time
//     constant and nothing is indexed at run time. For one row x stays in registers across the
//     four weight rows (MLX's order); for more rows each decoded weight run is reused for every
//     row of x, so the weights are still read once.
#ifndef MTO_SHADERS_QLINEAR_DECODE_H
#define MTO_SHADERS_QLINEAR_DECODE_H

#include "mx_dequant.h"
#include "qlinear_params.h"

// Codes a lane decodes per weight row and step.
#define QLINEAR_DECODE_RUN 16
// Entries of a format's decode table in threadgroup memory: one per code for MX formats, none
// needed for affine ones (one slot keeps the declaration legal).
#define QLINEAR_DECODE_TABLE(FMT) (mto_format_is_affine(FMT) ? 1 : 1 << mto_format_bits(FMT))
// The loop the kernel cost report measures (scripts/report-kernels.mjs; kernel_abi.h): tag = rows
// of x, weight elements and bytes of device memory one lane handles per iteration.
#define QLINEAR_DECODE_COST(T, FMT, MR)                                                           \
  MTO_COST_LOOP(MR, QLINEAR_DECODE_ROWS_PER_SIMDGROUP * QLINEAR_DECODE_RUN,                       \
                MR * QLINEAR_DECODE_RUN * int(sizeof(T)) +                                        \
                    QLINEAR_DECODE_ROWS_PER_SIMDGROUP *                                           \
                        (QLINEAR_DECODE_RUN * mto_format_bits(FMT) / 8 +                          \
                         int(sizeof(typename mto_scale_storage<FMT>::type)) * (mto_format_is_affine(FMT) ? 2 : 1)))

#if defined(__METAL_VERSION__)
// Fills the decode table of an MX format: table[c] = the element value of code c (scale not
// applied). `tid` and `threads` span the threadgroup; the caller puts a threadgroup barrier
// between this and the first qlinear_decode_rows.
template <int FMT>
inline void qlinear_decode_fill_table(threadgroup float* table, uint tid, uint threads) {
  if (mto_format_is_affine(FMT)) return;
  for (uint c = tid; c < uint(QLINEAR_DECODE_TABLE(FMT)); c += threads)
    table[c] = mto_decode_element(mto_format_element(FMT), c);
}

// The RUN codes of one lane's run, as whole 32-bit words (code i at bits [i * bits, (i + 1) *
// bits) of the little-endian word sequence: docs/design/API.md's packing, 6-bit codes crossing a
// word included). `p` is 4-byte aligned; for 4 and 8 bits it is 8- and 16-byte aligned (the run
// starts at a multiple of 16 codes in a row of a multiple of 32 codes), so one vector load does.
template <int BITS>
inline void qlinear_decode_load_words(device const uchar* p, thread uint (&w)[4]) {
  if (BITS == 8) {
    const uint4 v = *(device const uint4*)p;
    w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w;
  } else if (BITS == 6) {
    const device uint* q = (device const uint*)p;
    w[0] = q[0]; w[1] = q[1]; w[2] = q[2]; w[3] = 0u;
  } else if (BITS == 4) {
    const uint2 v = *(device const uint2*)p;
    w[0] = v.x; w[1] = v.y; w[2] = 0u; w[3] = 0u;
  } else {
    w[0] = *(device const uint*)p; w[1] = 0u; w[2] = 0u; w[3] = 0u;
  }
}

// Code i of a run (i a compile-time constant once the loops are unrolled: shifts and masks only).
template <int BITS>
inline uint qlinear_decode_code(thread const uint (&w)[4], int i) {
  const int bit = i * BITS, word = bit / 32, shift = bit % 32;
  uint c = w[word] >> shift;
  if (shift + BITS > 32) c |= w[word + 1] << (32 - shift);  // a 6-bit code across two words
  return c & ((1u << BITS) - 1u);
}

// The value of code c before its block's scale: the MX table's entry, or the affine integer.
template <int FMT>
inline float qlinear_decode_value(uint c, threadgroup const float* table) {
  return mto_format_is_affine(FMT) ? float(c) : table[c];
}

// y[m, n0 + r] = dot(x[m, :], w[n0 + r, :]) (+ bias[n0 + r]) for m < M <= MR and r < ROWS with
// n0 + r < N: one SIMD-group's rows, lane `lane` summing its runs, simd_sum adding the lanes. x rows
// are K apart and y rows N apart; codes, scales and biases are the planes of one [N, K] matrix.
template <typename T, typename Out, int FMT, int MR>
inline void qlinear_decode_rows(
    device const T* x, device const uchar* codes, device const typename mto_scale_storage<FMT>::type* scales,
    device const half* biases, bool has_bias, device const float* bias, device Out* y, uint M, uint N, uint K,
    uint group_size, uint n0, ushort lane, threadgroup const float* table) {
  typedef typename mto_scale_storage<FMT>::type S;
  constexpr int ROWS = QLINEAR_DECODE_ROWS_PER_SIMDGROUP;
  constexpr int RUN = QLINEAR_DECODE_RUN;
  constexpr int BITS = mto_format_bits(FMT);
  constexpr bool AFFINE = mto_format_is_affine(FMT);
  static_assert(ROWS == 4, "rows are reduced as one float4");
  // Runs per block: an MX block is 32 codes; affine groups are 32, 64 or 128 (powers of two).
  const uint block_shift = AFFINE ? 31u - metal::clz(group_size) : 5u;
  const ulong row_bytes = ulong(K) * ulong(BITS) / 8ul;
  const uint blocks = K >> block_shift;

  // Each weight row's planes; rows past N (in the last threadgroup) re-read row N - 1 and are
  // never stored.
  device const uchar* wrow[ROWS];
  device const S* srow[ROWS];
  device const half* brow[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const uint n = metal::min(n0 + uint(r), N - 1);
    wrow[r] = codes + ulong(n) * row_bytes;
    srow[r] = scales + ulong(n) * blocks;
    brow[r] = biases + (AFFINE ? ulong(n) * blocks : 0ul);  // MX: never read
  }
  device const T* xrow[MR];
#pragma unroll
  for (int m = 0; m < MR; ++m) xrow[m] = x + ulong(metal::min(uint(m), M - 1)) * K;

  float acc[MR][ROWS];
#pragma unroll
  for (int m = 0; m < MR; ++m)
#pragma unroll
    for (int r = 0; r < ROWS; ++r) acc[m][r] = 0.0f;

  for (uint k = uint(lane) * RUN; k < K; k += 32u * RUN) {
    QLINEAR_DECODE_COST(T, FMT, MR);
    const uint byte = (k / 8u) * uint(BITS);  // k is a multiple of 16: exact, and no k * BITS overflow
    const uint block = k >> block_shift;
    if (MR == 1) {
      // x once, kept across the four weight rows.
      float xv[RUN];
      float xsum = 0.0f;
#pragma unroll
      for (int i = 0; i < RUN; ++i) {
        xv[i] = float(xrow[0][k + uint(i)]);
        if (AFFINE) xsum += xv[i];
      }
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        uint w[4];
        qlinear_decode_load_words<BITS>(wrow[r] + byte, w);
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < RUN; ++i) dot += xv[i] * qlinear_decode_value<FMT>(qlinear_decode_code<BITS>(w, i), table);
        if (AFFINE) acc[0][r] += float(srow[r][block]) * dot + float(brow[r][block]) * xsum;
        else acc[0][r] += dot * mto_decode_e8m0(uint(srow[r][block]));
      }
    } else {
      // Each weight run decoded once and used for every row of x (x re-read from the cache).
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        uint w[4];
        qlinear_decode_load_words<BITS>(wrow[r] + byte, w);
        float wv[RUN];
#pragma unroll
        for (int i = 0; i < RUN; ++i) wv[i] = qlinear_decode_value<FMT>(qlinear_decode_code<BITS>(w, i), table);
        const float s = AFFINE ? float(srow[r][block]) : mto_decode_e8m0(uint(srow[r][block]));
        const float b = AFFINE ? float(brow[r][block]) : 0.0f;
#pragma unroll
        for (int m = 0; m < MR; ++m) {
          float dot = 0.0f, xsum = 0.0f;
#pragma unroll
          for (int i = 0; i < RUN; ++i) {
            const float xi = float(xrow[m][k + uint(i)]);
            dot += xi * wv[i];
            if (AFFINE) xsum += xi;
          }
          acc[m][r] += AFFINE ? s * dot + b * xsum : dot * s;
        }
      }
    }
  }

#pragma unroll
  for (int m = 0; m < MR; ++m) {
    const float4 sum = metal::simd_sum(float4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]));
    if (lane == 0 && uint(m) < M) {
      for (int r = 0; r < ROWS; ++r) {
        const uint n = n0 + uint(r);
        if (n < N) y[ulong(m) * N + n] = Out(sum[r] + (has_bias ? bias[n] : 0.0f));
      }
    }
  }
}

// qlinear_decode_rows with MR = the smallest of 1, 2, 4, 8 that holds M (M uniform across the
// threadgroup, so every lane takes the same branch). The table must be filled (and a barrier
// passed) first.
template <typename T, typename Out, int FMT>
inline void qlinear_decode_dot(
    device const T* x, device const uchar* codes, device const typename mto_scale_storage<FMT>::type* scales,
    device const half* biases, bool has_bias, device const float* bias, device Out* y, uint M, uint N, uint K,
    uint group_size, uint n0, ushort lane, threadgroup const float* table) {
  static_assert(QLINEAR_DECODE_MAX_M == 8, "row counts 1, 2, 4, 8");
  if (M == 1) {
    qlinear_decode_rows<T, Out, FMT, 1>(x, codes, scales, biases, has_bias, bias, y, M, N, K, group_size, n0, lane, table);
  } else if (M <= 2) {
    qlinear_decode_rows<T, Out, FMT, 2>(x, codes, scales, biases, has_bias, bias, y, M, N, K, group_size, n0, lane, table);
  } else if (M <= 4) {
    qlinear_decode_rows<T, Out, FMT, 4>(x, codes, scales, biases, has_bias, bias, y, M, N, K, group_size, n0, lane, table);
  } else {
    qlinear_decode_rows<T, Out, FMT, 8>(x, codes, scales, biases, has_bias, bias, y, M, N, K, group_size, n0, lane, table);
  }
}
#endif  // __METAL_VERSION__

#endif  // MTO_SHADERS_QLINEAR_DECODE_H
