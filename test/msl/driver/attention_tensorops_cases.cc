// FlashAttention on the tensorops tier (shaders/attention_tensorops.metal for prefill, the vector
// decode kernel of shaders/attention.metal for Lq <= 8) against the cpu backend, through
// plan_attention(..., Tier::TensorOps): "attention-tensorops/..."; and on the tensorops-mx tier
// (shaders/attention_tensorops_mx.metal): "attention-tensorops-mx/...". Tolerances: attention_case.h.
//
// The main configuration (float32 q, dense K/V) runs every (Lq, Lk) of {33, 129, 300} x
// {1, 7, 33, 129, 300} for every head dim, with GQA ratio, causal and mask cycling; the other
// options (float16/bfloat16 q, mxfp8 E4M3/E5M2 K/V, bool/additive/per-head masks, scale, MQA)
// are sampled so that each value meets several shapes. msl.test.ts runs these cases under other
// cooperative-tensor seeds as well.
#include <set>

#include "attention_case.h"

namespace mtoh_driver {

std::vector<Case> attention_tensorops_cases() {
  using mto::DType;
  std::vector<Case> cases;
  AttentionCaseList list(cases, "attention-tensorops/", mto::Tier::TensorOps);
  auto add = [&](const AttnShape& s) { list.add(s); };
  const DType f32 = DType::Float32, f16 = DType::Float16, bf16 = DType::BFloat16;
  const int64_t dims[] = {64, 80, 96, 128, 256};
  const int64_t lens[] = {1, 7, 33, 129, 300};

  // Main configuration: every prefill (Lq, Lk) for every head dim. GQA 1, 4, 8, causal and masks
  // cycle; shapes with many rows keep fewer query heads so the suite stays fast.
  int n = 0;
  for (int64_t D : dims)
    for (int64_t Lq : lens) {
      if (Lq <= 8) continue;
      for (int64_t Lk : lens) {
        int64_t G = n % 3 == 0 ? 1 : n % 3 == 1 ? 4 : 8;
        if (G * Lq * Lk * D > int64_t(4) * 129 * 129 * 64) G = 1;
        const int64_t Hkv = G == 1 ? 2 : 1;
        const bool causal = (n / 3) % 2 == 1 || Lq > Lk;  // Lq > Lk: whole rows see no key
        const MaskKind mask = n % 5 == 2 ? MaskKind::Bool : n % 5 == 4 ? MaskKind::Additive : MaskKind::None;
        add({1, G * Hkv, Hkv, Lq, Lk, D, f32, KV::Dense, causal, mask});
        ++n;
      }
    }

  // float16 / bfloat16 q: every head dim, edge lengths, causal with Lq > Lk.
  add({1, 4, 1, 33, 129, 64, f16, KV::Dense, true});
  add({1, 2, 2, 129, 33, 80, f16, KV::Dense, true});
  add({1, 8, 1, 33, 7, 96, f16});
  add({1, 1, 1, 300, 300, 128, f16, KV::Dense, false, MaskKind::Bool});
  add({2, 2, 1, 33, 300, 256, f16, KV::Dense, true, MaskKind::AdditiveHalf});
  add({1, 4, 4, 33, 33, 64, bf16, KV::Dense, false, MaskKind::AdditiveBF16});
  add({1, 2, 1, 129, 129, 128, bf16, KV::Dense, true});
  add({1, 1, 1, 33, 1, 256, bf16});
  // mxfp8 K/V (E4M3 and E5M2) decoded in the kernel, every head dim a multiple of 32.
  add({1, 4, 1, 33, 129, 64, f32, KV::E4M3, true});
  add({1, 2, 1, 129, 33, 96, f16, KV::E5M2, true, MaskKind::Bool});
  add({1, 8, 1, 33, 300, 128, bf16, KV::E4M3, false, MaskKind::Additive});
  add({1, 1, 1, 300, 129, 256, f32, KV::E5M2, true});
  add({2, 2, 2, 33, 7, 256, f16, KV::E4M3});
  add({1, 2, 2, 33, 33, 96, f32, KV::E4M3, false, MaskKind::HeadKeys});
  // float16/bfloat16 q with an mxfp8 K meet in q's dtype where K's block scales keep it exact;
  // head 0's K scaled out of that range (float16 overflow, bfloat16's subnormals) takes float32
  // staging in its threadgroups while head 1's stay 16-bit.
  add({1, 4, 2, 33, 129, 64, f16, KV::E4M3, true, MaskKind::None, {}, 0, 0, 0, 16});
  add({1, 2, 2, 129, 33, 128, bf16, KV::E4M3, false, MaskKind::Bool, {}, 0, 0, 0, -118});
  // Only the last key of the last (batch, KV head) out of float16's range: the check must read
  // that head's scales, up to the last key the causal block visits (E4M3, whose other blocks fit
  // float16), by K's own format (E5M2: blocks reach 2^15 times their scale, E4M3's 2^8; its
  // other blocks' smallest values lie below float16's, so only the format decides there).
  add({2, 4, 2, 129, 129, 64, f16, KV::E4M3, true, MaskKind::None, {}, 0, 0, 0, 0, 18});
  add({2, 4, 2, 129, 129, 64, f16, KV::E5M2, true, MaskKind::None, {}, 0, 0, 0, 0, 18});
  // Masks broadcast per head, a custom scale, MQA with GQA 8.
  add({2, 4, 1, 33, 129, 80, f32, KV::Dense, false, MaskKind::HeadKeys});
  add({1, 8, 1, 33, 33, 64, f32, KV::Dense, false, MaskKind::AdditiveHalf, 0.3f});
  add({1, 4, 2, 129, 7, 128, f32, KV::Dense, false, MaskKind::None, 0.7f});

  // Decode on this tier is the vector kernel: one pass, and split over the keys with the merge
  // (o of each dtype both ways).
  add({1, 8, 1, 1, 129, 128, f32});
  add({1, 4, 2, 1, 33, 64, f16});
  add({1, 8, 1, 7, 129, 128, bf16, KV::Dense, true});
  add({1, 4, 1, 7, 300, 64, f16, KV::E5M2, true});
  add({1, 2, 2, 1, 300, 256, bf16, KV::Dense, false, MaskKind::Additive});

  // NaN in q, K, V and the additive mask (attention_case.h): NaN exactly where the cpu has it.
  const int qkv = kNanQ | kNanK | kNanV;
  add({1, 2, 1, 33, 129, 80, f32, KV::Dense, true, MaskKind::None, {}, qkv});
  add({2, 2, 2, 33, 33, 96, f32, KV::Dense, false, MaskKind::Bool, {}, kNanK | kNanV});
  add({1, 1, 1, 129, 300, 64, f32, KV::Dense, false, MaskKind::Additive, {}, kNanV | kNanMask});
  add({1, 2, 1, 33, 33, 256, f32, KV::Dense, true, MaskKind::AdditiveHalf, {}, qkv | kNanMask});
  add({1, 4, 1, 33, 129, 64, f32, KV::E4M3, true, MaskKind::None, {}, kNanK | kNanV});
  add({2, 2, 1, 33, 129, 128, bf16, KV::E5M2, false, MaskKind::Bool, {}, qkv});
  add({2, 2, 2, 1, 300, 64, f32, KV::Dense, false, MaskKind::None, {}, qkv});  // decode: split
  add({1, 2, 1, 33, 129, 64, f32, KV::Dense, true, MaskKind::None, {}, kNanQ | kInfV});
  add({2, 2, 2, 33, 300, 256, f32, KV::Dense, false, MaskKind::Bool, {}, kNanK | kInfV});
  add({1, 2, 1, 129, 129, 64, f32, KV::Dense, true, MaskKind::None, {}, kEdgeV});  // at a tile's first key
  // Attention sinks (attention_case.h), joined once where o is normalised.
  add({1, 4, 2, 33, 129, 64, f32, KV::Dense, true, MaskKind::None, {}, 0, 1});
  add({1, 2, 1, 129, 33, 128, f16, KV::Dense, true, MaskKind::Bool, {}, 0, 1});  // rows with no key
  add({1, 4, 2, 1, 300, 64, bf16, KV::Dense, false, MaskKind::None, {}, 0, 1});  // decode: split
  add({1, 4, 4, 33, 129, 64, f32, KV::Dense, true, MaskKind::None, {}, 0, 2});
  add({1, 4, 4, 129, 33, 64, f32, KV::Dense, true, MaskKind::None, {}, 0, 2});  // rows with no key
  return cases;
}

// The tensorops-mx tier's prefill (shaders/attention_tensorops_mx.metal: P as the P V product's
// cooperative left input where is_compatible_as_left_input allows, MSL 4.1), through
// plan_attention(..., Tier::TensorOpsMx): "attention-tensorops-mx/...". Every head dim with the
// edge lengths, each q dtype, mxfp8 K/V, masks, causal and NaN; msl.test.ts runs them with
// is_compatible_as_left_input answering no as well (that library's threadgroup-memory branch).
std::vector<Case> attention_tensorops_mx_cases() {
  using mto::DType;
  std::vector<Case> cases;
  AttentionCaseList list(cases, "attention-tensorops-mx/", mto::Tier::TensorOpsMx);
  auto add = [&](const AttnShape& s) { list.add(s); };
  const DType f32 = DType::Float32, f16 = DType::Float16, bf16 = DType::BFloat16;
  int n = 0;
  for (int64_t D : {64, 80, 96, 128, 256}) {
    const MaskKind mask = n % 3 == 0 ? MaskKind::None : n % 3 == 1 ? MaskKind::Bool : MaskKind::Additive;
    add({1, 4, 1, 33, 129, D, f32, KV::Dense, true, mask});
    add({1, 2, 2, 129, 33, D, f32, KV::Dense, n % 2 == 0});
    add({1, 2, 1, 300, 7, D, f32});
    ++n;
  }
  add({1, 4, 1, 33, 129, 64, f16, KV::Dense, true});
  add({1, 2, 2, 129, 33, 80, bf16, KV::Dense, true, MaskKind::AdditiveBF16});
  add({1, 1, 1, 33, 1, 256, f16, KV::Dense, false, MaskKind::AdditiveHalf});
  add({1, 4, 1, 33, 129, 64, f32, KV::E4M3, true});
  add({1, 2, 1, 129, 33, 96, f16, KV::E5M2, true, MaskKind::Bool});
  add({2, 2, 2, 33, 7, 256, bf16, KV::E4M3});
  add({2, 4, 1, 33, 129, 80, f32, KV::Dense, false, MaskKind::HeadKeys, 0.3f});
  add({1, 8, 1, 7, 129, 128, f32, KV::Dense, true});  // decode: the vector kernel on this tier too
  const int qkv = kNanQ | kNanK | kNanV;
  add({1, 2, 1, 33, 129, 80, f32, KV::Dense, true, MaskKind::None, {}, qkv});
  add({1, 1, 1, 129, 300, 64, f32, KV::Dense, false, MaskKind::Additive, {}, kNanV | kNanMask});
  add({1, 2, 1, 33, 129, 64, f32, KV::Dense, true, MaskKind::None, {}, kNanQ | kInfV});
  // float16 q with mxfp8 K at D 128 / 256: K read as a scale-plane tensor handle (the plan's
  // TensorSlot, attn_tops_k_tensor). Partial and whole key tiles, several heads (K rows past a
  // head's Lk belong to the next head), causal rows that see no key, masks, NaN, sinks.
  add({1, 4, 1, 33, 129, 128, f16, KV::E4M3, true});
  add({2, 2, 2, 129, 33, 256, f16, KV::E5M2, false, MaskKind::Bool});
  add({1, 2, 1, 300, 300, 128, f16, KV::E4M3, true, MaskKind::Additive});
  add({2, 2, 1, 33, 7, 256, f16, KV::E4M3});
  add({1, 2, 1, 129, 33, 128, f16, KV::E5M2, true, MaskKind::HeadKeys, 0.3f});
  add({1, 2, 1, 33, 129, 128, f16, KV::E4M3, true, MaskKind::None, {}, qkv});
  add({1, 4, 2, 33, 129, 256, f16, KV::E5M2, true, MaskKind::None, {}, 0, 1});
  return cases;
}

}  // namespace mtoh_driver
