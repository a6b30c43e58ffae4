// open()'s backend choice (backend.h open_backend). The decision itself is select_tier's
// (tiers.cc), so it reads the same on every platform; only where the capabilities come from
// differs: a macOS build with Metal asks the GPU (native/metal/backend_open.mm), any other build
// says why Metal cannot exist here, which still lets a forced 'metal' fail with that reason.
#include "backend.h"

#include "error.h"

namespace mto {

#if defined(MTO_WITH_METAL)
namespace metal {
OpenedBackend open_metal_backend(const TierRequest& request, const BackendPtr& cpu);  // backend_open.mm
}
#endif

OpenedBackend open_backend(const TierRequest& request, const BackendPtr& cpu) {
#if defined(MTO_WITH_METAL)
  return metal::open_metal_backend(request, cpu);
#else
  Capabilities caps;
  caps.platform_blocker = "Metal is only available on macOS on Apple silicon; this is " +
                          build_platform();
  const TierChoice choice = select_tier(caps, request);  // throws for a forced metal backend/tier
  return OpenedBackend{cpu, choice.fallback_reason};
#endif
}

}  // namespace mto
