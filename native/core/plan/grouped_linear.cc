// Plan of groupedLinear (plan/grouped_linear.h).
#include "grouped_linear.h"

#include <algorithm>
#include <string>

#include "../../../shaders/qlinear_params.h"
#include "../formats.h"
#include "kernel_args.h"

namespace mto::plan {

static_assert(sizeof(QLinearGroupedParams) == 32, "QLinearGroupedParams layout");

GroupedLinearPlan plan_grouped_linear(const GroupedLinearParams& p, Format f, int block, DType x, DType y,
                                      Tier tier) {
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
  const FormatInfo& info = format_info(f);
  if (!is_valid_block(f, block)) {
    throw Error(code::Format, std::string(info.name) + " does not use blocks of " + std::to_string(block));
  }
  const char* xt = float_dtype_tag(x);
  const char* yt = float_dtype_tag(y);
  if (!xt || !yt) {
    throw Error(code::DType, std::string("the Metal groupedLinear kernel takes and writes float32, float16 or bfloat16, got x ") +
                                 dtype_name(x) + " and y " + dtype_name(y));
  }
  if (p.T <= 0 || p.T > QLINEAR_GROUPED_MAX_T) {
    throw Error(code::Shape, "the Metal groupedLinear kernel takes 1 to " + std::to_string(QLINEAR_GROUPED_MAX_T) +
                                 " rows (decode batches), got " + std::to_string(p.T));
  }
  if (p.E <= 0 || p.N <= 0 || p.K <= 0 || p.K % 32 != 0 || p.K % block != 0) {
    throw Error(code::Shape, "groupedLinear needs E, N > 0 and K a positive multiple of 32 and of the block (" +
                                 std::to_string(block) + "), got E=" + std::to_string(p.E) + " N=" +
                                 std::to_string(p.N) + " K=" + std::to_string(p.K));
  }
  require_i32("E", p.E);
  require_i32("N", p.N);
  require_i32("K", p.K);
  require_i32("T * K", p.T * p.K);
  require_i32("T * N", p.T * p.N);

  QLinearGroupedParams kp = {};
  kp.T = int32_t(p.T);
  kp.E = int32_t(p.E);
  kp.N = int32_t(p.N);
  kp.K = int32_t(p.K);
  kp.group_size = block;
  kp.slots = int32_t(std::min(p.E, p.T));

  GroupedLinearPlan out;
  out.slots_bytes = uint64_t(kp.slots) * 4 * sizeof(int32_t);
  Dispatch route;
  route.library = "qlinear_grouped";
  route.kernel = "qlinear_grouped_route";
  route.tier = Tier::Simdgroup;  // decode-sized batches: bound by weight bandwidth on every tier
  route.threads_per_threadgroup[0] = QLINEAR_GROUPED_ROUTE_THREADS;
  route.buffers = {{QLINEAR_GROUPED_BUFFER_SIZES, Arg::GroupSizes},
                   {QLINEAR_GROUPED_BUFFER_SLOTS, Arg::GroupSlots},
                   {QLINEAR_GROUPED_BUFFER_STATUS, Arg::Status},
                   {QLINEAR_BUFFER_PARAMS, Arg::Params}};
  route.params = params_bytes(kp);

  Dispatch decode;
  decode.library = "qlinear_grouped";
  const char* out_tag = y == DType::Float32 ? "" : y == DType::Float16 ? "_of16" : "_obf16";
  decode.kernel = std::string("qlinear_grouped_decode_") + info.name + "_" + xt + out_tag;
  decode.tier = Tier::Simdgroup;
  decode.threadgroups[0] = div_up(p.N, QLINEAR_DECODE_SIMDGROUPS * QLINEAR_DECODE_ROWS_PER_SIMDGROUP);
  decode.threadgroups[1] = uint32_t(kp.slots);
  decode.threads_per_threadgroup[0] = 32 * QLINEAR_DECODE_SIMDGROUPS;
  decode.buffers = {{QLINEAR_BUFFER_X, Arg::X},
                    {QLINEAR_BUFFER_W_CODES, Arg::WCodes},
                    {QLINEAR_BUFFER_W_SCALES, Arg::WScales},
                    {QLINEAR_BUFFER_W_BIASES, info.affine ? Arg::WBiases : Arg::Unused},
                    {QLINEAR_GROUPED_BUFFER_SLOTS, Arg::GroupSlots},
                    {QLINEAR_BUFFER_Y, Arg::Y},
                    {QLINEAR_BUFFER_PARAMS, Arg::Params}};
  decode.params = params_bytes(kp);
  out.passes = {std::move(route), std::move(decode)};
  return out;
}

OpStatus grouped_linear_status(const int32_t* status, const GroupedLinearParams& p) {
  if (status[0] == QLINEAR_GROUPED_NEGATIVE) {
    return OpStatus{code::Arg, "groupedLinear: groupSizes[" + std::to_string(status[1]) + "] is " +
                                   std::to_string(status[2]) + "; sizes must be >= 0"};
  }
  if (status[0] == QLINEAR_GROUPED_SUM) {
    const int64_t sum = int64_t(uint64_t(uint32_t(status[2])) | (uint64_t(uint32_t(status[3])) << 32));
    return OpStatus{code::Arg, "groupedLinear: groupSizes add up to " + std::to_string(sum) + "; x has " +
                                   std::to_string(p.T) + " rows"};
  }
  return OpStatus{};
}

}  // namespace mto::plan
