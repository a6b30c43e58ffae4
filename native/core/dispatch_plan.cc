// Dispatch plans (dispatch_plan.h). Buffer indices, geometry constants and parameter structs come
// from the shader headers the kernels include, so host and kernels cannot disagree about them.
#include "dispatch_plan.h"

#include <cstring>
#include <limits>

#include "../../shaders/mx_formats.h"
#include "../../shaders/qlinear_params.h"
#include "../../shaders/quantize_params.h"
#include "error.h"

namespace mto::plan {
namespace {

// The structs are copied byte for byte into the kernel's `constant` argument: 4-byte fields only,
// no padding, the sizes the MSL side sees.
static_assert(sizeof(MxQuantizeParams) == 16, "MxQuantizeParams layout");
static_assert(sizeof(QLinearParams) == 32, "QLinearParams layout");

template <class P>
std::vector<uint8_t> bytes_of(const P& p) {
  std::vector<uint8_t> out(sizeof p);
  std::memcpy(out.data(), &p, sizeof p);
  return out;
}

uint32_t ceil_div(int64_t a, int64_t b) { return uint32_t((a + b - 1) / b); }

// Kernel parameters and indices are 32-bit: refuse shapes they cannot express.
void check_i32(const char* what, int64_t v) {
  if (v < 0 || v > std::numeric_limits<int32_t>::max()) {
    throw Error(code::Shape, std::string(what) + " = " + std::to_string(v) +
                                 " is too large for the Metal kernels' 32-bit indices");
  }
}

const char* dtype_suffix(DType t) {
  switch (t) {
    case DType::Float32: return "f32";
    case DType::Float16: return "f16";
    case DType::BFloat16: return "bf16";
    default: return nullptr;
  }
}

}  // namespace

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
  }
  return "?";
}

Dispatch plan_quantize(Format f, DType x, int64_t rows, int64_t cols) {
  const FormatInfo& info = format_info(f);
  if (info.affine) throw Error(code::Format, std::string(info.name) + " has no GPU quantize kernel yet");
  const char* suffix = dtype_suffix(x);
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

Dispatch plan_linear(Format f, int block, DType x, int64_t M, int64_t N, int64_t K, bool has_bias,
                     Tier tier) {
  const FormatInfo& info = format_info(f);
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
  if (!is_valid_block(f, block)) {
    throw Error(code::Format, std::string(info.name) + " does not use blocks of " + std::to_string(block));
  }
  if (x != DType::Float32) {
    throw Error(code::DType, std::string("the Metal linear kernels take float32 activations, got ") + dtype_name(x));
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
  if (tier != Tier::Simdgroup) {
    d.fallback_reason = std::string("no ") + tier_name(tier) + " linear kernels yet; using the simdgroup kernels";
  }
  const bool decode = M <= QLINEAR_DECODE_MAX_M;
  d.kernel = std::string(decode ? "qlinear_decode_" : "qlinear_gemm_") + info.name + "_f32";
  if (decode) {
    const int rows_per_group = QLINEAR_DECODE_SIMDGROUPS * QLINEAR_DECODE_ROWS_PER_SIMDGROUP;
    d.threadgroups[0] = ceil_div(N, rows_per_group);
    d.threads_per_threadgroup[0] = 32 * QLINEAR_DECODE_SIMDGROUPS;
  } else {
    d.threadgroups[0] = ceil_div(N, QLINEAR_GEMM_BN);
    d.threadgroups[1] = ceil_div(M, QLINEAR_GEMM_BM);
    d.threads_per_threadgroup[0] = 32 * QLINEAR_GEMM_SIMDGROUPS;
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
