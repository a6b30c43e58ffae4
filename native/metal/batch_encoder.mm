// Which command path a tier encodes through (batch_encoder.h): the rule is core/command_path.h;
// this file asks the compiler and Metal for its inputs and makes the encoder.
#include "batch_encoder.h"

#include "core/command_path.h"
#include "metal4_path.h"

namespace mto::metal {

std::unique_ptr<BatchEncoder> make_batch_encoder(id<MTLDevice> device, const Capabilities& caps, Tier tier,
                                                 std::shared_ptr<ResidencyTracker> residency, EncoderOrder order) {
  bool available26 = false;
  if (@available(macOS 26.0, *)) available26 = true;
  const CommandPath path = command_path_for(caps, tier, MTO_HAVE_METAL4 != 0, available26);
#if MTO_HAVE_METAL4
  if (path == CommandPath::Metal4) {
    if (@available(macOS 26.0, *)) return make_metal4_encoder(device, std::move(residency));
  }
  if (path == CommandPath::Metal4PastCompat) {
    return make_metal4_encoder_past_compat_version(device, std::move(residency));
  }
#else
  (void)path;  // always Metal3: the SDK has no Metal 4
  (void)residency;
#endif
  return make_metal3_encoder(device, order);
}

}  // namespace mto::metal
