// One MTLTensor with an E8M0 scale plane over a quantized tensor's codes + scales (qtensor.h).
// The tensor shares the two pooled MTLBuffers (newTensorWithDescriptor:attachments:error:, macOS
// 27), so it costs no copy and no memory; it stays with the QTensor until the tensor is freed,
// resident all that time (residency.h). The tensorops-mx linear kernel takes it as its weight
// argument (a tensor_handle with a tensor_blockwise scale plane): the plan's tensor slot
// (dispatch_plan.h TensorSlot), bound by the Metal 4 path through the argument table
// (BatchEncoder::set_tensor: setResource:atBufferIndex: with its gpuResourceID).
#include "qtensor.h"

#include "buffers.h"
#include "core/scale_plane.h"

namespace mto::metal {

// The SDK must declare the macOS 27 multi-plane API; with an older one (Xcode before the macOS 27
// SDK) this file builds to "planes only".
#if defined(__MAC_OS_X_VERSION_MAX_ALLOWED) && __MAC_OS_X_VERSION_MAX_ALLOWED >= 270000
#define MTO_HAVE_SCALE_PLANES 1
#endif

#ifdef MTO_HAVE_SCALE_PLANES
namespace {

// Held as a plain `id` so the class itself needs no availability; only qtensor.mm creates it.
class ScalePlaneTensor final : public QTensorDeviceView {
 public:
  ScalePlaneTensor(id tensor, std::shared_ptr<ResidencyTracker> residency)
      : tensor_(tensor), residency_(std::move(residency)) {
    residency_->add(tensor_);
  }
  ~ScalePlaneTensor() override { residency_->remove(tensor_); }
  const char* kind() const override { return "mtltensor-scale-plane"; }
  id tensor() const { return tensor_; }  // what a tensor_handle argument binds

 private:
  id tensor_;  // id<MTLTensor>
  std::shared_ptr<ResidencyTracker> residency_;
};

MTLTensorExtents* extents2(NSInteger inner, NSInteger outer) API_AVAILABLE(macos(26.0)) {
  const NSInteger values[2] = {inner, outer};  // innermost first
  return [[MTLTensorExtents alloc] initWithRank:2 values:values];
}

id<MTLTensor> make_tensor(id<MTLDevice> device, const ScalePlaneLayout& l, id<MTLBuffer> codes,
                          id<MTLBuffer> scales) API_AVAILABLE(macos(27.0)) {
  MTLTensorAuxiliaryPlaneDescriptor* scale_plane = [MTLTensorAuxiliaryPlaneDescriptor new];
  scale_plane.dataType = MTLTensorDataTypeMetalFloat8UE8M0;
  scale_plane.blockFactors = extents2(32, 1);
  MTLTensorAuxiliaryPlaneDescriptorMap* planes = [MTLTensorAuxiliaryPlaneDescriptorMap new];
  [planes setDescriptor:scale_plane forPlane:MTLTensorPlaneTypeScales];

  MTLTensorDescriptor* desc = [MTLTensorDescriptor new];
  desc.dimensions = extents2(l.cols, l.rows);
  desc.strides = extents2(1, l.row_stride);
  desc.dataType = static_cast<MTLTensorDataType>(l.data);
  desc.usage = MTLTensorUsageCompute;  // multi-plane tensors refuse MachineLearning usage
  desc.auxiliaryPlanes = planes;

  // Offset 0 in both: a pooled block is a whole MTLBuffer, so the 128-byte rule holds.
  MTLTensorBufferAttachments* attachments = [MTLTensorBufferAttachments new];
  [attachments setBuffer:codes offset:0 forPlane:MTLTensorPlaneTypeData];
  [attachments setBuffer:scales offset:0 forPlane:MTLTensorPlaneTypeScales];
  NSError* error = nil;
  return [device newTensorWithDescriptor:desc attachments:attachments error:&error];
}

}  // namespace
#endif

void attach_scale_plane_tensor(id<MTLDevice> device, Tier tier, std::shared_ptr<ResidencyTracker> residency,
                               QTensor& q) {
  const ScalePlaneLayout l = scale_plane_layout(q.format, q.block, q.shape, tier);
  if (!l.ok) return;
  id<MTLBuffer> codes = mtl_buffer(q.codes.get());
  id<MTLBuffer> scales = mtl_buffer(q.scales.get());
  if (codes == nil || scales == nil) return;
#ifdef MTO_HAVE_SCALE_PLANES
  if (@available(macOS 27.0, *)) {
    id<MTLTensor> t = make_tensor(device, l, codes, scales);
    // nil: Metal refused the descriptor (a rule scale_plane.h does not know); planes only.
    if (t != nil) q.device_view = std::make_shared<ScalePlaneTensor>(t, std::move(residency));
  }
#else
  (void)device;
  (void)residency;
#endif
}

id scale_plane_tensor_for(const QTensor& q, const plan::TensorSlot& slot) {
#ifdef MTO_HAVE_SCALE_PLANES
  const auto* view = dynamic_cast<const ScalePlaneTensor*>(q.device_view.get());
  if (view == nullptr) return nil;
  // The layout the tensor was made with (attach_scale_plane_tensor) against the slot's.
  const ScalePlaneLayout l = scale_plane_layout(q.format, q.block, q.shape, Tier::TensorOpsMx);
  const bool same = l.ok && int(l.data) == slot.data_type && slot.scale_type == kScalePlaneE8M0 &&
                    l.cols == slot.dims[0] && l.rows == slot.dims[1] && slot.strides[0] == 1 &&
                    l.row_stride == slot.strides[1] && slot.block[0] == kScalePlaneBlock && slot.block[1] == 1;
  return same ? view->tensor() : nil;
#else
  (void)q;
  (void)slot;
  return nil;
#endif
}

}  // namespace mto::metal
