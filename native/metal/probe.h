// Probe-compiling each metal tier and choosing the tier open() runs. Objective-C++ only.
#pragma once
#import <Metal/Metal.h>

#include "core/capabilities.h"
#include "core/tiers.h"

namespace mto::metal {

// Compiles tier `t`'s probe kernel (probe_sources.h: every TensorOps API the tier's libraries
// use) at the tier's MSL version and makes its pipeline. `os` is the running macOS
// (running_os_version), which decides whether that MSL version can be asked for. Failed carries
// the compiler's or Metal's message.
ProbeResult run_probe(id<MTLDevice> device, Tier t, const OsVersion& os);

// select_tier (core/tiers.h) with real probes: only the tiers the decision needs are compiled,
// fastest first. `caps` comes from query_capabilities and receives the probe results.
TierChoice choose_tier(id<MTLDevice> device, Capabilities& caps, const TierRequest& request);

}  // namespace mto::metal
