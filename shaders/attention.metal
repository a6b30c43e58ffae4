// FlashAttention for the simdgroup tier (Apple7+): o = softmax(q k^T * scale + mask) v, scores
// never written to device memory, float32 softmax and accumulation, o of type Out (q's dtype, as
// attention defines it) rounded once per element as the last pass stores it; the split decode's
// partial results stay float32. Semantics, slots and tile sizes: attention_params.h; which kernel
// runs with which grid: native/core/dispatch_plan.cc (plan_attention).
//
//   attention_decode (Lq <= 8, token generation; attention_decode.h) is bound by memory
//   bandwidth: a threadgroup owns one kv head, up to 8 query rows of its GQA group and one split
//   of the keys, its SIMD-groups take keys round robin (the shape of MLX's sdpa_vector). With more
//   than one split (the plan sizes it by the GPU's cores: DeviceProfile) each split writes its
//   (m, l, O) and attention_merge combines them, one threadgroup per query row (flash-decoding;
//   MLX's sdpa_vector_2pass).
//   attention_prefill (Lq > 8) is bound by arithmetic: a threadgroup owns 32 query rows of one
//   query head (16 at D = 256: attention_params.h), each SIMD-group an 8-row strip held as D/8
//   simdgroup_matrix 8x8 accumulators. Per
//   16-key tile: K staged in threadgroup memory, S = Q K^T with simdgroup matrices, the online
//   softmax on S in threadgroup memory (4 lanes per row, shuffles for the row max and sum), the
//   running output rescaled by diag(exp2(m_old - m_new)) as one more 8x8 product, V staged in the
//   same memory and O += P V. Key tiles past the causal diagonal of the block are never visited
//   (the structure of MLX's steel attention, without its register-layout tricks, which would
//   depend on the undocumented simdgroup_matrix element-to-lane mapping).
// K/V may be mxfp8 (E4M3 or E5M2, blocks of 32 along D): decoded in the kernel by mx_formats.h,
// the same decoder the cpu backend uses.
// Masked scores are -inf and exp2(-inf) = 0 is relied on (fully masked rows give zeros): the host
// must compile this library without fast math (MTLCompileOptions.mathMode = safe), as the
// harness does (-fno-fast-math); NaN follows the rule of check_attention (native/core/ops.h): the
// decode kernels let NaN flow through float arithmetic row by row, the prefill kernel keeps its
// 8x8 accumulators finite and writes NaN/inf at the end (see there).
#include <metal_stdlib>

#include "attention_common.h"
#include "attention_decode.h"

using namespace metal;

