// Which command path a tier encodes through (batch_encoder.h).
#include "batch_encoder.h"

#include "metal4_path.h"

namespace mto::metal {

std::unique_ptr<BatchEncoder> make_batch_encoder(id<MTLDevice> device, const Capabilities& caps, Tier tier,
                                                 std::shared_ptr<ResidencyTracker> residency) {
  const bool tensorops = tier == Tier::TensorOps || tier == Tier::TensorOpsMx;
#if MTO_HAVE_METAL4
  // core/tiers.cc offers the TensorOps tiers only where caps.metal4_api holds; the check here
  // keeps a forced path from ever sending a Metal 4 message the framework does not answer.
  if (tensorops && caps.metal4_api) {
    if (@available(macOS 26.0, *)) return make_metal4_encoder(device, std::move(residency));
    if (caps.os.at_least(26)) return make_metal4_encoder_past_compat_version(device, std::move(residency));
  }
#else
  (void)caps;
  (void)residency;
#endif
  (void)tensorops;
  return make_metal3_encoder(device);
}

}  // namespace mto::metal
