// Whether this build has the Metal 4 command path (encode_metal4.mm) and its pipeline compiler
// (pipeline_metal4.mm), and how they are reached.
// Objective-C++ only: include from native/metal/*.mm.
#pragma once
#import <Metal/Metal.h>

#include <memory>
#include <string>

#include "batch_encoder.h"
#include "library.h"

// The SDK must declare Metal 4 (the macOS 26 SDK); with an older one (the macos-14 runner's
// Xcode 15) this build has only the Metal 3 path and device.mm reports no Metal 4 API, so the
// TensorOps tiers are not offered (core/tiers.cc).
#if defined(__MAC_OS_X_VERSION_MAX_ALLOWED) && __MAC_OS_X_VERSION_MAX_ALLOWED >= 260000
#define MTO_HAVE_METAL4 1
#else
#define MTO_HAVE_METAL4 0
#endif

namespace mto::metal {

#if MTO_HAVE_METAL4
// The Metal 4 path. Throws Error(E_BACKEND) when Metal gives no queue, table or residency set.
std::unique_ptr<BatchEncoder> make_metal4_encoder(id<MTLDevice> device, std::shared_ptr<ResidencyTracker> residency)
    API_AVAILABLE(macos(26.0));

// make_metal4_encoder for a process that `@available(macOS 26.0, *)` told "no" although the
// OS detection (core/os_detect.h: macOS 26 shown as the compatibility version 16.0) and
// respondsToSelector: (caps.metal4_api) both say the API is there (os_gate.mm: the one
// call the availability check is silenced for).
std::unique_ptr<BatchEncoder> make_metal4_encoder_past_compat_version(id<MTLDevice> device,
                                                                      std::shared_ptr<ResidencyTracker> residency);

// The pipeline maker of the Metal 4 path's libraries (library.h PipelineMakers): an MTL4Compiler,
// warm-started from the MTL4Archive at `archive_path` and writing it back through an
// MTL4PipelineDataSetSerializer ("" : neither). nullptr when Metal gives no compiler (the Metal 3
// maker makes those pipelines then).
std::unique_ptr<PipelineMaker> make_metal4_pipeline_maker(id<MTLDevice> device, const std::string& archive_path)
    API_AVAILABLE(macos(26.0));

// make_metal4_pipeline_maker past the compatibility version, as make_metal4_encoder_past_compat_version
// (os_gate.mm).
std::unique_ptr<PipelineMaker> make_metal4_pipeline_maker_past_compat_version(id<MTLDevice> device,
                                                                              const std::string& archive_path);
#endif

}  // namespace mto::metal