// ---- decode (attention_decode.h) and the split decode's merge --------------------------------
// The threadgroup memory of attention_decode.h's work: the SIMD-groups' (m, l, O) and, for mxfp8
// K/V, the decode table (filled here, before any key is read).
template <typename T, typename Out, int KV, int D>
[[kernel]] void attention_decode(
    device const T* q [[buffer(ATTN_BUFFER_Q)]],
    device const typename attn_kv_storage<T, KV>::type* k [[buffer(ATTN_BUFFER_K)]],
    device const typename attn_kv_storage<T, KV>::type* v [[buffer(ATTN_BUFFER_V)]],
    device const uchar* k_scales [[buffer(ATTN_BUFFER_K_SCALES)]],
    device const uchar* v_scales [[buffer(ATTN_BUFFER_V_SCALES)]],
    device const uchar* mask [[buffer(ATTN_BUFFER_MASK)]],
    device Out* o [[buffer(ATTN_BUFFER_O)]],
    device float* part_o [[buffer(ATTN_BUFFER_PARTIAL_O)]],
    device float* part_ml [[buffer(ATTN_BUFFER_PARTIAL_ML)]],
    constant AttentionKernelParams& p [[buffer(ATTN_BUFFER_PARAMS)]],
    device const float* sinks [[buffer(ATTN_BUFFER_SINKS)]],
    uint3 group [[threadgroup_position_in_grid]],
    ushort tid [[thread_index_in_threadgroup]],
    ushort sg [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]]) {
  constexpr int NSG = ATTN_DECODE_SIMDGROUPS;
  threadgroup float tg_m[NSG * ATTN_DECODE_ROWS];
  threadgroup float tg_l[NSG * ATTN_DECODE_ROWS];
  threadgroup float tg_o[NSG * D];
  threadgroup float table[KV == ATTN_KV_DENSE ? 1 : 256];  // the mxfp8 decode table
  if (KV != ATTN_KV_DENSE) {
    const int elem = KV == ATTN_KV_MXFP8_E4M3 ? MTO_ELEM_FP8_E4M3 : MTO_ELEM_FP8_E5M2;
    for (uint c = tid; c < 256u; c += 32u * NSG) table[c] = mto_decode_element(elem, c);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  const int nr = min(ATTN_DECODE_ROWS, p.rows - int(group.y) * ATTN_DECODE_ROWS);  // uniform
  if (p.mask_kind == ATTN_MASK_NONE) {
    attn_decode_chunk<T, Out, KV, D, false>(q, k, v, k_scales, v_scales, mask, o, part_o, part_ml, p, sinks, group,
                                            tid, sg, lane, nr, tg_m, tg_l, tg_o, table);
  } else {
    attn_decode_chunk<T, Out, KV, D, true>(q, k, v, k_scales, v_scales, mask, o, part_o, part_ml, p, sinks, group,
                                           tid, sg, lane, nr, tg_m, tg_l, tg_o, table);
  }
}

// Second pass of a split decode: o = sum_s O_s 2^(m_s - M) / sum_s l_s 2^(m_s - M), from the
// float32 partials, rounded to Out once. A threadgroup owns one query row (grid z: the row within
// its chunk), so the merge has as many threadgroups as the rows being decoded. Each split's factor
// 2^(m_s - M) is computed once into threadgroup memory rather than once per feature; a split that
// saw no key (m_s = -inf, its O and l are 0) gets -0 there and is skipped, while a factor that
// underflowed to +0 still multiplies its O (0 * NaN = NaN, as the cpu backend computes it).
template <typename Out>
[[kernel]] void attention_merge(
    device const float* part_o [[buffer(ATTN_BUFFER_PARTIAL_O)]],
    device const float* part_ml [[buffer(ATTN_BUFFER_PARTIAL_ML)]],
    device Out* o [[buffer(ATTN_BUFFER_O)]],
    constant AttentionKernelParams& p [[buffer(ATTN_BUFFER_PARAMS)]],
    device const float* sinks [[buffer(ATTN_BUFFER_SINKS)]],
    uint3 group [[threadgroup_position_in_grid]],
    ushort tid [[thread_index_in_threadgroup]]) {
  constexpr int ROWS = ATTN_DECODE_ROWS;
  threadgroup float tg_f[ATTN_MAX_SPLITS];
  const uint D = uint(p.D);
  const uint b = group.x / uint(p.Hkv), kvh = group.x % uint(p.Hkv);
  const uint chunk = group.y;
  const int r = int(group.z);
  const int row = int(chunk) * ROWS + r;
  if (row >= p.rows) return;  // the last chunk's missing rows (uniform over the threadgroup)
  const float ninf = attn_neg_inf();
  // Partial row of split s: (split 0's row 0 of this chunk) + s * ROWS + r.
  const ulong first = (ulong(group.x) * uint(p.chunks) + chunk) * uint(p.splits) * ROWS + uint(r);
  const uint head = kvh * uint(p.G) + uint(row / p.Lq);
  const uint i = uint(row % p.Lq);
  // Every thread finds M itself (the same loads, the same order): no barrier before the factors.
  float M = ninf;
  for (int s = 0; s < p.splits; ++s) M = attn_max_nan(M, part_ml[(first + uint(s) * ROWS) * 2]);
  for (int s = int(tid); s < p.splits; s += ATTN_MERGE_THREADS) {
    const float ms = part_ml[(first + uint(s) * ROWS) * 2];
    tg_f[s] = ms == ninf ? -0.0f : exp2(ms - M);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float L = 0.0f;
  for (int s = 0; s < p.splits; ++s)
    if (!attn_hidden_p(tg_f[s])) L += part_ml[(first + uint(s) * ROWS) * 2 + 1] * tg_f[s];
  const ulong orow = (ulong(b * uint(p.Hq) + head) * uint(p.Lq) + i) * D;
  const float inv = attn_out_scale(p, sinks, head, M, L);  // the sink, once per row
  for (uint d = tid; d < D; d += ATTN_MERGE_THREADS) {
    float O = 0.0f;
    for (int s = 0; s < p.splits; ++s)
      if (!attn_hidden_p(tg_f[s])) O += part_o[(first + uint(s) * ROWS) * D + d] * tg_f[s];
    o[orow + d] = Out(O * inv);
  }
}

// ---- prefill ------------------------------------------------------------------------------------
// The accumulators are rescaled by diag(factor) as an 8x8 product, in which a NaN or inf of one row
// would reach every row through 0 * NaN. So O stays finite: a row with a NaN or +inf score (m_run
// NaN or +inf) gets P = 0 from then on and is written as NaN; V is staged with NaN/inf replaced by
// 0, and for a tile that held one, each (row, column) records what the seen keys' non-finite
// values made of it (float arithmetic: p * NaN, 0 * inf = NaN; +inf; -inf; both infs = NaN). An
// inf whose weight only later rescales to 0 stays inf here (the cpu's O * 0 gives NaN there).
#define ATTN_V_NAN 1u
#define ATTN_V_POS_INF 2u
#define ATTN_V_NEG_INF 4u

inline float attn_v_nonfinite_value(uint bits) {
  if ((bits & ATTN_V_NAN) != 0u || bits == (ATTN_V_POS_INF | ATTN_V_NEG_INF)) return as_type<float>(0x7fc00000u);
  return bits == ATTN_V_POS_INF ? -attn_neg_inf() : attn_neg_inf();
}

template <typename T, typename Out, int KV, int D>
[[kernel]] void attention_prefill(
    device const T* q [[buffer(ATTN_BUFFER_Q)]],
    device const typename attn_kv_storage<T, KV>::type* k [[buffer(ATTN_BUFFER_K)]],
    device const typename attn_kv_storage<T, KV>::type* v [[buffer(ATTN_BUFFER_V)]],
    device const uchar* k_scales [[buffer(ATTN_BUFFER_K_SCALES)]],
    device const uchar* v_scales [[buffer(ATTN_BUFFER_V_SCALES)]],
    device const uchar* mask [[buffer(ATTN_BUFFER_MASK)]],
    device Out* o [[buffer(ATTN_BUFFER_O)]],
    constant AttentionKernelParams& p [[buffer(ATTN_BUFFER_PARAMS)]],
    device const float* sinks [[buffer(ATTN_BUFFER_SINKS)]],
    uint3 group [[threadgroup_position_in_grid]],
    ushort tid [[thread_index_in_threadgroup]],
    ushort sg [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]]) {
  constexpr int NSG = ATTN_PREFILL_SIMDGROUPS(D), BQ = 8 * NSG, BK = ATTN_PREFILL_BK;
  constexpr int THREADS = 32 * NSG;
  constexpr int DT = D / 8;  // 8x8 tiles across the features
  static_assert(BK == 16 && BQ % BK == 0 && D % 8 == 0, "tile geometry");
  // Q (once, BK rows at a time), then each K tile, each V tile, and at the end the output (BK rows
  // at a time).
  threadgroup float tile[BK][D];
  threadgroup float st[NSG][8][BK];   // this SIMD-group's scores, then probabilities
  threadgroup float dg[NSG][8][8];    // diag(row factors)
  threadgroup uchar vbad[BQ][D];      // ATTN_V_* bits of each output element (0: finite)
  threadgroup int v_nonfinite[1];     // the staged V tile held a NaN or inf

  const uint q0 = group.x * BQ, h = group.y, b = group.z;
  const uint kvh = h / uint(p.G);
  const float ninf = attn_neg_inf();
  const ulong q_base = (ulong(b) * uint(p.Hq) + h) * uint(p.Lq);
  const ulong kv_base = (ulong(b) * uint(p.Hkv) + kvh) * uint(p.Lk);

  // This lane's row of the strip and its 4 columns of each score tile.
  const int rr = lane / 4, cq = (lane % 4) * 4;
  const int i = int(q0) + 8 * int(sg) + rr;

  for (uint e = lane; e < 64u; e += 32u) dg[sg][e / 8][e % 8] = 0.0f;
  for (uint e = tid; e < uint(BQ * D); e += THREADS) vbad[e / uint(D)][e % uint(D)] = 0;
  simdgroup_float8x8 qm[DT], om[DT];
  for (int t = 0; t < DT; ++t) om[t] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  // Q, pre-scaled, BK rows at a time: the SIMD-groups whose strips lie in a slice load them.
  for (int s0 = 0; s0 < BQ; s0 += BK) {
    threadgroup_barrier(mem_flags::mem_threadgroup);  // the previous slice is loaded
    for (uint e = tid; e < uint(BK * D); e += THREADS) {
      const uint r = e / uint(D), d = e % uint(D), row = q0 + uint(s0) + r;
      tile[r][d] = row < uint(p.Lq) ? float(q[(q_base + row) * uint(D) + d]) * p.scale_log2 : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (8 * int(sg) >= s0 && 8 * int(sg) < s0 + BK)
      for (int t = 0; t < DT; ++t) simdgroup_load(qm[t], &tile[8 * int(sg) - s0][8 * t], D);
  }

  float m_run = ninf, l_run = 0.0f;
  // Keys past the causal diagonal of the block's last row are never visited.
  int kend = p.Lk;
  if (p.causal) kend = min(p.Lk, int(q0) + BQ + p.Lk - p.Lq);

  for (int k0 = 0; k0 < kend; k0 += BK) {
    // The previous tile (or Q) must be consumed before it is overwritten.
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid == 0) v_nonfinite[0] = 0;  // every thread has read the previous tile's flag
    for (uint e = tid; e < uint(BK * D); e += THREADS) {
      const uint r = e / uint(D), d = e % uint(D);
      const int j = k0 + int(r);
      tile[r][d] = j < p.Lk ? attn_kv_load<KV>(k, k_scales, kv_base + uint(j), d, uint(D)) : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // S[8, 16] = Q_strip K_tile^T.
    for (int jt = 0; jt < BK / 8; ++jt) {
      simdgroup_float8x8 s = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      for (int t = 0; t < DT; ++t) {
        simdgroup_float8x8 kt;
        simdgroup_load(kt, &tile[8 * jt][8 * t], D, ulong2(0, 0), true);
        simdgroup_multiply_accumulate(s, qm[t], kt, s);
      }
      simdgroup_store(s, &st[sg][0][8 * jt], BK);
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);

    // Online softmax: 4 lanes per row, 4 scores each.
    float sv[4];
    float mx = ninf;
    for (int c = 0; c < 4; ++c) {
      float bias;
      const bool vis = attn_visible(p, mask, b, h, i, k0 + cq + c, bias);
      sv[c] = vis ? st[sg][rr][cq + c] + bias : ninf;
      mx = attn_max_nan(mx, sv[c]);
    }
    mx = attn_max_nan(mx, simd_shuffle_xor(mx, ushort(1)));
    mx = attn_max_nan(mx, simd_shuffle_xor(mx, ushort(2)));
    const float m_new = attn_max_nan(m_run, mx);
    const bool poisoned = isnan(m_new) || m_new == -ninf;  // the row is NaN: P = 0, O untouched
    float factor = 1.0f, psum = 0.0f;
    if (m_new != ninf && !poisoned) {
      factor = exp2(m_run - m_new);
      for (int c = 0; c < 4; ++c) {
        sv[c] = sv[c] == ninf ? -0.0f : exp2(sv[c] - m_new);  // -0: hidden (attn_hidden_p)
        psum += sv[c];
      }
    } else {
      for (int c = 0; c < 4; ++c) sv[c] = -0.0f;
    }
    psum += simd_shuffle_xor(psum, ushort(1));
    psum += simd_shuffle_xor(psum, ushort(2));
    l_run = l_run * factor + psum;
    m_run = m_new;
    for (int c = 0; c < 4; ++c) st[sg][rr][cq + c] = sv[c];
    if (lane % 4 == 0) dg[sg][rr][rr] = factor;
    simdgroup_barrier(mem_flags::mem_threadgroup);

    // O = diag(factor) O, then O += P V.
    simdgroup_float8x8 fm, pm[BK / 8];
    simdgroup_load(fm, &dg[sg][0][0], 8);
    for (int t = 0; t < DT; ++t) simdgroup_multiply(om[t], fm, om[t]);
    for (int jt = 0; jt < BK / 8; ++jt) simdgroup_load(pm[jt], &st[sg][0][8 * jt], BK);

    threadgroup_barrier(mem_flags::mem_threadgroup);  // every SIMD-group is done with K
    for (uint e = tid; e < uint(BK * D); e += THREADS) {
      const uint r = e / uint(D), d = e % uint(D);
      const int j = k0 + int(r);
      float x = j < p.Lk ? attn_kv_load<KV>(v, v_scales, kv_base + uint(j), d, uint(D)) : 0.0f;
      if (!isfinite(x)) {
        v_nonfinite[0] = 1;
        x = 0.0f;
      }
      tile[r][d] = x;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int t = 0; t < DT; ++t)
      for (int jt = 0; jt < BK / 8; ++jt) {
        simdgroup_float8x8 vt;
        simdgroup_load(vt, &tile[8 * jt][8 * t], D);
        simdgroup_multiply_accumulate(om[t], pm[jt], vt, om[t]);
      }
    if (v_nonfinite[0] != 0) {  // rare: what the seen keys' NaN/inf V (staged as 0) make of O
      for (uint e = lane; e < 8u * uint(D); e += 32u) {
        const uint r = e / uint(D), d = e % uint(D);
        uint bits = 0u;
        for (int jj = 0; jj < BK; ++jj) {
          const float pj = st[sg][r][jj];
          if (k0 + jj >= p.Lk || attn_hidden_p(pj)) continue;
          const float x = pj * attn_kv_load<KV>(v, v_scales, kv_base + uint(k0 + jj), d, uint(D));
          if (!isfinite(x)) bits |= isnan(x) ? ATTN_V_NAN : x > 0.0f ? ATTN_V_POS_INF : ATTN_V_NEG_INF;
        }
        vbad[8u * sg + r][d] |= uchar(bits);
      }
    }
  }

  // o = O / l (with the sink); a row that saw no key (l = 0) is zeros. A NaN factor (a NaN or +inf
  // sink) must not enter the diag product: the row is marked NaN below instead.
  const float inv = l_run > 0.0f ? attn_out_scale(p, sinks, h, m_run, l_run) : 0.0f;
  simdgroup_barrier(mem_flags::mem_threadgroup);
  if (lane % 4 == 0) dg[sg][rr][rr] = isnan(inv) ? 0.0f : inv;
  simdgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_float8x8 fm;
  simdgroup_load(fm, &dg[sg][0][0], 8);
  for (int t = 0; t < DT; ++t) simdgroup_multiply(om[t], fm, om[t]);
  if (isnan(m_run) || m_run == -ninf || isnan(inv))  // a NaN or +inf score (or sink): the row is NaN
    for (uint d = uint(lane % 4); d < uint(D); d += 4u) vbad[8u * sg + uint(rr)][d] = uchar(ATTN_V_NAN);
  // The output BK rows at a time, through the tile, once every SIMD-group is done with V (or with
  // the previous slice).
  for (int s0 = 0; s0 < BQ; s0 += BK) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (8 * int(sg) >= s0 && 8 * int(sg) < s0 + BK)
      for (int t = 0; t < DT; ++t) simdgroup_store(om[t], &tile[8 * int(sg) - s0][8 * t], D);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint e = tid; e < uint(BK * D); e += THREADS) {
      const uint r = e / uint(D), d = e % uint(D), row = uint(s0) + r;
      const uint bits = uint(vbad[row][d]);
      if (q0 + row < uint(p.Lq))
        o[(q_base + q0 + row) * uint(D) + d] = Out(bits == 0u ? tile[r][d] : attn_v_nonfinite_value(bits));
    }
  }
}

