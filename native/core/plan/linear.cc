// The quantized linear plan (dispatch_plan.h: plan_linear): decode GEMV, simdgroup GEMM, the
// tensorops and scale-plane (tensorops-mx) kernels. Slots and geometry come from
// shaders/qlinear_params.h, which the kernels include too.
#include "../../../shaders/mx_formats.h"
#include "../../../shaders/qlinear_params.h"
#include "../dispatch_plan.h"
#include "../scale_plane.h"
#include "plan_util.h"

namespace mto::plan {
namespace {

using namespace util;

// Copied byte for byte into the kernel's `constant` argument: the size the MSL side sees.
static_assert(sizeof(QLinearParams) == 32, "QLinearParams layout");

// The y dtype in the linear kernels' host names, after the x dtype: "" for float32, "_of16" /
// "_obf16" (output float16 / bfloat16); nullptr for a dtype no kernel writes.
const char* linear_out_suffix(DType t) {
  switch (t) {
    case DType::Float32: return "";
    case DType::Float16: return "_of16";
    case DType::BFloat16: return "_obf16";
    default: return nullptr;
  }
}

// Why the tensorops-mx scale-plane kernel cannot run this linear ("" when it can): Metal has
// element types for fp8 e4m3/e5m2 and fp4 e2m1 only, pairs them with half activations only, and
// format tensors need rows of a multiple of 128 bytes (docs/design/METAL.md).
std::string linear_mx_refusal(Format f, DType x, int64_t K) {
  if (f != Format::MXFP8_E4M3 && f != Format::MXFP8_E5M2 && f != Format::MXFP4) {
    return std::string("Metal has no scale-plane element type for ") + format_info(f).name;
  }
  if (x != DType::Float16) {
    return std::string("Metal's scale-plane matmul takes float16 activations, not ") + dtype_name(x);
  }
  const int64_t row_bytes = K * format_info(f).bits / 8;
  if (row_bytes % QLINEAR_MX_ROW_ALIGN != 0) {
    return "weight rows of " + std::to_string(row_bytes) + " bytes are not a multiple of " +
           std::to_string(QLINEAR_MX_ROW_ALIGN);
  }
  return "";
}

}  // namespace

Dispatch plan_linear(Format f, int block, DType x, DType y, int64_t M, int64_t N, int64_t K, bool has_bias,
                     Tier tier, const DeviceProfile& device) {
  const FormatInfo& info = format_info(f);
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
  if (!is_valid_block(f, block)) {
    throw Error(code::Format, std::string(info.name) + " does not use blocks of " + std::to_string(block));
  }
  const char* suffix = float_suffix(x);
  if (!suffix) {
    throw Error(code::DType, std::string("the Metal linear kernels take float32, float16 or bfloat16 x, got ") +
                                 dtype_name(x));
  }
  const char* out = linear_out_suffix(y);
  if (!out) {
    throw Error(code::DType, std::string("the Metal linear kernels write float32, float16 or bfloat16 y, got ") +
                                 dtype_name(y));
  }
  if (M <= 0 || N <= 0 || K <= 0 || K % block != 0 || K % 32 != 0) {
    throw Error(code::Shape, "linear needs M, N > 0 and K a positive multiple of 32 and of the block (" +
                                 std::to_string(block) + "), got M=" + std::to_string(M) +
                                 " N=" + std::to_string(N) + " K=" + std::to_string(K));
  }
  check_i32("M", M);
  check_i32("N", N);
  check_i32("K", K);
  check_i32("M * K", M * K);
  check_i32("M * N", M * N);

  QLinearParams p = {};
  p.M = int32_t(M);
  p.N = int32_t(N);
  p.K = int32_t(K);
  p.group_size = block;
  p.has_bias = has_bias ? 1 : 0;

  Dispatch d;
  d.library = "qlinear";
  d.tier = Tier::Simdgroup;
  const bool decode = M <= QLINEAR_DECODE_MAX_M;
  const std::string tail = std::string(info.name) + "_" + suffix + out;  // format, x dtype, y dtype
  d.kernel = std::string(decode ? "qlinear_decode_" : "qlinear_gemm_") + tail;
  if (tier == Tier::TensorOps || tier == Tier::TensorOpsMx) {
    // The tensorops tier: decode (a GEMV, bandwidth-bound) is the shared qlinear_decode; larger M
    // runs the matmul2d kernel of shaders/qlinear_tensorops.metal (a library compiled at MSL 4.0).
    // tensorops-mx adds scale-plane matmul2d (shaders/qlinear_tensorops_mx.metal, MSL 4.1) where
    // Metal knows the format and the operands fit its rules; the rest runs the tensorops kernels.
    d.tier = Tier::TensorOps;
    const std::string why_not_mx = tier == Tier::TensorOpsMx && !decode ? linear_mx_refusal(f, x, K) : "";
    if (!decode && tier == Tier::TensorOpsMx && why_not_mx.empty()) {
      d.tier = Tier::TensorOpsMx;
      d.library = "qlinear_tensorops_mx";
      d.kernel = "qlinear_tensorops_mx_gemm_" + tail;
    } else if (!decode) {
      d.library = "qlinear_tensorops";
      d.kernel = "qlinear_tensorops_gemm_" + tail;
      if (!why_not_mx.empty()) d.fallback_reason = why_not_mx + "; using the tensorops (dequantizing) kernel";
    }
  } else if (tier != Tier::Simdgroup) {
    d.fallback_reason = std::string("no ") + tier_name(tier) + " linear kernels yet; using the simdgroup kernels";
  }
  if (d.library == "qlinear_tensorops_mx") {
    // matmul2d<..., execution_simdgroups<QLINEAR_MX_SIMDGROUPS>>.
    d.threadgroups[0] = ceil_div(N, QLINEAR_MX_BN);
    d.threadgroups[1] = ceil_div(M, QLINEAR_MX_BM);
    d.threads_per_threadgroup[0] = 32 * QLINEAR_MX_SIMDGROUPS;
  } else if (d.library == "qlinear_tensorops") {
    // matmul2d<..., execution_simdgroups<QLINEAR_TOPS_SIMDGROUPS>> needs exactly that many SIMD-groups.
    static_assert(QLINEAR_TOPS_BIG == kBigTile, "the kernels' big tile is the plans'");
    const int64_t big = QLINEAR_TOPS_BIG;
    const bool big_tiles = (x == DType::Float16 || x == DType::BFloat16) && takes_big_tiles(1, M, N, device);
    if (big_tiles) d.kernel += "_t64";
    d.threadgroups[0] = ceil_div(N, big_tiles ? big : QLINEAR_TOPS_BN);
    d.threadgroups[1] = ceil_div(M, big_tiles ? big : QLINEAR_TOPS_BM);
    d.threads_per_threadgroup[0] = 32 * QLINEAR_TOPS_SIMDGROUPS;
  } else if (decode) {
    const int rows_per_group = QLINEAR_DECODE_SIMDGROUPS * QLINEAR_DECODE_ROWS_PER_SIMDGROUP;
    d.threadgroups[0] = ceil_div(N, rows_per_group);
    d.threads_per_threadgroup[0] = 32 * QLINEAR_DECODE_SIMDGROUPS;
  } else {
    d.threadgroups[0] = ceil_div(N, QLINEAR_GEMM_BN);
    d.threadgroups[1] = ceil_div(M, QLINEAR_GEMM_BM);
    d.threads_per_threadgroup[0] = 32 * QLINEAR_GEMM_SIMDGROUPS;
  }
  if (d.library == "qlinear_tensorops_mx") {
    // The weight is one tensor argument: the MTLTensor with an E8M0 scale plane the host made over
    // w's codes and scales (core/scale_plane.h, native/metal/qtensor.mm), [N, K] seen innermost
    // first as K columns (blocks of 32) by N rows.
    const ScalePlaneLayout l = scale_plane_layout(f, block, Shape{N, K}, Tier::TensorOpsMx);
    if (!l.ok) throw Error(code::Format, "internal: the tensorops-mx weight has no scale-plane layout: " + l.reason);
    d.tensors = {tensor_slot_of(l, QLINEAR_BUFFER_W_CODES)};  // the weight's slot: the whole tensor, planes and all
    d.buffers = {{QLINEAR_BUFFER_X, Arg::X},
                 {QLINEAR_BUFFER_BIAS, has_bias ? Arg::Bias : Arg::Unused},
                 {QLINEAR_BUFFER_Y, Arg::Y},
                 {QLINEAR_BUFFER_PARAMS, Arg::Params}};
    d.params = bytes_of(p);
    return d;
  }
  d.buffers = {{QLINEAR_BUFFER_X, Arg::X},
               {QLINEAR_BUFFER_W_CODES, Arg::WCodes},
               {QLINEAR_BUFFER_W_SCALES, Arg::WScales},
               {QLINEAR_BUFFER_W_BIASES, info.affine ? Arg::WBiases : Arg::Unused},
               {QLINEAR_BUFFER_BIAS, has_bias ? Arg::Bias : Arg::Unused},
               {QLINEAR_BUFFER_Y, Arg::Y},
               {QLINEAR_BUFFER_PARAMS, Arg::Params}};
  d.params = bytes_of(p);
  return d;
}

}  // namespace mto::plan
