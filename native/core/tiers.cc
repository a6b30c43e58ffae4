// Tier rules (docs/design/ARCHITECTURE.md "Metal backend tiers", METAL.md "Capability detection"):
//   tensorops-mx  macOS 27 + family Metal4 + its probe and the tensorops probe
//                 (MSL 4.1 scale planes and cooperative left inputs, plus the MSL 4.0 libraries)
//                 + the scale-plane tensor API and the Metal 4 API below
//   tensorops     macOS 26.2 + family Metal4 + probe       (MSL 4.0 matmul2d, reduce_rows, ...)
//                 + the Metal 4 command API (MTL4CommandQueue, argument tables, residency sets),
//                 which these tiers encode through (native/metal/encode_metal4.mm)
//   simdgroup     family Apple7 + probe                    (simdgroup_matrix, M1 and later)
//   cpu           otherwise, or Rosetta, or no device
// plus one policy: the TensorOps tiers are the default only on GPUs with neural accelerators
// (M5-class). On M1-M4 TensorOps run as a shader fallback and llama.cpp measured no gain (M4) or
// -5% (M2 Ultra), so it keeps simdgroup there (ggml-metal-device.m disables its tensor path
// unless the name says M5/M6/A19/A20); we keep simdgroup until we measure otherwise.
// METAL_TENSOROPS_TIER overrides the policy but never a hard requirement. The macOS version is the
// running system's real one (native/metal/device.h), never `@available`'s answer alone.
#include "tiers.h"

#include <vector>

#include "error.h"

namespace mto {
namespace {

enum class GateKind { Ok, OldOs, Unsupported, Policy };
struct Gate {
  GateKind kind = GateKind::Ok;
  std::string why;
};

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::string gpu_label(const Capabilities& caps) {
  return caps.device_name.empty() ? std::string("the GPU") : "GPU " + quoted(caps.device_name);
}

// Why the metal backend cannot run at all, or "" when it can.
std::string metal_blocker(const Capabilities& caps) {
  if (!caps.platform_blocker.empty()) return caps.platform_blocker;
  if (caps.rosetta) {
    return "this process runs under Rosetta 2 translation (an x86-64 Node.js on Apple silicon); "
           "the metal backend needs a native arm64 Node.js";
  }
  if (!caps.has_device) {
    return "no Metal device: MTLCreateSystemDefaultDevice and MTLCopyAllDevices returned none";
  }
  if (caps.apple_family < 7) {
    const std::string has = caps.apple_family > 0
                                ? "supports GPU family Apple" + std::to_string(caps.apple_family) + " only"
                                : "supports no Apple GPU family";
    return gpu_label(caps) + " " + has +
           "; the metal backend needs Apple7 (M1) or later for simdgroup_matrix (virtual Macs, "
           "such as GitHub-hosted runners, report an Apple5-class 'Apple Paravirtual device')";
  }
  return "";
}

Gate os_gate(const Capabilities& caps, int major, int minor) {
  if (caps.os.at_least(major, minor)) return {};
  return {GateKind::OldOs, "needs macOS " + std::to_string(major) + "." + std::to_string(minor) +
                               " or later (this is macOS " + os_version_string(caps.os) + ")"};
}

// The non-probe requirements of a metal tier, assuming metal_blocker passed.
Gate tier_gate(const Capabilities& caps, Tier t, bool apply_policy) {
  if (t == Tier::Simdgroup) return {};  // Apple7, checked by metal_blocker
  const Gate os = t == Tier::TensorOpsMx ? os_gate(caps, 27, 0) : os_gate(caps, 26, 2);
  if (os.kind != GateKind::Ok) return os;
  if (!caps.metal4_family) {
    return {GateKind::Unsupported, gpu_label(caps) + " does not support MTLGPUFamilyMetal4"};
  }
  // The OS version says what should be there; respondsToSelector: says what is (a version read
  // wrongly, core/os_detect.h, must not send a message the framework does not answer).
  if (!caps.metal4_api) {
    return {GateKind::Unsupported, "the Metal framework has no Metal 4 command API (MTLDevice "
                                   "does not respond to newMTL4CommandQueue), or this addon was "
                                   "built with an SDK older than macOS 26's"};
  }
  if (t == Tier::TensorOpsMx && !caps.scale_plane_api) {
    return {GateKind::Unsupported, "the Metal framework has no scale-plane tensors (no class "
                                   "MTLTensorAuxiliaryPlaneDescriptor)"};
  }
  if (apply_policy && !gpu_has_neural_accelerators(caps)) {
    return {GateKind::Policy,
            gpu_label(caps) + " has no neural accelerators (not Apple10/M5-class), where "
            "TensorOps run as a shader fallback that llama.cpp measured no faster than simdgroup "
            "(M4: no gain, M2 Ultra: -5%); METAL_TENSOROPS_TIER=" + tier_name(t) +
            " uses it anyway"};
  }
  return {};
}

bool is_tensorops(Tier t) { return t == Tier::TensorOps || t == Tier::TensorOpsMx; }

// The probes tier `t` needs, in the order they run: tensorops-mx also runs the tensorops tier's
// MSL 4.0 libraries (every op the scale planes do not cover), so it needs that probe first.
std::vector<Tier> probes_of(Tier t) {
  if (t == Tier::TensorOpsMx) return {Tier::TensorOps, Tier::TensorOpsMx};
  return {t};
}

// Why tier `t` cannot run when the probe of `probed` failed. `repeat`: the message of a probe of
// another tier is given here too (a forced tier), else left to that tier's own clause, which
// auto_tier adds next.
std::string probe_failure(Tier t, Tier probed, const ProbeResult& p, bool repeat) {
  if (probed == t) return "its probe kernel failed: " + p.message;
  const std::string clause = std::string("the ") + tier_name(probed) + " probe kernel it also needs failed";
  return repeat ? clause + ": " + p.message : clause + " (below)";
}

TierChoice on_metal(const Capabilities& caps, Tier t) {
  TierChoice c;
  c.backend = "metal";
  c.tier = t;
  c.neural_accelerators = is_tensorops(t) && gpu_has_neural_accelerators(caps);
  return c;
}

TierChoice on_cpu(std::string reason) {
  TierChoice c;
  c.fallback_reason = std::move(reason);
  return c;
}

TierChoice need_probe(Tier t) {
  TierChoice c;
  c.needs_probe = true;
  c.probe_needed = t;
  return c;
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : "; ") + p;
  return s;
}

TierChoice forced_tier(const Capabilities& caps, Tier t) {
  const std::string prefix = "METAL_TENSOROPS_TIER=" + std::string(tier_name(t)) + " cannot run here: ";
  if (std::string why = metal_blocker(caps); !why.empty()) throw Error(code::Backend, prefix + why);
  const Gate g = tier_gate(caps, t, /*apply_policy=*/false);
  if (g.kind != GateKind::Ok) throw Error(code::Backend, prefix + g.why);
  for (Tier probed : probes_of(t)) {
    const ProbeResult& p = caps.probe_for(probed);
    if (p.state == ProbeResult::State::NotRun) return need_probe(probed);
    if (p.state == ProbeResult::State::Failed) {
      throw Error(code::Backend, prefix + probe_failure(t, probed, p, /*repeat=*/true));
    }
  }
  return on_metal(caps, t);
}

TierChoice auto_tier(const Capabilities& caps, bool metal_required) {
  if (std::string why = metal_blocker(caps); !why.empty()) {
    if (metal_required) {
      throw Error(code::Backend, "backend 'metal' was asked for but is not available: " + why);
    }
    return on_cpu(why);
  }
  std::vector<std::string> dropped;
  std::string tensorops_os_reason;  // reported only if it leaves neural accelerators unused
  for (Tier t : {Tier::TensorOpsMx, Tier::TensorOps, Tier::Simdgroup}) {
    const Gate g = tier_gate(caps, t, /*apply_policy=*/true);
    if (g.kind == GateKind::OldOs) {
      // A tier the OS is too old for is not a fallback on its own; it is only worth saying when
      // the GPU has neural accelerators that no tier will use (an M5 on macOS 26.0/26.1).
      if (t == Tier::TensorOps) tensorops_os_reason = std::string(tier_name(t)) + ": " + g.why;
      continue;
    }
    if (g.kind != GateKind::Ok) {
      dropped.push_back(std::string(tier_name(t)) + ": " + g.why);
      continue;
    }
    bool probes_ok = true;
    for (Tier probed : probes_of(t)) {
      const ProbeResult& p = caps.probe_for(probed);
      if (p.state == ProbeResult::State::NotRun) return need_probe(probed);
      if (p.state == ProbeResult::State::Failed) {
        dropped.push_back(std::string(tier_name(t)) + ": " + probe_failure(t, probed, p, /*repeat=*/false));
        probes_ok = false;
        break;
      }
    }
    if (!probes_ok) continue;
    TierChoice c = on_metal(caps, t);
    if (!is_tensorops(t) && !tensorops_os_reason.empty() && gpu_has_neural_accelerators(caps)) {
      dropped.push_back(tensorops_os_reason + "; the GPU's neural accelerators stay unused");
    }
    c.fallback_reason = join(dropped);
    return c;
  }
  const std::string why = "no metal tier can run here (" + join(dropped) + ")";
  if (metal_required) {
    throw Error(code::Backend, "backend 'metal' was asked for but is not available: " + why);
  }
  return on_cpu(why);
}

}  // namespace