// Host names: attention_{decode,prefill}_<q dtype>_<kv>_d<D>, o of q's dtype;
// attention_merge_<o dtype>.
#define MTO_ATTN_DENSE(T, tname, D)                                                                      \
  MTO_KERNEL_INSTANCE("attention_decode_" tname "_dense_d" #D, attention_decode, T, T, ATTN_KV_DENSE, D) \
  MTO_KERNEL_INSTANCE("attention_prefill_" tname "_dense_d" #D, attention_prefill, T, T, ATTN_KV_DENSE, D)
#define MTO_ATTN_MX(T, tname, D)                                                                                   \
  MTO_KERNEL_INSTANCE("attention_decode_" tname "_mxfp8_d" #D, attention_decode, T, T, ATTN_KV_MXFP8_E4M3, D)      \
  MTO_KERNEL_INSTANCE("attention_prefill_" tname "_mxfp8_d" #D, attention_prefill, T, T, ATTN_KV_MXFP8_E4M3, D)    \
  MTO_KERNEL_INSTANCE("attention_decode_" tname "_mxfp8_e5m2_d" #D, attention_decode, T, T, ATTN_KV_MXFP8_E5M2, D) \
  MTO_KERNEL_INSTANCE("attention_prefill_" tname "_mxfp8_e5m2_d" #D, attention_prefill, T, T, ATTN_KV_MXFP8_E5M2, D)
#define MTO_ATTN_DTYPE(T, tname)                                                          \
  MTO_KERNEL_INSTANCE("attention_merge_" tname, attention_merge, T)                       \
  MTO_ATTN_DENSE(T, tname, 64) MTO_ATTN_DENSE(T, tname, 80) MTO_ATTN_DENSE(T, tname, 96) \
  MTO_ATTN_DENSE(T, tname, 128) MTO_ATTN_DENSE(T, tname, 256)                            \
  MTO_ATTN_MX(T, tname, 64) MTO_ATTN_MX(T, tname, 96) MTO_ATTN_MX(T, tname, 128) MTO_ATTN_MX(T, tname, 256)

MTO_ATTN_DTYPE(float, "f32")
MTO_ATTN_DTYPE(half, "f16")
MTO_ATTN_DTYPE(bfloat, "bf16")
