// Whether a quantized tensor's existing planes (codes row-major, one E8M0 scale byte per block of
// 32 along a row) can also be seen as ONE Metal tensor with a scale plane (macOS 27:
// MTLTensorDescriptor.auxiliaryPlanes), and with which extents. Backend-neutral so the whole rule
// table runs on Linux (test/scale-plane.test.ts); native/metal/qtensor.mm creates the MTLTensor.
//
// Rules, from Apple's macOS 27 MTLTensor.h (see docs/design/METAL.md "Scale planes"):
//   - data types: MetalFloat8E4M3 (mxfp8), MetalFloat8E5M2 (mxfp8_e5m2), MetalFloat4E2M1 (mxfp4);
//     the scales plane only takes MetalFloat8UE8M0 with block factors {32, 1, ...}; no other of
//     our formats has a Metal data type (mxfp6, the affine int formats).
//   - extents innermost first, strides[0] = 1; a multi-plane tensor is not rank 0; each dimension
//     divisible by its block factor; for these data types dims[0] a multiple of 32 and every
//     stride but the first a multiple of 128 bytes; plane offsets 128-byte aligned (ours are 0).
//   - multi-plane tensors take no MachineLearning usage (we ask for Compute).
// Inferred, not stated by Apple: the scale plane's row stride is the data row stride divided by
// the block factor (dense [rows, cols / 32] bytes, our layout) — the same inference the
// tensorops-mx kernel's inline views rely on (test/msl/README.md).
#pragma once
#include <cstdint>
#include <string>

#include "capabilities.h"
#include "formats.h"
#include "tensor.h"

namespace mto {

// The Metal element type of the data plane (raw MTLTensorDataType values, docs/design/METAL.md).
enum class ScalePlaneData : int { None = 0, Fp8E5M2 = 141, Fp8E4M3 = 142, Fp4E2M1 = 148 };
// The scale plane's: MTLTensorDataTypeMetalFloat8UE8M0, blocks of 32 along dimension 0.
constexpr int kScalePlaneE8M0 = 145;
constexpr int kScalePlaneBlock = 32;

struct ScalePlaneLayout {
  bool ok = false;
  std::string reason;  // why not, when !ok
  ScalePlaneData data = ScalePlaneData::None;
  // The 2-D view [rows, cols] (leading dimensions folded into rows), innermost first.
  int64_t cols = 0, rows = 0;
  int64_t row_stride = 0;  // data plane, in elements (packed fp4 counts elements, not bytes)
};

ScalePlaneLayout scale_plane_layout(Format f, int block, const Shape& shape, Tier tier);

}  // namespace mto