TierChoice select_tier(const Capabilities& caps, const TierRequest& req) {
  const std::string backend = req.backend.empty() ? "auto" : req.backend;
  const std::string tier = req.tier.empty() ? "auto" : req.tier;
  if (backend != "auto" && backend != "metal" && backend != "cpu") {
    throw Error(code::Arg, "backend (METAL_TENSOROPS_BACKEND) must be 'auto', 'metal' or 'cpu'; got " +
                               quoted(backend));
  }
  Tier forced = Tier::Cpu;
  if (tier != "auto" && !parse_tier(tier, &forced)) {
    throw Error(code::Arg, "METAL_TENSOROPS_TIER must be 'auto', 'tensorops-mx', 'tensorops', "
                           "'simdgroup' or 'cpu'; got " + quoted(tier));
  }
  if (tier != "auto" && ((backend == "cpu") != (forced == Tier::Cpu)) && backend != "auto") {
    throw Error(code::Arg, "METAL_TENSOROPS_TIER=" + tier + " contradicts backend " + quoted(backend));
  }
  if (backend == "cpu" || (tier != "auto" && forced == Tier::Cpu)) return on_cpu("");
  if (tier != "auto") return forced_tier(caps, forced);
  return auto_tier(caps, backend == "metal");
}

TierChoice select_tier_probing(Capabilities& caps, const TierRequest& req,
                               const std::function<ProbeResult(Tier)>& probe) {
  for (;;) {
    TierChoice c = select_tier(caps, req);
    if (!c.needs_probe) return c;
    ProbeResult r = probe(c.probe_needed);
    // A probe that reports NotRun would loop forever; count it as a failure instead.
    if (r.state == ProbeResult::State::NotRun) {
      r.state = ProbeResult::State::Failed;
      r.message = "the probe did not run";
    }
    caps.probe_for(c.probe_needed) = r;
  }
}

}  // namespace mto
