// FlashAttention prefill for the tensorops tier (MSL 4.0, TensorOps; macOS 26) and, through
// shaders/attention_tensorops_mx.metal, the tensorops-mx tier (MSL 4.1; macOS 27), the
// algorithm of WWDC26 talk 330: o = softmax(q k^T * scale + mask) v with the scores never leaving
// the SIMD-group's registers; o of type Out (q's dtype), each element rounded once as it is
// stored. Semantics, slots and tile sizes: attention_params.h; plans:
// native/core/dispatch_plan.cc (plan_attention). Decode (Lq <= 8) on these tiers is the vector
// kernel of shaders/attention.metal: it is bound by memory bandwidth, not by the matrix units.
//
// A threadgroup owns ATTN_TOPS_SIMDGROUPS x 16 query rows of one query head; each SIMD-group owns
// 16 whole rows, so every matmul2d runs with execution_simdgroup and the row softmax needs no
// exchange between SIMD-groups. Per 32-key tile:
//   1. S = q k^T * scale * log2 e into a cooperative tensor: a dense K and q read from device
//      memory in their own dtype, S scaled after the product; an mxfp8 K accumulated over
//      64-feature chunks of Q and K (decoded) staged in threadgroup memory, in float16/bfloat16
//      q's dtype where the threadgroup's K block scales keep K exact there (S scaled after),
//      else as float (Q pre-scaled).
//      K is dynamic, since a static K that is not a multiple of 32 is truncated on macOS 26.1
//      (D = 80, 96).
//   2. Invisible keys (causal, mask, past Lk) become -inf; reduce_rows(max, identity -inf) gives
//      the tile's row max, the running (m, l) live in row-reduction tensors, map_iterator gives
//      each score its row's max for P = exp2(S - m), reduce_rows(sum, identity 0) the row sums.
//   3. O *= 2^(m_old - m_new) row by row, O += P V: in this library P goes through threadgroup
//      memory (store, simdgroup_barrier, a tensor view), since the cooperative-left-input API is
//      not in the macOS 26.0 and 26.1 MetalPerformancePrimitives headers (docs/design/VERIFY.md).
//      attention_tensorops_mx.metal defines ATTN_TOPS_COOPERATIVE_LEFT and the two functions
//      below with that API (macOS 27 has it): there P goes into the second matmul2d directly when
//      is_compatible_as_left_input says the layouts allow it, and through threadgroup memory
//      otherwise. V is staged as
//      float; for D = 256 it is staged and multiplied in two halves of 128 columns (two O tensors),
//      so that a 32-key V tile fits in threadgroup memory.
// Every index into a cooperative tensor comes from get_multidimensional_index / map_iterator:
// the element-to-thread layout is implementation-defined and differs across GPU generations. The
// per-row rescale factors reach O (another op's layout) through threadgroup memory by row index.
//
// The staged V and P are float (float x float -> float, a combination every TensorOps release
// supports): a cooperative left input must have the element type of the destination it came from
// (float, for an exact softmax). A staged mxfp8 K meets 16-bit q in q's dtype when that is exact
// (half x half or bfloat x bfloat -> float), else both are float; a dense q and K are one dtype,
// so they need no staging to meet in one matmul2d. On the mx tier a
// float16 q's scores read an mxfp8 K as its scale-plane tensor instead (half x fp8, K the
// transposed scaled right operand: attn_tops_k_tensor); V's scale planes do not apply, a scaled
// right operand must be transposed and V is not (docs/design/METAL.md). Masked scores are -inf;
// exp2(-inf) = 0 is relied on: compile without fast math, as for attention.metal.
// NaN (the rule of check_attention, native/core/ops.h): every per-row step here is element by
// element, so NaN may flow through O; but reduce_rows' max need not propagate NaN, so a NaN score
// enters it as +inf (which poisons the row the same way: exp2(inf - inf)), and a hidden key's P = 0
// must not meet a NaN V in the P V product: V is staged with NaN/inf as 0, and for a tile that held
// one the seen keys' non-finite products are added to O element by element.
#include <metal_stdlib>

#include "attention_common.h"
#include "mx_stage.h"

#if __METAL_VERSION__ >= 400
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>

