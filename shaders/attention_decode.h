// The decode kernel of shaders/attention.metal (attention_decode: Lq <= ATTN_DECODE_MAX_LQ, token
// generation; the kernel entry, which owns the threadgroup memory, is there, its work here),
// bound by memory bandwidth. A threadgroup owns one kv head, up to ATTN_DECODE_ROWS query rows of
// its GQA group (a chunk) and one split of the keys (grid z; the plan sizes the split by the GPU's
// cores, DeviceProfile). Each K/V element is read from device memory once per chunk, for every
// query head that shares it. The four SIMD-groups take keys round robin; lane l holds features
// l E .. l E + E - 1 (E = D / 32; every 32nd for D = 80) of every row (q, the output accumulator)
// and of the current key and value, so a score is one simd_sum, and the online softmax runs per key, uniform across the SIMD-group (the
// shape of MLX's sdpa_vector). The SIMD-groups' (m, l, O) are merged through threadgroup memory at
// the end; with more than one split each split stores its (m, l, O) for attention_merge.
//
// What keeps the key loop short (MLX's sdpa_vector and our qlinear_decode.h):
//   - the rows are a template parameter (1, 2, 4, 8: the smallest that holds the chunk's rows,
//     picked at run time, uniform), so a chunk of one row carries no code or registers for eight
//     and every accumulator index is a compile-time constant;
//   - whether a mask is read is a template parameter too, so the loop without one has no mask code;
//     the causal limit of each row is computed once, not per key;
//   - a lane's features of a key or value come in one wide load (2 or 4 elements, two of 4 for
//     D = 256; element by element for D = 96 and 80);
//   - no per-key test for the NaN/Inf rule's hidden keys (score -inf): the running max starts at
//     the lowest finite float, and a SIMD-group that ends with a non-finite accumulator reruns its
//     keys skipping them (attn_decode_keys), as the cpu backend's pv_tile redoes such a row;
//   - mxfp8 codes decode through a table of the 256 element values in threadgroup memory, filled
//     once per threadgroup by mx_formats.h's decoder (so the values are the cpu backend's bit for
//     bit), and a lane's features share one E8M0 block scale (E = 2, 4, 8 divide 32).
// NaN: attention.metal's header (the decode kernels let NaN flow through float arithmetic).
#ifndef MTO_SHADERS_ATTENTION_DECODE_H
#define MTO_SHADERS_ATTENTION_DECODE_H

#include "attention_common.h"

#if defined(__METAL_VERSION__)

// The key loop the kernel cost report measures (kernel_abi.h): tag = 64 * masked + 16 * KV + rows;
// per key a lane reads E elements of K and of V (and for mxfp8 one scale byte for each).
#define ATTN_DECODE_COST(T, KV, R, E, MASKED) \
  MTO_COST_LOOP(64 * int(MASKED) + 16 * (KV) + (R), 2 * (E), 2 * (E) * (int(sizeof(typename attn_kv_storage<T, KV>::type)) + ((KV) == ATTN_KV_DENSE ? 0 : 1)))

// The feature lane `lane` holds at step e: E consecutive features per lane when D is a multiple
// of 32 (so a lane reads its part of a key or value in one wide load, as MLX's sdpa_vector
// does), else (D = 80) every 32nd, with the last step partly past D.
template <int D>
inline uint attn_decode_feature(ushort lane, int e) {
  constexpr int E = (D + 31) / 32;
  return D % 32 == 0 ? uint(lane) * uint(E) + uint(e) : uint(lane) + 32u * uint(e);
}

// E consecutive elements from p as O (float values, or uint codes): one load of 2 or 4 elements (two for 8), element by
// element otherwise (3: D = 96). p is aligned to E elements (row * D + lane * E). `out` is an array reference, not
// a pointer, so that the harness's bounds check sees an index past it.
template <typename S, int E, typename O>
struct attn_decode_run {
  static void at(device const S* p, thread O (&out)[E]) {
    for (int e = 0; e < E; ++e) out[e] = O(p[e]);
  }
};
template <typename S, typename O>
struct attn_decode_run<S, 2, O> {
  static void at(device const S* p, thread O (&out)[2]) {
    const vec<S, 2> w = *(device const vec<S, 2>*)p;
    out[0] = O(w.x);
    out[1] = O(w.y);
  }
};
template <typename S, typename O>
struct attn_decode_run<S, 4, O> {
  static void at(device const S* p, thread O (&out)[4]) {
    const vec<S, 4> w = *(device const vec<S, 4>*)p;
    out[0] = O(w.x);
    out[1] = O(w.y);
    out[2] = O(w.z);
    out[3] = O(w.w);
  }
};
template <typename S, typename O>
struct attn_decode_run<S, 8, O> {
  static void at(device const S* p, thread O (&out)[8]) {
    const vec<S, 4> w0 = *(device const vec<S, 4>*)p;
    const vec<S, 4> w1 = *(device const vec<S, 4>*)(p + 4);
    out[0] = O(w0.x);
    out[1] = O(w0.y);
    out[2] = O(w0.z);
    out[3] = O(w0.w);
    out[4] = O(w1.x);
    out[5] = O(w1.y);
    out[6] = O(w1.z);
    out[7] = O(w1.w);
  }
};

