// The metal backend (core/backend.h) on one GPU at the tier open() chose.
// Objective-C++ only: include from native/metal/*.mm.
#pragma once
#import <Metal/Metal.h>

#include "core/backend.h"

namespace mto::metal {

BackendPtr make_metal_backend(id<MTLDevice> device, const Capabilities& caps, const TierChoice& choice);

// open_backend's macOS half (backend_open.mm; core/backend_open.cc declares it too, being C++).
OpenedBackend open_metal_backend(const TierRequest& request, const BackendPtr& cpu);

}  // namespace mto::metal
