// open()'s choice on a macOS build (core/backend_open.cc calls this): describe the GPU, let
// select_tier decide with real probes (probe.mm: each tier's tiny kernel is compiled, fastest
// first, and a failing probe drops one tier with the compiler's message as the reason), then
// make the metal backend at that tier, or hand back the cpu backend with the reason.
#include "backend.h"
#include "device.h"
#include "probe.h"

namespace mto::metal {

OpenedBackend open_metal_backend(const TierRequest& request, const BackendPtr& cpu) {
  // A forced cpu backend or tier never touches Metal (no device, no probe compiles).
  const bool cpu_forced = request.backend == "cpu" || request.tier == "cpu";
  id<MTLDevice> device = cpu_forced ? nil : pick_device();
  Capabilities caps = cpu_forced ? Capabilities{} : query_capabilities(device);
  const TierChoice choice = choose_tier(device, caps, request);  // throws for a forced tier
  if (choice.tier == Tier::Cpu) return OpenedBackend{cpu, choice.fallback_reason};
  return OpenedBackend{make_metal_backend(device, caps, choice), choice.fallback_reason};
}

}  // namespace mto::metal
