// One attention case (attention_cases.cc): the shape and options, its name, and a run through
// plan_attention for a tier against the cpu backend's attention. Shared by the simdgroup-tier
// cases (attention_cases.cc) and the tensorops-tier ones (attention_tensorops_cases.cc).
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cases.h"
#include "core/capabilities.h"
#include "core/dtype.h"

namespace mtoh_driver {

enum class KV { Dense, E4M3, E5M2 };
enum class MaskKind { None, Bool, Additive, AdditiveHalf, AdditiveBF16, HeadKeys };

// NaN planted in the inputs (bits; the rule: native/core/ops.h, check_attention). Q: one row. K:
// the last key (hidden by causal from all but the last query) and, when there is more than one
// (batch, kv head), the middle one. V: one element
// of the key at Lk/3 (its additive mask, if any, is -1e4 for the last query: weight 0) and of the
// key Lk - 2. Mask: one additive value. Always batch 0 / kv head 0, so other heads stay finite.
// InfV: +inf in column 6 of the key at Lk/3 and -inf in the same column of the key Lk - 2, +inf in
// column 7 of both: +inf, NaN where the two meet, or nothing where the row sees neither.
// EdgeV (Lk > 32): NaN in column 4 of key 31 and +inf in column 3 of key 32, the last key of one
// key tile and the first of the next (tiles of 16 and 32 keys).
// NegInfK (dense K): feature 0 of every query row made positive and K's feature 0 -inf at key 0
// and key Lk/2 of every (batch, kv head), whose V holds NaN in column 3 and +inf in column 4: keys
// hidden by their own score (the rule's "any score of -inf"), so none of that V may reach o.
enum NanIn { kNanQ = 1, kNanK = 2, kNanV = 4, kNanMask = 8, kInfV = 16, kEdgeV = 32, kNegInfK = 64 };

struct AttnShape {
  int64_t B, Hq, Hkv, Lq, Lk, D;
  mto::DType dtype = mto::DType::Float32;
  KV kv = KV::Dense;
  bool causal = false;
  MaskKind mask = MaskKind::None;
  std::optional<float> scale;
  int nan = 0;  // NanIn bits
  // Attention sinks (float32 [Hq]): 0 none; 1 random logits at twice unit scale, head 0's +6 (it
  // takes most of the weight); 2 as 1 with head 0 NaN, head 1 -inf (no sink) and, when Hq > 2,
  // head 2 +inf (NaN rows).
  int sinks = 0;
  // Key splits of the decode plan (DeviceProfile::attention_splits): 0 as the plan decides for an
  // 8-core GPU; n forces n, so that splits of one key and empty splits (n > Lk) are reached.
  int splits = 0;
  // K of batch 0's first KV head scaled by 2^k_exp before it is quantized: mxfp8 block scales that
  // leave float16's (16) or bfloat16's (-118) range, where the tensorops prefill's 16-bit staging
  // of K gives way to float32 for that head's threadgroups.
  int k_exp = 0;
  // The last key of the last (batch, KV head) scaled by 2^k_exp_last: its blocks are the only ones
  // out of the 16-bit range, in the last key the last causal block visits.
  int k_exp_last = 0;
};

// "<prefix>decode|prefill/<dtype>/<kv>/d<D>/B.Hq.Hkv/Lq.Lk[/causal][/mask_...][/scale][/nan_...]
// [/sinks...][/splitsN]".
std::string attention_case_name(const AttnShape& s, const char* prefix);

// Runs the plan of `tier` for s in the harness (both passes) and compares o, which has q's dtype,
// with the cpu backend's o of that dtype: max |o - ref| <= 2e-5 (1 + |ref|) for float32 q,
// 3e-3 (1 + |ref|) plus one unit in the last place for float16/bfloat16 q (compare_outputs); NaN
// exactly where the cpu has NaN (a NaN case whose reference is not a mix of NaN and finite fails).
CaseResult run_attention_case(const AttnShape& s, const std::string& name, const std::string& variant,
                              mto::Tier tier);

// The cases of one tier: add(s) appends s under `prefix` once (a shape reached twice by the
// suite's loops is run once).
class AttentionCaseList {
 public:
  AttentionCaseList(std::vector<Case>& cases, const char* prefix, mto::Tier tier)
      : cases_(cases), prefix_(prefix), tier_(tier) {}
  void add(const AttnShape& s) {
    const std::string name = attention_case_name(s, prefix_);
    if (!names_.insert(name).second) return;
    const mto::Tier tier = tier_;
    cases_.push_back({name, [=](const std::string& variant) {
                        return run_attention_case(s, name, variant, tier);
                      }});
  }

 private:
  std::vector<Case>& cases_;
  const char* prefix_;
  mto::Tier tier_;
  std::set<std::string> names_;
};

}  // namespace mtoh_driver
