// Plan of groupedLinear (plan/grouped_linear.h).
#include "grouped_linear.h"

#include <algorithm>
#include <string>

#include "../../../shaders/qlinear_params.h"
#include "../formats.h"
#include "kernel_args.h"

namespace mto::plan {

static_assert(sizeof(QLinearGroupedParams) == 32, "QLinearGroupedParams layout");

namespace {

// What differs between quantized and dense w: the kernel names and the w slots.
struct WeightKind {
  bool quantized;
  Format format;  // quantized
  int block;      // quantized
  DType dense;    // dense
};

GroupedLinearPlan plan_grouped(const GroupedLinearParams& p, const WeightKind& w, DType x, DType y, Tier tier) {
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
  const char* xt = float_dtype_tag(x);
  const char* yt = float_dtype_tag(y);
  if (!xt || !yt) {
    throw Error(code::DType, std::string("the Metal groupedLinear kernel takes and writes float32, float16 or bfloat16, got x ") +
                                 dtype_name(x) + " and y " + dtype_name(y));
  }
  const char* wt = w.quantized ? nullptr : float_dtype_tag(w.dense);
  if (w.quantized) {
    if (!is_valid_block(w.format, w.block)) {
      throw Error(code::Format, std::string(format_info(w.format).name) + " does not use blocks of " +
                                    std::to_string(w.block));
    }
  } else if (!wt) {
    throw Error(code::DType, std::string("the Metal groupedLinear kernel reads dense w of float32, float16 or bfloat16, got ") +
                                 dtype_name(w.dense));
  }
  if (p.T <= 0 || p.E <= 0 || p.N <= 0 || p.K <= 0) {
    throw Error(code::Shape, "the Metal groupedLinear kernels need T, E, N and K > 0, got T=" + std::to_string(p.T) +
                                 " E=" + std::to_string(p.E) + " N=" + std::to_string(p.N) + " K=" + std::to_string(p.K));
  }
  if (w.quantized && (p.K % 32 != 0 || p.K % w.block != 0)) {
    throw Error(code::Shape, "quantized groupedLinear needs K a multiple of 32 and of the block (" +
                                 std::to_string(w.block) + "), got K=" + std::to_string(p.K));
  }
  require_i32("T", p.T);
  require_i32("E", p.E);
  require_i32("N", p.N);
  require_i32("K", p.K);
  require_i32("T * K", p.T * p.K);
  require_i32("T * N", p.T * p.N);
  // Decode-sized batches of quantized w stream each expert's weights once for all of its rows;
  // prefill, and dense w at any T, run the tiled kernel over slots of at most BM rows.
  const bool decode = w.quantized && p.T <= QLINEAR_GROUPED_MAX_T;
  const int64_t slots = decode ? std::min(p.E, p.T) : (p.T + QLINEAR_GEMM_BM - 1) / QLINEAR_GEMM_BM + std::min(p.E, p.T);
  require_i32("slots", slots);

  QLinearGroupedParams kp = {};
  kp.T = int32_t(p.T);
  kp.E = int32_t(p.E);
  kp.N = int32_t(p.N);
  kp.K = int32_t(p.K);
  kp.group_size = w.quantized ? w.block : 32;
  kp.slots = int32_t(slots);
  kp.block_rows = decode ? 0 : QLINEAR_GEMM_BM;

  GroupedLinearPlan out;
  out.slots_bytes = uint64_t(slots) * 4 * sizeof(int32_t);
  Dispatch route;
  route.library = "qlinear_grouped";
  route.kernel = "qlinear_grouped_route";
  route.tier = Tier::Simdgroup;  // every tier runs these simdgroup-tier kernels
  route.threads_per_threadgroup[0] = QLINEAR_GROUPED_ROUTE_THREADS;
  route.buffers = {{QLINEAR_GROUPED_BUFFER_SIZES, Arg::GroupSizes},
                   {QLINEAR_GROUPED_BUFFER_SLOTS, Arg::GroupSlots},
                   {QLINEAR_GROUPED_BUFFER_STATUS, Arg::Status},
                   {QLINEAR_BUFFER_PARAMS, Arg::Params}};
  route.params = params_bytes(kp);

  Dispatch work;
  work.library = "qlinear_grouped";
  work.tier = Tier::Simdgroup;
  const char* out_tag = y == DType::Float32 ? "" : y == DType::Float16 ? "_of16" : "_obf16";
  if (w.quantized) {
    const FormatInfo& info = format_info(w.format);
    work.kernel = std::string(decode ? "qlinear_grouped_decode_" : "qlinear_grouped_gemm_") + info.name + "_" + xt + out_tag;
    work.buffers = {{QLINEAR_BUFFER_X, Arg::X},
                    {QLINEAR_BUFFER_W_CODES, Arg::WCodes},
                    {QLINEAR_BUFFER_W_SCALES, Arg::WScales},
                    {QLINEAR_BUFFER_W_BIASES, info.affine ? Arg::WBiases : Arg::Unused},
                    {QLINEAR_GROUPED_BUFFER_SLOTS, Arg::GroupSlots},
                    {QLINEAR_BUFFER_Y, Arg::Y},
                    {QLINEAR_BUFFER_PARAMS, Arg::Params}};
  } else {
    work.kernel = std::string("qlinear_grouped_gemm_dense_") + wt + "_" + xt + out_tag;
    work.buffers = {{QLINEAR_BUFFER_X, Arg::X},
                    {QLINEAR_BUFFER_W_CODES, Arg::Weight},
                    {QLINEAR_GROUPED_BUFFER_SLOTS, Arg::GroupSlots},
                    {QLINEAR_BUFFER_Y, Arg::Y},
                    {QLINEAR_BUFFER_PARAMS, Arg::Params}};
  }
  if (decode) {
    work.threadgroups[0] = div_up(p.N, QLINEAR_DECODE_SIMDGROUPS * QLINEAR_DECODE_ROWS_PER_SIMDGROUP);
    work.threads_per_threadgroup[0] = 32 * QLINEAR_DECODE_SIMDGROUPS;
  } else {
    work.threadgroups[0] = div_up(p.N, QLINEAR_GEMM_BN);
    work.threads_per_threadgroup[0] = 32 * QLINEAR_GEMM_SIMDGROUPS;
  }
  work.threadgroups[1] = uint32_t(slots);
  work.params = params_bytes(kp);
  out.passes = {std::move(route), std::move(work)};
  return out;
}

}  // namespace

GroupedLinearPlan plan_grouped_linear(const GroupedLinearParams& p, Format f, int block, DType x, DType y,
                                      Tier tier) {
  return plan_grouped(p, WeightKind{true, f, block, DType::Float32}, x, y, tier);
}

GroupedLinearPlan plan_grouped_linear_dense(const GroupedLinearParams& p, DType w, DType x, DType y, Tier tier) {
  return plan_grouped(p, WeightKind{false, Format::MXFP4, 32, w}, x, y, tier);
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
