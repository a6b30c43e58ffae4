// One attention case (attention_cases.cc): the shape and options, its name, and a run through
// plan_attention for a tier against the cpu backend's attention. Shared by the simdgroup-tier
// cases (attention_cases.cc) and the tensorops-tier ones (attention_tensorops_cases.cc).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "cases.h"
#include "core/capabilities.h"
#include "core/dtype.h"

namespace mtoh_driver {

enum class KV { Dense, E4M3, E5M2 };
enum class MaskKind { None, Bool, Additive, AdditiveHalf, AdditiveBF16, HeadKeys };

struct AttnShape {
  int64_t B, Hq, Hkv, Lq, Lk, D;
  mto::DType dtype = mto::DType::Float32;
  KV kv = KV::Dense;
  bool causal = false;
  MaskKind mask = MaskKind::None;
  std::optional<float> scale;
};

// "<prefix>decode|prefill/<dtype>/<kv>/d<D>/B.Hq.Hkv/Lq.Lk[/causal][/mask_...][/scale]".
std::string attention_case_name(const AttnShape& s, const char* prefix);

// Runs the plan of `tier` for s in the harness (both passes) and compares o with the cpu backend:
// max |o - ref| <= 2e-5 (1 + |ref|) for float32 q, 3e-3 (1 + |ref|) for float16/bfloat16 q.
CaseResult run_attention_case(const AttnShape& s, const std::string& name, const std::string& variant,
                              mto::Tier tier);

}  // namespace mtoh_driver