// This lane's E features of K/V row `row` as float: dense, or mxfp8 codes through the table times
// their block's E8M0 scale (D % 32 == 0 for mxfp8: plan_attention refuses other head dims; for
// E = 2, 4, 8 a lane's features share one block, read once). A struct per storage, as MSL 3.1
// (C++14) has no if constexpr.
template <int KV, int D>
struct attn_decode_kv {
  static void at(device const uchar* src, device const uchar* scales, ulong row, ushort lane,
                 threadgroup const float* table, thread float (&out)[D / 32]) {
    constexpr int E = D / 32;
    uint code[E];
    attn_decode_run<uchar, E, uint>::at(src + row * uint(D) + uint(lane) * uint(E), code);
    for (int e = 0; e < E; ++e) {
      const uint d = uint(lane) * uint(E) + uint(e);
      const float s = mto_decode_e8m0(uint(scales[row * uint(D / 32) + d / 32u]));
      out[e] = table[code[e]] * s;
    }
  }
};
template <int D>
struct attn_decode_kv<ATTN_KV_DENSE, D> {
  template <typename T>
  static void at(device const T* src, device const uchar*, ulong row, ushort lane, threadgroup const float*,
                 thread float (&out)[(D + 31) / 32]) {
    constexpr int E = (D + 31) / 32;
    if (D % 32 == 0) {
      attn_decode_run<T, E, float>::at(src + row * uint(D) + uint(lane) * uint(E), out);
    } else {
      for (int e = 0; e < E; ++e) {
        const uint d = attn_decode_feature<D>(lane, e);
        out[e] = d < uint(D) ? float(src[row * uint(D) + d]) : 0.0f;
      }
    }
  }
};

// One SIMD-group's pass over its keys (every NSG-th from jfirst), R rows' (m, l, O) from scratch.
// Hidden keys (score -inf: the NaN/Inf rule, native/core/ops.h) are handled as the cpu backend's
// pv_tile handles them: the fast pass (HIDDEN_SKIPPED false, the loop the cost report measures)
// starts m at the lowest finite float, as sdpa_vector does, so a -inf score needs no test: fmax
// keeps m, its factor is 1 and its weight 0. Its V then meets that 0, which is 0 for a finite V
// and NaN for a non-finite one; so where the pass ends with a non-finite accumulator, the
// caller reruns it with HIDDEN_SKIPPED true, which starts m at -inf and skips those keys (and so
// never reads their V).
template <typename T, int KV, int D, int R, bool MASKED, bool HIDDEN_SKIPPED>
inline void attn_decode_keys(
    device const typename attn_kv_storage<T, KV>::type* k, device const typename attn_kv_storage<T, KV>::type* v,
    device const uchar* k_scales, device const uchar* v_scales, device const uchar* mask,
    constant AttentionKernelParams& p, uint b, thread const uint (&head)[R], thread const int (&qi)[R],
    thread const int (&jlast)[R], int jfirst, int jend, ulong kv_base, ushort lane, int nr,
    threadgroup const float* table, thread const float (&qr)[R][(D + 31) / 32], thread float (&acc)[R][(D + 31) / 32],
    thread float (&m)[R], thread float (&l)[R]) {
  constexpr int NSG = ATTN_DECODE_SIMDGROUPS;
  constexpr int E = (D + 31) / 32;
  const float ninf = attn_neg_inf();
  for (int r = 0; r < R; ++r) {
    m[r] = HIDDEN_SKIPPED ? ninf : attn_lowest();
    l[r] = 0.0f;
    for (int e = 0; e < E; ++e) acc[r][e] = 0.0f;
  }
  for (int j = jfirst; j < jend; j += NSG) {
    if (!HIDDEN_SKIPPED) {
      ATTN_DECODE_COST(T, KV, R, E, MASKED);
    }
    float kr[E], vr[E];
    attn_decode_kv<KV, D>::at(k, k_scales, kv_base + uint(j), lane, table, kr);
    if (R != 1) attn_decode_kv<KV, D>::at(v, v_scales, kv_base + uint(j), lane, table, vr);
    for (int r = 0; r < R; ++r) {
      if (r >= nr) break;  // uniform: every lane of the threadgroup agrees
      float partial = qr[r][0] * kr[0];
      for (int e = 1; e < E; ++e) partial += qr[r][e] * kr[e];
      float s = simd_sum(partial);
      if (R > 1 && j > jlast[r]) continue;  // causal
      if (MASKED) {
        float bias;
        if (!attn_mask_visible(p, mask, b, head[r], qi[r], j, bias)) continue;
        s += bias;
      }
      if (HIDDEN_SKIPPED && s == ninf) continue;
      // sdpa_vector's step: fmax and two exp2. The first seen key's factor (0, from m = -inf or
      // the lowest float) multiplies l = 0 and O = 0, so whatever it is, they restart there; a
      // NaN score, which fmax drops, or +inf makes pr NaN, and so l and every accumulator NaN for
      // good (m itself is never NaN: the merges below read a NaN row from l).
      const float m_new = fmax(m[r], s);
      const float factor = exp2(m[r] - m_new);
      const float pr = exp2(s - m_new);
      // One row reads V here, as sdpa_vector reads it in its update: the values are not held
      // across the simd_sum and the exp2. Rows share it: read before them.
      if (R == 1) attn_decode_kv<KV, D>::at(v, v_scales, kv_base + uint(j), lane, table, vr);
      l[r] = l[r] * factor + pr;
      for (int e = 0; e < E; ++e) acc[r][e] = acc[r][e] * factor + pr * vr[e];
      m[r] = m_new;
    }
  }
}

