// The scale-plane layout rules (scale_plane.h).
#include "scale_plane.h"

namespace mto {
namespace {

ScalePlaneData data_type_of(Format f) {
  switch (f) {
    case Format::MXFP8_E4M3: return ScalePlaneData::Fp8E4M3;
    case Format::MXFP8_E5M2: return ScalePlaneData::Fp8E5M2;
    case Format::MXFP4: return ScalePlaneData::Fp4E2M1;
    default: return ScalePlaneData::None;
  }
}

ScalePlaneLayout refuse(std::string reason) {
  ScalePlaneLayout l;
  l.reason = std::move(reason);
  return l;
}

}  // namespace

ScalePlaneLayout scale_plane_layout(Format f, int block, const Shape& shape, Tier tier) {
  // Scale planes and the kernels that read them exist only at MSL 4.1 (macOS 27).
  if (tier != Tier::TensorOpsMx) return refuse(std::string("tier '") + tier_name(tier) + "' has no scale planes");
  const ScalePlaneData data = data_type_of(f);
  if (data == ScalePlaneData::None) {
    return refuse(std::string("format '") + format_info(f).name + "' has no Metal tensor data type");
  }
  if (block != 32) return refuse("block " + std::to_string(block) + " is not the scale plane's block 32");
  if (shape.empty() || shape_numel(shape) == 0) return refuse("an empty or rank-0 tensor has no scale plane");
  ScalePlaneLayout l;
  l.data = data;
  l.cols = shape.back();
  l.rows = shape_numel(shape) / l.cols;
  l.row_stride = l.cols;
  if (l.cols % 32 != 0) return refuse("the last dimension " + std::to_string(l.cols) + " is not a multiple of 32");
  const int64_t row_bytes = l.cols * format_info(f).bits / 8;
  if (row_bytes % 128 != 0) {
    return refuse("a row is " + std::to_string(row_bytes) + " bytes, not a multiple of 128");
  }
  l.ok = true;
  return l;
}

}  // namespace mto