using namespace metal;
using namespace mpp::tensor_ops;

typedef tensor<threadgroup float, dextents<int32_t, 2>, tensor_inline> attn_staged_t;

#if !defined(ATTN_TOPS_COOPERATIVE_LEFT)
// The tensorops tier: P always goes through threadgroup memory, so the P V product never takes
// the scores' cooperative tensor as its left input.
template <typename PV, typename CT>
inline bool attn_tops_left_compatible(thread PV&, thread CT&) {
  return false;
}
template <typename PV, typename CT, typename TV, typename CO>
inline void attn_tops_pv_left(thread PV&, thread CT&, thread TV&, thread CO&) {}
#endif

template <typename CT>
inline void attn_tops_fill(thread CT& ct, float value) {
  for (int i = 0; i < ct.get_capacity(); ++i)
    if (ct.is_valid_element(i)) ct[i] = value;
}

// ct[row, :] *= factor[row] for every element this thread holds.
template <typename CT>
inline void attn_tops_scale_rows(thread CT& ct, threadgroup const float* factor) {
  for (int i = 0; i < ct.get_capacity(); ++i) {
    if (!ct.is_valid_element(i)) continue;
    ct[i] *= factor[ct.get_multidimensional_index(i)[1]];
  }
}

// factor[row] = value of the row-reduction element that holds `row`.
template <typename RT>
inline void attn_tops_rows_to_threadgroup(thread RT& rt, threadgroup float* factor) {
  for (int i = 0; i < rt.get_capacity(); ++i) {
    if (!rt.is_valid_element(i)) continue;
    factor[rt.get_multidimensional_index(i)[0]] = rt[i];
  }
}

// O[row, col0 + column] += P[row, jj] V[k0 + jj, col0 + column] over the nk keys of the tile that
// the row sees (P not -0) and whose V is NaN or inf: the values the staged tile left out as 0.
template <int KV, typename CT, typename S>
inline void attn_tops_add_nonfinite_v(thread CT& cO, threadgroup const float* P, int ldp, device const S* v,
                                      device const uchar* v_scales, ulong kv_row0, int nk, uint col0, uint D) {
  for (int i = 0; i < cO.get_capacity(); ++i) {
    if (!cO.is_valid_element(i)) continue;
    const auto idx = cO.get_multidimensional_index(i);  // {column, row}
    float add = 0.0f;
    for (int jj = 0; jj < nk; ++jj) {
      const float pj = P[idx[1] * ldp + jj];
      if (attn_hidden_p(pj)) continue;
      const float x = attn_kv_load<KV>(v, v_scales, kv_row0 + uint(jj), col0 + uint(idx[0]), D);
      if (!isfinite(x)) add += pj * x;
    }
    cO[i] += add;
  }
}

// o[row0 + row, col0 + column] = O[row, column] * inv_l[row] for the rows before Lq, rounded to Out.
template <typename CT, typename Out>
inline void attn_tops_store(thread CT& cO, device Out* o, uint row0, uint Lq, uint col0, uint D,
                            threadgroup const float* inv_l) {
  for (int i = 0; i < cO.get_capacity(); ++i) {
    if (!cO.is_valid_element(i)) continue;
    const auto idx = cO.get_multidimensional_index(i);  // {column, row}
    const uint row = row0 + uint(idx[1]);
    if (row < Lq) o[ulong(row) * D + col0 + uint(idx[0])] = Out(cO[i] * inv_l[idx[1]]);
  }
}

// Step 1's K, three ways. Staged (an mxfp8 cache): Q and K in DC-feature chunks through
// threadgroup memory, K decoded there, as S: float (Q pre-scaled), or float16/bfloat16 q's own
// dtype (Q as stored, S scaled afterwards), which the kernel takes only when every block scale of
// its keys keeps K exact there (mx_stage.h; attn_tops_narrow below). From device memory (a dense
// cache): matmul2d reads Q and K as they are stored, in their own dtype (16-bit operands for
// float16 and bfloat16, what the hardware's fast rows take; nothing to convert, so nothing lost),
// and S is scaled afterwards. As a scale-plane tensor (the tensorops-mx library only:
// attn_tops_k_tensor in attention_tensorops_mx.metal): matmul2d reads K's codes and E8M0 planes
// itself and float16 Q from device memory, and S is scaled afterwards.
// `arg_t` is the kernel's K parameter; `left_t`/`right_t` the operand types the cooperative
// tensors of S are made for; kPostScale whether S still needs the scale.
template <typename T, int KV, int D, typename S = float>
struct attn_tops_k_staged {
  typedef device const typename attn_kv_storage<T, KV>::type* arg_t;
  typedef tensor<threadgroup S, dextents<int32_t, 2>, tensor_inline> left_t;
  typedef left_t right_t;
  static constexpr bool kPostScale = sizeof(S) < 4;

