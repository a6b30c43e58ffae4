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