// Everything after the table: R rows (R >= nr, the chunk's rows), the mask read when MASKED.
template <typename T, typename Out, int KV, int D, int R, bool MASKED>
inline void attn_decode_rows(
    device const T* q, device const typename attn_kv_storage<T, KV>::type* k,
    device const typename attn_kv_storage<T, KV>::type* v, device const uchar* k_scales,
    device const uchar* v_scales, device const uchar* mask, device Out* o, device float* part_o,
    device float* part_ml, constant AttentionKernelParams& p, device const float* sinks, uint3 group, ushort tid,
    ushort sg, ushort lane, int nr, threadgroup float* tg_m, threadgroup float* tg_l, threadgroup float* tg_o,
    threadgroup const float* table) {
  constexpr int NSG = ATTN_DECODE_SIMDGROUPS;
  constexpr int E = (D + 31) / 32;  // features per lane
  const uint b = group.x / uint(p.Hkv), kvh = group.x % uint(p.Hkv);
  const uint chunk = group.y, split = group.z;
  const int r0 = int(chunk) * ATTN_DECODE_ROWS;
  const int j0 = int(split) * p.split_len;
  const int j1 = min(p.Lk, j0 + p.split_len);
  const float ninf = attn_neg_inf();

  float qr[R][E], acc[R][E], m[R], l[R];
  uint head[R];
  int qi[R], jlast[R];
  for (int r = 0; r < R; ++r) {
    const int row = r0 + min(r, nr - 1);  // rows past nr repeat the last one and are never stored
    head[r] = kvh * uint(p.G) + uint(row / p.Lq);
    qi[r] = row % p.Lq;
    jlast[r] = p.causal ? qi[r] + p.Lk - p.Lq : p.Lk - 1;  // the last key the row may see
    const device T* qrow = q + (ulong(b * uint(p.Hq) + head[r]) * uint(p.Lq) + uint(qi[r])) * uint(D);
    for (int e = 0; e < E; ++e) {
      const uint d = attn_decode_feature<D>(lane, e);
      qr[r][e] = (D % 32 == 0 || d < uint(D)) ? float(qrow[d]) * p.scale_log2 : 0.0f;
    }
  }

  // Keys past every row's causal limit are seen by none: the loop stops there, and with one row
  // needs no per-key limit test.
  int jseen = jlast[0];
  for (int r = 1; r < R; ++r) jseen = max(jseen, jlast[r]);
  const int jend = min(j1, jseen + 1);
  const ulong kv_base = ulong(b * uint(p.Hkv) + kvh) * uint(p.Lk);
  attn_decode_keys<T, KV, D, R, MASKED, false>(k, v, k_scales, v_scales, mask, p, b, head, qi, jlast, j0 + int(sg),
                                                jend, kv_base, lane, nr, table, qr, acc, m, l);
  bool nonfinite = false;
  for (int r = 0; r < R; ++r)
    for (int e = 0; e < E; ++e) nonfinite = nonfinite || !isfinite(acc[r][e]);
  if (simd_any(nonfinite)) {  // a hidden key's non-finite V, or the row's own NaN/inf: rerun without hidden keys
    attn_decode_keys<T, KV, D, R, MASKED, true>(k, v, k_scales, v_scales, mask, p, b, head, qi, jlast, j0 + int(sg),
                                                 jend, kv_base, lane, nr, table, qr, acc, m, l);
  }
  // A row that saw no key: the fast pass leaves m at the lowest float, the merges expect -inf.
  for (int r = 0; r < R; ++r) m[r] = l[r] == 0.0f ? ninf : m[r];

  // Merge the SIMD-groups' (m, l, O) row by row (tg_m, tg_l: [NSG][ATTN_DECODE_ROWS]; tg_o: [NSG][D]).
  if (lane == 0) {
    for (int r = 0; r < R; ++r) {
      tg_m[int(sg) * ATTN_DECODE_ROWS + r] = m[r];
      tg_l[int(sg) * ATTN_DECODE_ROWS + r] = l[r];
    }
  }
  for (int r = 0; r < R; ++r) {
    if (r >= nr) break;
    for (int e = 0; e < E; ++e) {
      const uint d = attn_decode_feature<D>(lane, e);
      if (D % 32 == 0 || d < uint(D)) tg_o[uint(sg) * uint(D) + d] = acc[r][e];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float M = ninf;
    for (int s = 0; s < NSG; ++s) M = attn_max_nan(M, tg_m[s * ATTN_DECODE_ROWS + r]);
    float f[NSG];
    float L = 0.0f;
    for (int s = 0; s < NSG; ++s) {
      const float ms = tg_m[s * ATTN_DECODE_ROWS + r];
      f[s] = ms == ninf ? 0.0f : exp2(ms - M);
      L += tg_l[s * ATTN_DECODE_ROWS + r] * f[s];
    }
    const ulong prow = ((ulong(group.x) * uint(p.chunks) + chunk) * uint(p.splits) + split) * ATTN_DECODE_ROWS + uint(r);
    const ulong orow = (ulong(b * uint(p.Hq) + head[r]) * uint(p.Lq) + uint(qi[r])) * uint(D);
    // One pass: o = O / L (with the sink), L = 0: saw no key, zeros; NaN stays. Split: the merge.
    const float inv = p.splits == 1 ? attn_out_scale(p, sinks, head[r], M, L) : 0.0f;
    for (uint d = tid; d < uint(D); d += 32u * NSG) {
      float O = 0.0f;
      for (int s = 0; s < NSG; ++s) O += tg_o[uint(s) * uint(D) + d] * f[s];
      if (p.splits == 1) o[orow + d] = Out(O * inv);
      else part_o[prow * uint(D) + d] = O;
    }
    if (p.splits > 1 && tid == 0) {
      part_ml[prow * 2] = isnan(L) ? L : M;  // a NaN row: attention_merge must not skip it as keyless
      part_ml[prow * 2 + 1] = L;
    }
    // tg_o is rewritten for the next row.
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}

// attn_decode_rows with R = the smallest of 1, 2, 4, 8 that holds the chunk's nr rows (uniform).
template <typename T, typename Out, int KV, int D, bool MASKED>
inline void attn_decode_chunk(
    device const T* q, device const typename attn_kv_storage<T, KV>::type* k,
    device const typename attn_kv_storage<T, KV>::type* v, device const uchar* k_scales,
    device const uchar* v_scales, device const uchar* mask, device Out* o, device float* part_o,
    device float* part_ml, constant AttentionKernelParams& p, device const float* sinks, uint3 group, ushort tid,
    ushort sg, ushort lane, int nr, threadgroup float* tg_m, threadgroup float* tg_l, threadgroup float* tg_o,
    threadgroup const float* table) {
  static_assert(ATTN_DECODE_ROWS == 8, "row counts 1, 2, 4, 8");
  if (nr == 1) {
    attn_decode_rows<T, Out, KV, D, 1, MASKED>(q, k, v, k_scales, v_scales, mask, o, part_o, part_ml, p, sinks, group,
                                               tid, sg, lane, nr, tg_m, tg_l, tg_o, table);
  } else if (nr <= 2) {
    attn_decode_rows<T, Out, KV, D, 2, MASKED>(q, k, v, k_scales, v_scales, mask, o, part_o, part_ml, p, sinks, group,
                                               tid, sg, lane, nr, tg_m, tg_l, tg_o, table);
  } else if (nr <= 4) {
    attn_decode_rows<T, Out, KV, D, 4, MASKED>(q, k, v, k_scales, v_scales, mask, o, part_o, part_ml, p, sinks, group,
                                               tid, sg, lane, nr, tg_m, tg_l, tg_o, table);
  } else {
    attn_decode_rows<T, Out, KV, D, 8, MASKED>(q, k, v, k_scales, v_scales, mask, o, part_o, part_ml, p, sinks, group,
                                               tid, sg, lane, nr, tg_m, tg_l, tg_o, table);
  }
}

#endif  // __METAL_VERSION__

#endif  // MTO_SHADERS_ATTENTION_DECODE_H