  // S[SR, BK] += Q[SR, chunk] K[BK, chunk]^T over D, K staged as keys x features (transposed right).
  template <typename QK, typename CS>
  static void scores(thread QK& qk, thread CS& cS, arg_t k, device const uchar* k_scales, device const T* q,
                     constant AttentionKernelParams& p, ulong q_base, uint q0, int r0, ulong kv_base, int k0,
                     threadgroup float* stage_floats, ushort tid) {
    constexpr int BQ = ATTN_TOPS_SG_ROWS * ATTN_TOPS_SIMDGROUPS, BK = ATTN_TOPS_BK, THREADS = 32 * ATTN_TOPS_SIMDGROUPS;
    constexpr int DC = D < ATTN_TOPS_DCHUNK ? D : ATTN_TOPS_DCHUNK;
    constexpr int LDC = DC + 16 / int(sizeof(S));  // rows 16 bytes apart: different memory banks
    threadgroup S* stage = (threadgroup S*)stage_floats;
    const float q_scale = kPostScale ? 1.0f : p.scale_log2;
    for (int d0 = 0; d0 < D; d0 += DC) {
      const int dc = min(DC, D - d0);
      // The staged tiles of the previous step must be consumed before they are overwritten.
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (int e = tid; e < BQ * dc; e += THREADS) {
        const int r = e / dc, d = e % dc;
        const uint i = q0 + uint(r);
        stage[r * LDC + d] = i < uint(p.Lq) ? S(float(q[(q_base + i) * uint(D) + uint(d0 + d)]) * q_scale) : S(0.0f);
      }
      for (int e = tid; e < BK * dc; e += THREADS) {
        const int r = e / dc, d = e % dc;
        const int j = k0 + r;
        stage[(BQ + r) * LDC + d] =
            j < p.Lk ? S(attn_kv_load<KV>(k, k_scales, kv_base + uint(j), uint(d0 + d), uint(D))) : S(0.0f);
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
      left_t tq(&stage[r0 * LDC], dextents<int32_t, 2>(dc, ATTN_TOPS_SG_ROWS), array<int32_t, 2>{1, LDC});
      left_t tk(&stage[BQ * LDC], dextents<int32_t, 2>(dc, BK), array<int32_t, 2>{1, LDC});
      qk.run(tq, tk, cS);
    }
  }
};

// Which ways of reading K have a 16-bit staging to try first: the float staging of an mxfp8 K for
// float16/bfloat16 q (value), that staging (type) and the MX format of K's blocks (format).
template <typename KS>
struct attn_tops_narrow {
  static constexpr bool value = false;
  static constexpr int format = 0;
  typedef KS type;
};
template <typename T, int KV, int D>
struct attn_tops_narrow_staged {
  static constexpr bool value = true;
  static constexpr int format = KV == ATTN_KV_MXFP8_E4M3 ? MTO_FORMAT_MXFP8_E4M3 : MTO_FORMAT_MXFP8_E5M2;
  typedef attn_tops_k_staged<T, KV, D, T> type;
};
template <int KV, int D>
struct attn_tops_narrow<attn_tops_k_staged<half, KV, D>> : attn_tops_narrow_staged<half, KV, D> {};
template <int KV, int D>
struct attn_tops_narrow<attn_tops_k_staged<bfloat, KV, D>> : attn_tops_narrow_staged<bfloat, KV, D> {};

template <typename T, int D>
struct attn_tops_k_device {
  typedef device const T* arg_t;
  typedef tensor<device T, dextents<int32_t, 2>, tensor_inline> left_t;
  typedef left_t right_t;
  static constexpr bool kPostScale = true;

