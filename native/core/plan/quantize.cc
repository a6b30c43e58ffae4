// The MX quantize plan (dispatch_plan.h: plan_quantize). Slots and geometry come from
// shaders/quantize_params.h, which the kernel includes too.
#include "../../../shaders/mx_formats.h"
#include "../../../shaders/quantize_params.h"
#include "../dispatch_plan.h"
#include "plan_util.h"

namespace mto::plan {
namespace {

using namespace util;

// Copied byte for byte into the kernel's `constant` argument: the size the MSL side sees.
static_assert(sizeof(MxQuantizeParams) == 16, "MxQuantizeParams layout");

}  // namespace

Dispatch plan_quantize(Format f, DType x, int64_t rows, int64_t cols) {
  const FormatInfo& info = format_info(f);
  if (info.affine) throw Error(code::Format, std::string(info.name) + " has no GPU quantize kernel yet");
  const char* suffix = float_suffix(x);
  if (!suffix) throw Error(code::DType, std::string("cannot quantize ") + dtype_name(x));
  if (cols <= 0 || cols % MTO_MX_BLOCK != 0 || rows <= 0) {
    throw Error(code::Shape, "quantize needs rows > 0 and cols a positive multiple of 32, got [" +
                                 std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
  const int64_t blocks = rows * (cols / MTO_MX_BLOCK);
  check_i32("cols", cols);
  check_i32("rows * cols / 32", blocks);
  check_i32("rows", rows);

  MxQuantizeParams p = {};
  p.cols = int32_t(cols);
  p.blocks_per_row = int32_t(cols / MTO_MX_BLOCK);
  p.total_blocks = int32_t(blocks);

  Dispatch d;
  d.library = "quantize";
  d.kernel = std::string("mx_quantize_") + info.name + "_" + suffix;
  d.threadgroups[0] = ceil_div(blocks, MXQ_SIMDGROUPS_PER_THREADGROUP);
  d.threads_per_threadgroup[0] = 32 * MXQ_SIMDGROUPS_PER_THREADGROUP;
  d.buffers = {{MXQ_BUFFER_X, Arg::X},
               {MXQ_BUFFER_CODES, Arg::Codes},
               {MXQ_BUFFER_SCALES, Arg::Scales},
               {MXQ_BUFFER_PARAMS, Arg::Params}};
  d.params = bytes_of(p);
  d.tier = Tier::Simdgroup;
  return d;
}

}  // namespace mto::plan
