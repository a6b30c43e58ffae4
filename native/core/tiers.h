// Which backend and metal tier open() runs, decided from a Capabilities record alone (no Metal
// calls), so the whole decision table is unit-tested on Linux (test/metal-host.test.ts).
#pragma once
#include <functional>
#include <string>

#include "capabilities.h"

namespace mto {

// What the user asked for: options.backend / METAL_TENSOROPS_BACKEND ("auto", "metal", "cpu")
// and METAL_TENSOROPS_TIER ("auto", "tensorops-mx", "tensorops", "simdgroup", "cpu"). An empty
// string means "auto".
struct TierRequest {
  std::string backend;
  std::string tier;
};

struct TierChoice {
  const char* backend = "cpu";  // "metal" | "cpu"
  Tier tier = Tier::Cpu;
  // TensorOps tier active on a GPU with neural accelerators (gpu_has_neural_accelerators).
  bool neural_accelerators = false;
  // Why a faster tier or backend was not used; "" when nothing faster was dropped. One clause
  // per dropped tier, joined with "; ".
  std::string fallback_reason;
  // The decision depends on a probe that has not run: the host runs that tier's probe, stores it
  // in caps.probe_for(probe_needed) and asks again (select_tier_probing does this loop).
  bool needs_probe = false;
  Tier probe_needed = Tier::Cpu;
};

// Throws Error(E_ARG) for an unknown backend or tier name or a contradictory pair, and
// Error(E_BACKEND) when a forced backend or tier cannot run here (saying why).
TierChoice select_tier(const Capabilities& caps, const TierRequest& req);

// select_tier, running `probe` for each tier it needs (fastest first, and only those it needs:
// once a tier passes, slower tiers are never compiled) and recording results in `caps`.
TierChoice select_tier_probing(Capabilities& caps, const TierRequest& req,
                               const std::function<ProbeResult(Tier)>& probe);

}  // namespace mto
