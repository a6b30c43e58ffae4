// Quantized tensors on the metal backend as Metal sees them: where the tier and layout allow
// (core/scale_plane.h), one MTLTensor with an E8M0 scale plane over the tensor's own codes and
// scales buffers, kept in QTensor::device_view. Objective-C++ only: include from native/metal/*.mm.
#pragma once
#import <Metal/Metal.h>

#include <memory>

#include "core/capabilities.h"
#include "core/dispatch_plan.h"
#include "core/tensor.h"
#include "residency.h"

namespace mto::metal {

// Attaches the MTLTensor view to q when `tier`, q's format and shape, the running macOS (27+)
// and the SDK this was built with (macOS 27+) allow; otherwise leaves q as its planes. Never
// throws: the planes stay what every kernel binds either way. The tensor is added to `residency`
// once, and removed when q lets it go.
void attach_scale_plane_tensor(id<MTLDevice> device, Tier tier, std::shared_ptr<ResidencyTracker> residency,
                               QTensor& q);

// The MTLTensor (an id<MTLTensor>) attached to q, when it has one and its descriptor is the one
// `slot` declares (data type, extents, strides, scale plane block): what a plan's tensor argument
// binds. nil otherwise (no view: older macOS or SDK, Metal refused the descriptor; or another
// layout), and the op plans the kernels that read the planes instead.
id scale_plane_tensor_for(const QTensor& q, const plan::TensorSlot& slot);

}  // namespace mto::metal
