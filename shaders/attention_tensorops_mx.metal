// FlashAttention prefill for the tensorops-mx tier (macOS 27): the kernel of
// attention_tensorops.metal, whose P V product takes the scores' cooperative tensor as its left
// input where is_compatible_as_left_input allows (no trip through threadgroup memory; WWDC26
// talk 330), and goes through threadgroup memory where it does not. The cooperative-left-input
// API is absent from the macOS 26.0 and 26.1 MetalPerformancePrimitives headers and present in
// 27.0's (docs/design/VERIFY.md), so only this library uses it: it is compiled at MSL 4.1
// (scripts/embed-shaders.mjs gives a library that uses the API that version), and the
// tensorops-mx probe compiles the same calls (native/metal/probe_sources.h). Kernel host names are
// those of attention_tensorops.metal; plans: native/core/dispatch_plan.cc (plan_attention).
#include <metal_stdlib>

#if __METAL_VERSION__ >= 400
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>

#define ATTN_TOPS_COOPERATIVE_LEFT 1

// Whether the scores `cS` (the Q K^T destination, float) can be the P V product's left input
// as they are. The answer is a run-time one: layouts differ by GPU generation and element type.
template <typename PV, typename CT>
inline bool attn_tops_left_compatible(thread PV& pv, thread CT& cS) {
  return pv.template is_compatible_as_left_input<float, float, float>(cS);
}

// O += P V with P = `cS` as the left input (only where attn_tops_left_compatible said so).
template <typename PV, typename CT, typename TV, typename CO>
inline void attn_tops_pv_left(thread PV& pv, thread CT& cS, thread TV& tv, thread CO& cO) {
  auto cP = pv.template get_left_input_cooperative_tensor<float, float, float>(cS);
  pv.run(cP, tv, cO);
}
#endif

#include "attention_tensorops.metal"

#if defined(__HAVE_TENSOR_MULTIPLANE__)
// K as a scale-plane tensor (issue #28): the MTLTensor with an E8M0 scale plane the host made over
// an mxfp8 K's own codes and scales (native/metal/qtensor.mm), bound at ATTN_BUFFER_K through the
// Metal 4 argument table: [B * Hkv * Lk rows, D columns], blocks of 32 along D, the contracted
// axis of Q K^T, so K is the transposed scaled right operand Apple's table requires, and the left
// operand is half: float16 q only, read as stored from device memory (no staging, no rounding),
// and S scaled by scale * log2 e afterwards. Row strides of 128 bytes or more: D = 128 or 256
// (core/scale_plane.h). V stays staged (its blocks run along D, not along the keys P V contracts;
// docs/design/METAL.md). Plans: plan_attention picks these for float16 q and mxfp8 K on this tier.
template <typename F, int D>
struct attn_tops_k_tensor {
  typedef tensor<device F, dextents<int32_t, 2>, tensor_handle,
                 tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>>
      arg_t;
  typedef tensor<device half, dextents<int32_t, 2>, tensor_inline> left_t;
  typedef arg_t right_t;
  static constexpr bool kPostScale = true;

  template <typename QK, typename CS>
  static void scores(thread QK& qk, thread CS& cS, arg_t k, device const uchar*, device const half* q,
                     constant AttentionKernelParams& p, ulong q_base, uint q0, int r0, ulong kv_base, int k0,
                     threadgroup float*, ushort) {
    // The SIMD-group's rows of q to the last query (rows past it in S are undefined, never
    // stored); a SIMD-group wholly past the last query reads that row, and stores nothing.
    const uint row = min(q0 + uint(r0), uint(p.Lq) - 1u);
    left_t tq((device half*)(q + (q_base + row) * uint(D)), dextents<int32_t, 2>(D, p.Lq - int(row)),
              array<int32_t, 2>{1, D});
    // Keys k0.. of this head; rows past its Lk (another head's, or past the tensor) are hidden.
    auto tk = k.slice(0, int(kv_base) + k0);
    qk.run(tq, tk, cS);
  }
};

// Host names: attention_tensorops_prefill_kt_f16_<kv>_d<D> (float16 q and o, K as a tensor).
#define MTO_ATTN_TOPS_KT(kvname, KV, F, D)                                                                    \
  MTO_KERNEL_INSTANCE("attention_tensorops_prefill_kt_f16_" kvname "_d" #D, attention_tensorops_prefill, half, \
                      half, KV, D, attn_tops_k_tensor<F, D>)
MTO_ATTN_TOPS_KT("mxfp8", ATTN_KV_MXFP8_E4M3, metal_fp8_e4m3_format, 128)
MTO_ATTN_TOPS_KT("mxfp8", ATTN_KV_MXFP8_E4M3, metal_fp8_e4m3_format, 256)
MTO_ATTN_TOPS_KT("mxfp8_e5m2", ATTN_KV_MXFP8_E5M2, metal_fp8_e5m2_format, 128)
MTO_ATTN_TOPS_KT("mxfp8_e5m2", ATTN_KV_MXFP8_E5M2, metal_fp8_e5m2_format, 256)
#endif  // __HAVE_TENSOR_MULTIPLANE__