  // S[SR, BK] += Q[SR, D] K[BK, D]^T from device memory (K as keys x features: transposed right).
  template <typename QK, typename CS>
  static void scores(thread QK& qk, thread CS& cS, arg_t k, device const uchar*, device const T* q,
                     constant AttentionKernelParams& p, ulong q_base, uint q0, int r0, ulong kv_base, int k0,
                     threadgroup float*, ushort) {
    // The SIMD-group's rows of q to the last query, keys k0.. of this head to its last: S past
    // either is undefined, and hidden (attn_visible) or never stored. A SIMD-group wholly past the
    // last query reads that row, and stores nothing.
    const uint row = min(q0 + uint(r0), uint(p.Lq) - 1u);
    left_t tq((device T*)(q + (q_base + row) * uint(D)), dextents<int32_t, 2>(D, p.Lq - int(row)),
              array<int32_t, 2>{1, D});
    left_t tk((device T*)(k + (kv_base + uint(k0)) * uint(D)), dextents<int32_t, 2>(D, p.Lk - k0),
              array<int32_t, 2>{1, D});
    qk.run(tq, tk, cS);
  }
};

// The prefill for one way of reading K (KS); the threadgroup memory is the kernel's: stage
// (Q/K chunks, then V), ps [NSG][SR * LDP], rowf [NSG][SR], v_nonfinite [2].
template <typename T, typename Out, int KV, int D, typename KS>
inline void attn_tops_prefill_body(device const T* q, typename KS::arg_t k,
                                   device const typename attn_kv_storage<T, KV>::type* v,
                                   device const uchar* k_scales, device const uchar* v_scales,
                                   device const uchar* mask, device Out* o, constant AttentionKernelParams& p,
                                   device const float* sinks, uint3 group, ushort tid, ushort sg,
                                   threadgroup float* stage, threadgroup float* ps, threadgroup float* rowf,
                                   threadgroup int* v_nonfinite) {
  constexpr int SR = ATTN_TOPS_SG_ROWS, NSG = ATTN_TOPS_SIMDGROUPS, BK = ATTN_TOPS_BK;
  constexpr int BQ = SR * NSG, THREADS = 32 * NSG;
  constexpr int DV = D > 128 ? D / 2 : D;  // output columns per P V product
  constexpr int NV = D / DV;
  constexpr int LDV = DV + 4, LDP = BK + 4;
  threadgroup float* p_tile = ps + int(sg) * SR * LDP;  // this SIMD-group's P
  threadgroup float* row_factor = rowf + int(sg) * SR;
  const uint q0 = group.x * BQ, h = group.y, b = group.z;
  const uint kvh = h / uint(p.G);
  const int r0 = int(sg) * SR;  // this SIMD-group's rows in the block
  const float ninf = attn_neg_inf();
  const ulong q_base = (ulong(b) * uint(p.Hq) + h) * uint(p.Lq);
  const ulong kv_base = (ulong(b) * uint(p.Hkv) + kvh) * uint(p.Lk);

  // S[SR, BK] += Q[SR, chunk] K[BK, chunk]^T, K staged as keys x features (transposed right).
  constexpr auto qk_desc = matmul2d_descriptor(SR, BK, static_cast<int>(dynamic_extent), false, true, false,
                                               matmul2d_descriptor::mode::multiply_accumulate);
  // O[SR, DV] += P[SR, BK] V[BK, DV]; a cooperative left input needs the static inner dimension.
  constexpr auto pv_desc = matmul2d_descriptor(SR, DV, BK, false, false, false,
                                               matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<qk_desc, execution_simdgroup> qk;
  matmul2d<pv_desc, execution_simdgroup> pv;

  auto cS = qk.template get_destination_cooperative_tensor<typename KS::left_t, typename KS::right_t, float>();
  auto cM = qk.template get_row_reduction_destination_cooperative_tensor<typename KS::left_t, typename KS::right_t, float>();
  auto cL = qk.template get_row_reduction_destination_cooperative_tensor<typename KS::left_t, typename KS::right_t, float>();
  // One O layout serves both ways P arrives: a cooperative tensor's layout follows from the
  // descriptor, the scope and the operands' element types (the data-size query of Apple's
  // MPPTensorOpsMatMul2dImpl.h takes exactly those), and P is float either way.
  auto cO0 = pv.template get_destination_cooperative_tensor<attn_staged_t, attn_staged_t, float>();
  auto cO1 = pv.template get_destination_cooperative_tensor<attn_staged_t, attn_staged_t, float>();  // D = 256
  attn_tops_fill(cM, ninf);
  attn_tops_fill(cL, 0.0f);
  attn_tops_fill(cO0, 0.0f);
  if (NV > 1) attn_tops_fill(cO1, 0.0f);
  attn_staged_t tp(p_tile, dextents<int32_t, 2>(BK, SR), array<int32_t, 2>{1, LDP});

  // Keys past the causal diagonal of the block's last row are never visited.
  int kend = p.Lk;
  if (p.causal) kend = min(p.Lk, int(q0) + BQ + p.Lk - p.Lq);

  for (int k0 = 0; k0 < kend; k0 += BK) {
    // 1. Scores, in the log2 domain. The accumulating op starts from zeros. This tile's V flag is
    // the one the tile before the last used: every thread read that one two tiles' barriers ago.
    const int vf = (k0 / BK) & 1;
    if (tid == 0) v_nonfinite[vf] = 0;
    attn_tops_fill(cS, 0.0f);
    KS::scores(qk, cS, k, k_scales, q, p, q_base, q0, r0, kv_base, k0, stage, tid);

    // 2. Online softmax on the SIMD-group's rows.
    for (int i = 0; i < cS.get_capacity(); ++i) {
      if (!cS.is_valid_element(i)) continue;
      const auto idx = cS.get_multidimensional_index(i);  // {key, row}
      float bias;
      const bool vis = attn_visible(p, mask, b, h, int(q0) + r0 + idx[1], k0 + idx[0], bias);
      const float s = vis ? (KS::kPostScale ? cS[i] * p.scale_log2 : cS[i]) + bias : ninf;  // additive -inf hides
      cS[i] = isnan(s) ? -ninf : s;                // NaN as +inf: the row's max poisons it either way
    }
    auto cTileMax = qk.template get_row_reduction_destination_cooperative_tensor<typename KS::left_t, typename KS::right_t, float>();
    reduce_rows(cS, cTileMax, reduction_operation::max, ninf);
    auto cF = qk.template get_row_reduction_destination_cooperative_tensor<typename KS::left_t, typename KS::right_t, float>();
    for (int r = 0; r < cM.get_capacity(); ++r) {
      if (!cM.is_valid_element(r)) continue;
      const float m_new = max(cM[r], cTileMax[r]);
      cF[r] = m_new == ninf ? 1.0f : exp2(cM[r] - m_new);  // a row that saw no key yet keeps O = 0
      cM[r] = m_new;
    }
    for (int i = 0; i < cS.get_capacity(); ++i) {
      if (!cS.is_valid_element(i)) continue;
      auto it = cS.get_iterator(i);
      const float m = *cM.map_iterator(it);
      cS[i] = m == ninf || cS[i] == ninf ? -0.0f : exp2(cS[i] - m);  // -0: hidden (attn_hidden_p)
    }
    auto cTileSum = qk.template get_row_reduction_destination_cooperative_tensor<typename KS::left_t, typename KS::right_t, float>();
    reduce_rows(cS, cTileSum, reduction_operation::sum, 0.0f);
    for (int r = 0; r < cL.get_capacity(); ++r)
      if (cL.is_valid_element(r)) cL[r] = cL[r] * cF[r] + cTileSum[r];

    // 3. O = diag(factor) O + P V.
    attn_tops_rows_to_threadgroup(cF, row_factor);
    simdgroup_barrier(mem_flags::mem_threadgroup);
    attn_tops_scale_rows(cO0, row_factor);
    if (NV > 1) attn_tops_scale_rows(cO1, row_factor);
    const bool direct = attn_tops_left_compatible(pv, cS);
    for (int c = 0; c < NV; ++c) {
      // Every SIMD-group is done with the staged Q/K chunk (or the previous V half).
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (int e = tid; e < BK * DV; e += THREADS) {
        const int r = e / DV, d = e % DV;
        const int j = k0 + r;
        // Keys past Lk are zeros, not garbage: their P is 0, and 0 * NaN would not be. NaN/inf:
        // 0 as well, added back for the rows that see the key below.
        float x = j < p.Lk ? attn_kv_load<KV>(v, v_scales, kv_base + uint(j), uint(c * DV + d), uint(D)) : 0.0f;
        if (!isfinite(x)) {
          v_nonfinite[vf] = 1;
          x = 0.0f;
        }
        stage[r * LDV + d] = x;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
      attn_staged_t tv(&stage[0], dextents<int32_t, 2>(DV, BK), array<int32_t, 2>{1, LDV});
      if (direct) {
        if (c == 0) attn_tops_pv_left(pv, cS, tv, cO0);
        else attn_tops_pv_left(pv, cS, tv, cO1);
      } else {
        if (c == 0) {
          cS.store(tp);
          simdgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (c == 0) pv.run(tp, tv, cO0);
        else pv.run(tp, tv, cO1);
      }
      if (v_nonfinite[vf] != 0) {  // rare: P through threadgroup memory, then O element by element
        cS.store(tp);
        simdgroup_barrier(mem_flags::mem_threadgroup);
        const int nk = min(BK, p.Lk - k0);
        if (c == 0) attn_tops_add_nonfinite_v<KV>(cO0, p_tile, LDP, v, v_scales, kv_base + uint(k0), nk, 0u, uint(D));
        else attn_tops_add_nonfinite_v<KV>(cO1, p_tile, LDP, v, v_scales, kv_base + uint(k0), nk, uint(DV), uint(D));
      }
    }
  }

  // o = O / l, with the sink joined once; a row that saw no key (l = 0) is zeros. Rows past Lq are
  // never stored.
  for (int r = 0; r < cL.get_capacity(); ++r)
    if (cL.is_valid_element(r)) cL[r] = attn_out_scale(p, sinks, h, cM[r], cL[r]);
  attn_tops_rows_to_threadgroup(cL, row_factor);
  simdgroup_barrier(mem_flags::mem_threadgroup);
  attn_tops_store(cO0, o + q_base * uint(D), q0 + uint(r0), uint(p.Lq), 0u, uint(D), row_factor);
  if (NV > 1) attn_tops_store(cO1, o + q_base * uint(D), q0 + uint(r0), uint(p.Lq), uint(DV), uint(D), row_factor);
}

// Threadgroup memory, in floats: the Q and K chunks of a step (float staging; the 16-bit one
// takes less), then the V tile (or half tile) of the same key tile.
template <int D>
struct attn_tops_stage_floats {
  static constexpr int BQ = ATTN_TOPS_SG_ROWS * ATTN_TOPS_SIMDGROUPS, BK = ATTN_TOPS_BK;
  static constexpr int DC = D < ATTN_TOPS_DCHUNK ? D : ATTN_TOPS_DCHUNK, DV = D > 128 ? D / 2 : D;
  // Staged rows are padded by 16 bytes, so that rows start in different memory banks.
  static constexpr int QK = (BQ + BK) * (DC + 4), V = BK * (DV + 4);
  static constexpr int value = QK > V ? QK : V;
};

template <typename T, typename Out, int KV, int D, typename KS>
[[kernel]] void attention_tensorops_prefill(
    device const T* q [[buffer(ATTN_BUFFER_Q)]],
    typename KS::arg_t k [[buffer(ATTN_BUFFER_K)]],
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
  constexpr int SR = ATTN_TOPS_SG_ROWS, NSG = ATTN_TOPS_SIMDGROUPS, BK = ATTN_TOPS_BK;
  constexpr int BQ = SR * NSG, LDP = BK + 4;
  static_assert(D / (D > 128 ? D / 2 : D) <= 2 && (D > 128 ? D / 2 : D) % 16 == 0, "P V tiles");
  threadgroup float stage[attn_tops_stage_floats<D>::value];
  threadgroup float ps[NSG * SR * LDP];  // P through threadgroup memory when it cannot go directly
  threadgroup float rowf[NSG * SR];      // per-row factors for O: rescale, then 1 / l
  threadgroup int v_nonfinite[2];        // the staged V tile (either half) held a NaN or inf; by tile parity
  threadgroup int misfit[NSG];           // a block scale of the threadgroup's keys leaves q's 16-bit range

  // An mxfp8 K meets float16/bfloat16 q in q's dtype when every block of the keys this
  // threadgroup visits is exact there (a read of D / 32 scale bytes per key, 1/32 of its codes),
  // else as float32: exact either way, and uniform across the threadgroup (its barriers).
  typedef attn_tops_narrow<KS> narrow;
  bool in_16_bits = false;
  if constexpr (narrow::value) {  // constexpr: instances without a 16-bit staging hold no kend
    const uint blocks = uint(D) / 32u;
    const ulong kv_base = (ulong(group.z) * uint(p.Hkv) + group.y / uint(p.G)) * uint(p.Lk);
    int kend = p.Lk;  // as the body's key loop: keys past the block's causal diagonal are not visited
    if (p.causal) kend = min(p.Lk, int(group.x * BQ) + BQ + p.Lk - p.Lq);
    in_16_bits = mto_mx_blocks_fit<narrow::format, T, NSG>(k_scales + kv_base * blocks, uint(max(kend, 0)) * blocks,
                                                            misfit, tid, sg, lane);
  }
  if (in_16_bits) {
    attn_tops_prefill_body<T, Out, KV, D, typename narrow::type>(q, k, v, k_scales, v_scales, mask, o, p, sinks, group,
                                                                 tid, sg, stage, ps, rowf, v_nonfinite);
  } else {
    attn_tops_prefill_body<T, Out, KV, D, KS>(q, k, v, k_scales, v_scales, mask, o, p, sinks, group, tid, sg, stage,
                                              ps, rowf, v_nonfinite);
  }
}

// Host names: attention_tensorops_prefill_<q dtype>_<kv>_d<D>, o of q's dtype; a dense K read from
// device memory, an mxfp8 K staged.
#define MTO_ATTN_TOPS_DENSE(T, tname, D)                                                                     \
  MTO_KERNEL_INSTANCE("attention_tensorops_prefill_" tname "_dense_d" #D, attention_tensorops_prefill, T, T, \
                      ATTN_KV_DENSE, D, attn_tops_k_device<T, D>)
#define MTO_ATTN_TOPS_MX(T, tname, D)                                                                             \
  MTO_KERNEL_INSTANCE("attention_tensorops_prefill_" tname "_mxfp8_d" #D, attention_tensorops_prefill, T, T,      \
                      ATTN_KV_MXFP8_E4M3, D, attn_tops_k_staged<T, ATTN_KV_MXFP8_E4M3, D>)                        \
  MTO_KERNEL_INSTANCE("attention_tensorops_prefill_" tname "_mxfp8_e5m2_d" #D, attention_tensorops_prefill, T, T, \
                      ATTN_KV_MXFP8_E5M2, D, attn_tops_k_staged<T, ATTN_KV_MXFP8_E5M2, D>)
#define MTO_ATTN_TOPS_DTYPE(T, tname)                                                                   \
  MTO_ATTN_TOPS_DENSE(T, tname, 64) MTO_ATTN_TOPS_DENSE(T, tname, 80) MTO_ATTN_TOPS_DENSE(T, tname, 96) \
  MTO_ATTN_TOPS_DENSE(T, tname, 128) MTO_ATTN_TOPS_DENSE(T, tname, 256)                                 \
  MTO_ATTN_TOPS_MX(T, tname, 64) MTO_ATTN_TOPS_MX(T, tname, 96) MTO_ATTN_TOPS_MX(T, tname, 128)         \
  MTO_ATTN_TOPS_MX(T, tname, 256)

MTO_ATTN_TOPS_DTYPE(float, "f32")
MTO_ATTN_TOPS_DTYPE(half, "f16")
MTO_ATTN_TOPS_DTYPE(bfloat, "bf16")

#endif  // __METAL_VERSION__ >= 400
