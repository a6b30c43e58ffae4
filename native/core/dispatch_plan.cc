// What every dispatch plan shares (dispatch_plan.h): argument names and access, the GEMM tile
// choice, tensor slots. Each family's plan is in plan/<family>.cc.
#include "dispatch_plan.h"

#include <algorithm>

#include "plan/plan_util.h"

namespace mto::plan {

const char* arg_name(Arg a) {
  switch (a) {
    case Arg::Unused: return "unused";
    case Arg::Params: return "params";
    case Arg::X: return "x";
    case Arg::WCodes: return "w.codes";
    case Arg::WScales: return "w.scales";
    case Arg::WBiases: return "w.biases";
    case Arg::Bias: return "bias";
    case Arg::Y: return "y";
    case Arg::Codes: return "codes";
    case Arg::Scales: return "scales";
    case Arg::A: return "a";
    case Arg::B: return "b";
    case Arg::Q: return "q";
    case Arg::K: return "k";
    case Arg::V: return "v";
    case Arg::KScales: return "k.scales";
    case Arg::VScales: return "v.scales";
    case Arg::Mask: return "mask";
    case Arg::O: return "o";
    case Arg::PartialO: return "partial.o";
    case Arg::PartialML: return "partial.ml";
    case Arg::Weight: return "weight";
    case Arg::Positions: return "positions";
    case Arg::Freqs: return "freqs";
    case Arg::Src: return "src";
    case Arg::Dst: return "dst";
    case Arg::Ids: return "ids";
    case Arg::Status: return "status";
    case Arg::GroupSizes: return "group_sizes";
    case Arg::GroupSlots: return "group_slots";
    case Arg::Sinks: return "sinks";
    case Arg::Rows: return "rows";
    case Arg::Scratch: return "scratch";
    case Arg::WTensor: return "w.tensor";
    case Arg::KTensor: return "k.tensor";
  }
  return "?";
}

Access arg_access(Arg a) {
  switch (a) {
    case Arg::Unused:
    case Arg::Params:
      return Access::None;
    case Arg::X:
    case Arg::WCodes:
    case Arg::WScales:
    case Arg::WBiases:
    case Arg::Bias:
    case Arg::A:
    case Arg::B:
    case Arg::Q:
    case Arg::K:
    case Arg::V:
    case Arg::KScales:
    case Arg::VScales:
    case Arg::Mask:
    case Arg::Weight:
    case Arg::Freqs:
    case Arg::Src:
    case Arg::Sinks:
    case Arg::WTensor:  // a tensor argument: its planes are read (encode.mm adds their ranges)
    case Arg::KTensor:
      return Access::Read;
    case Arg::Y:
    case Arg::Codes:
    case Arg::Scales:
    case Arg::O:
    case Arg::PartialO:
    case Arg::PartialML:
    case Arg::Dst:
    case Arg::Ids:
    case Arg::Status:
    case Arg::GroupSizes:
    case Arg::GroupSlots:
    case Arg::Positions:
    case Arg::Rows:
    case Arg::Scratch:
      return Access::Write;
  }
  return Access::Write;  // unknown: the conservative answer
}

bool takes_big_tiles(int64_t batch, int64_t M, int64_t N, const DeviceProfile& device) {
  const int64_t tiles = batch * util::ceil_div(M, kBigTile) * util::ceil_div(N, kBigTile);
  return tiles >= kBigTilesPerCore * std::max(device.gpu_cores, 1);
}

TensorSlot tensor_slot_of(const ScalePlaneLayout& l, uint32_t index, Arg arg, Arg data, Arg scales) {
  TensorSlot t;
  t.index = index;
  t.arg = arg;
  t.data = data;
  t.scales = scales;
  t.data_type = int(l.data);
  t.scale_type = kScalePlaneE8M0;
  t.block[0] = kScalePlaneBlock;
  t.block[1] = 1;
  t.dims[0] = l.cols;
  t.dims[1] = l.rows;
  t.strides[0] = 1;
  t.strides[1] = l.row_stride;
  return t;
}

}  // namespace mto::plan
