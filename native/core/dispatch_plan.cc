// Dispatch plans (dispatch_plan.h). Buffer indices, geometry constants and parameter structs come
// from the shader headers the kernels include, so host and kernels cannot disagree about them.
#include "dispatch_plan.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "../../shaders/attention_params.h"
#include "../../shaders/matmul_params.h"
#include "../../shaders/mx_formats.h"
#include "../../shaders/qlinear_params.h"
#include "../../shaders/quantize_params.h"
#include "error.h"
#include "scale_plane.h"

namespace mto::plan {
namespace {

// The structs are copied byte for byte into the kernel's `constant` argument: 4-byte fields only,
// no padding, the sizes the MSL side sees.
static_assert(sizeof(MxQuantizeParams) == 16, "MxQuantizeParams layout");
static_assert(sizeof(QLinearParams) == 32, "QLinearParams layout");
static_assert(sizeof(AttentionKernelParams) == 76, "AttentionKernelParams layout");
static_assert(sizeof(MatmulKernelParams) == 24, "MatmulKernelParams layout");

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

bool takes_big_tiles(int64_t batch, int64_t M, int64_t N, const DeviceProfile& device) {
  const int64_t tiles = batch * ceil_div(M, kBigTile) * ceil_div(N, kBigTile);
  return tiles >= kBigTilesPerCore * std::max(device.gpu_cores, 1);
}

Dispatch plan_linear(Format f, int block, DType x, DType y, int64_t M, int64_t N, int64_t K, bool has_bias,
                     Tier tier, const DeviceProfile& device) {
  const FormatInfo& info = format_info(f);
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
  if (!is_valid_block(f, block)) {
    throw Error(code::Format, std::string(info.name) + " does not use blocks of " + std::to_string(block));
  }
  const char* suffix = dtype_suffix(x);
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

Dispatch plan_matmul(DType a, DType b, DType y, int64_t batch, int64_t M, int64_t N, int64_t K,
                     bool b_batched, Tier tier, const DeviceProfile& device) {
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
  const char* suffix = dtype_suffix(a);
  if (!suffix || a != b) {
    throw Error(code::DType, std::string("the Metal matmul kernels take a and b of one dtype (float32, float16 or "
                                         "bfloat16), got a ") + dtype_name(a) + " and b " + dtype_name(b));
  }
  // Each instance writes its operands' dtype, the only one check_matmul gives the output.
  if (y != a) {
    throw Error(code::DType, std::string("the Metal matmul kernels write the operands' dtype ") + dtype_name(a) +
                                 ", not " + dtype_name(y));
  }
  if (batch <= 0 || M <= 0 || N <= 0 || K <= 0) {
    throw Error(code::Shape, "matmul needs batch, M, N, K > 0, got batch=" + std::to_string(batch) +
                                 " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K));
  }
  check_i32("batch", batch);
  check_i32("M * K", M * K);
  check_i32("K * N", K * N);
  check_i32("M * N", M * N);

  MatmulKernelParams p = {};
  p.M = int32_t(M);
  p.N = int32_t(N);
  p.K = int32_t(K);
  p.b_batched = b_batched ? 1 : 0;

  Dispatch d;
  if (tier == Tier::Simdgroup) {
    d.library = "matmul";
    d.tier = Tier::Simdgroup;
    static_assert(MATMUL_GEMM_BIG == kBigTile, "the kernels' big tile is the plans'");
    const int64_t big = MATMUL_GEMM_BIG;
    const bool big_tiles = takes_big_tiles(batch, M, N, device);
    d.kernel = std::string("matmul_gemm_") + suffix + (big_tiles ? "_t64" : "");
    d.threadgroups[0] = ceil_div(N, big_tiles ? big : MATMUL_GEMM_BN);
    d.threadgroups[1] = ceil_div(M, big_tiles ? big : MATMUL_GEMM_BM);
    d.threads_per_threadgroup[0] = 32 * MATMUL_GEMM_SIMDGROUPS;
  } else {
    // TensorOps and TensorOpsMx: the MX scale planes concern quantized operands only.
    d.library = "matmul_tensorops";
    d.tier = Tier::TensorOps;
    static_assert(MATMUL_TOPS_BIG == kBigTile, "the kernels' big tile is the plans'");
    const int64_t big = MATMUL_TOPS_BIG;
    const bool big_tiles = takes_big_tiles(batch, M, N, device);
    d.kernel = std::string("matmul_tensorops_gemm_") + suffix + (big_tiles ? "_t64" : "");
    // matmul2d<..., execution_simdgroups<MATMUL_TOPS_SIMDGROUPS>> needs exactly that many SIMD-groups.
    d.threadgroups[0] = ceil_div(N, big_tiles ? big : MATMUL_TOPS_BN);
    d.threadgroups[1] = ceil_div(M, big_tiles ? big : MATMUL_TOPS_BM);
    d.threads_per_threadgroup[0] = 32 * MATMUL_TOPS_SIMDGROUPS;
  }
  d.threadgroups[2] = uint32_t(batch);
  d.buffers = {{MATMUL_BUFFER_A, Arg::A},
               {MATMUL_BUFFER_B, Arg::B},
               {MATMUL_BUFFER_Y, Arg::Y},
               {MATMUL_BUFFER_PARAMS, Arg::Params}};
  if (tier == Tier::Simdgroup) d.buffers.push_back({MATMUL_BUFFER_BIAS, Arg::Unused});
  d.params = bytes_of(p);
  return d;
}

Dispatch plan_linear_dense(DType x, DType w, DType y, int64_t M, int64_t N, int64_t K, bool has_bias, Tier tier,
                           const DeviceProfile& device) {
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
  // The simdgroup GEMM with w as its transposed right operand, on every tier.
  Dispatch d = plan_matmul(x, w, y, 1, M, N, K, false, Tier::Simdgroup, device);
  if (tier != Tier::Simdgroup) {
    d.fallback_reason = std::string("no ") + tier_name(tier) + " kernel for a dense weight yet; using the simdgroup GEMM";
  }
  MatmulKernelParams p;
  std::memcpy(&p, d.params.data(), sizeof(p));
  p.b_transposed = 1;
  p.has_bias = has_bias ? 1 : 0;
  d.params = bytes_of(p);
  d.buffers = {{MATMUL_BUFFER_A, Arg::X},
               {MATMUL_BUFFER_B, Arg::Weight},
               {MATMUL_BUFFER_Y, Arg::Y},
               {MATMUL_BUFFER_PARAMS, Arg::Params},
               {MATMUL_BUFFER_BIAS, has_bias ? Arg::Bias : Arg::Unused}};
  return d;
}

AttentionPlan plan_attention(const AttentionParams& p, DType q, DType o, bool kv_quantized, Format kv_format,
                             DType mask_dtype, Tier tier, const DeviceProfile& device) {
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
  const char* suffix = dtype_suffix(q);
  if (!suffix) throw Error(code::DType, std::string("the attention kernels take float32, float16 or bfloat16 q, got ") + dtype_name(q));
  // Each instance writes q's dtype, the only one check_attention gives the output.
  if (o != q) {
    throw Error(code::DType, std::string("the attention kernels write q's dtype ") + dtype_name(q) + ", not " +
                                 dtype_name(o));
  }
  const int64_t D = p.D;
  if (D != 64 && D != 80 && D != 96 && D != 128 && D != 256) {
    throw Error(code::Shape, "no attention kernel for head dim D = " + std::to_string(D) +
                                 " (kernels exist for 64, 80, 96, 128, 256); use the cpu backend");
  }
  std::string kv = "dense";
  if (kv_quantized) {
    // Kernel instances of ATTN_KV_MXFP8_E4M3 / ATTN_KV_MXFP8_E5M2.
    if (kv_format == Format::MXFP8_E4M3) kv = "mxfp8";
    else if (kv_format == Format::MXFP8_E5M2) kv = "mxfp8_e5m2";
    else throw Error(code::Format, std::string("attention k/v may be mxfp8 or mxfp8_e5m2, got ") + format_info(kv_format).name);
    if (D % 32 != 0) {
      throw Error(code::Shape, "mxfp8 k/v need D a multiple of 32 (blocks along D), got D = " + std::to_string(D));
    }
  }
  // Empty work (Lk = 0: zeros, written on the host by the cpu backend) has nothing to dispatch.
  if (p.B <= 0 || p.Hq <= 0 || p.Hkv <= 0 || p.Lq <= 0 || p.Lk <= 0 || p.Hq % p.Hkv != 0) {
    throw Error(code::Shape, "attention needs B, Hq, Hkv, Lq, Lk > 0 and Hq a multiple of Hkv");
  }
  check_i32("B * Hq * Lq * D", p.B * p.Hq * p.Lq * D);
  check_i32("B * Hkv * Lk * D", p.B * p.Hkv * p.Lk * D);
  int mask_kind = ATTN_MASK_NONE;
  if (p.mask) {
    switch (mask_dtype) {
      case DType::Bool: mask_kind = ATTN_MASK_BOOL; break;
      case DType::Float32: mask_kind = ATTN_MASK_F32; break;
      case DType::Float16: mask_kind = ATTN_MASK_F16; break;
      case DType::BFloat16: mask_kind = ATTN_MASK_BF16; break;
      case DType::Int32: throw Error(code::DType, "the attention mask is bool or a float dtype, not int32");
    }
  }

  AttentionKernelParams kp = {};
  kp.B = int32_t(p.B);
  kp.Hq = int32_t(p.Hq);
  kp.Hkv = int32_t(p.Hkv);
  kp.Lq = int32_t(p.Lq);
  kp.Lk = int32_t(p.Lk);
  kp.D = int32_t(D);
  kp.G = int32_t(p.Hq / p.Hkv);
  kp.scale_log2 = p.scale * 1.44269504088896340736f;
  kp.causal = p.causal ? 1 : 0;
  kp.mask_kind = mask_kind;
  kp.has_sinks = p.sinks ? 1 : 0;
  for (int i = 0; i < 4; ++i) {
    check_i32("mask stride", p.mask_stride[i]);
    kp.mask_stride[i] = int32_t(p.mask_stride[i]);
  }

  AttentionPlan out;
  const std::string tail = std::string(suffix) + "_" + kv + "_d" + std::to_string(D);
  // The tensorops tiers run prefill with matmul2d (library "attention_tensorops", MSL 4.0, P
  // through threadgroup memory; on tensorops-mx "attention_tensorops_mx", MSL 4.1, the same kernel
  // whose P V product takes the scores as a cooperative left input where the layouts allow) and
  // decode and its merge with the vector kernels of library "attention": bound by memory
  // bandwidth, not by the matrix units.
  const bool tops = tier == Tier::TensorOps || tier == Tier::TensorOpsMx;
  auto base = [&](const std::string& kernel) {
    Dispatch d;
    d.library = "attention";
    d.kernel = kernel;
    d.tier = tops ? tier : Tier::Simdgroup;
    if (!tops && tier != Tier::Simdgroup) {
      d.fallback_reason = std::string("no ") + tier_name(tier) + " attention kernels yet; using the simdgroup kernels";
    }
    return d;
  };
  const Arg k_scales = kv_quantized ? Arg::KScales : Arg::Unused;
  const Arg v_scales = kv_quantized ? Arg::VScales : Arg::Unused;
  const Arg mask = p.mask ? Arg::Mask : Arg::Unused;
  const Arg sinks = p.sinks ? Arg::Sinks : Arg::Unused;  // joined once, where o is normalised

  if (p.Lq > ATTN_DECODE_MAX_LQ) {
    kp.rows = 0;
    kp.chunks = 0;
    kp.splits = 1;
    kp.split_len = kp.Lk;
    Dispatch d = base("attention_prefill_" + tail);
    d.threadgroups[0] = ceil_div(p.Lq, 8 * ATTN_PREFILL_SIMDGROUPS(p.D));
    d.threads_per_threadgroup[0] = 32 * ATTN_PREFILL_SIMDGROUPS(p.D);
    // On tensorops-mx, a float16 q's scores read an mxfp8 K as one tensor argument: the MTLTensor
    // with an E8M0 scale plane the host made over K's codes and scales, [B * Hkv * Lk rows, D
    // columns] (half x fp8 with K the transposed scaled right operand; rows of 128 bytes or more:
    // D = 128 or 256). shaders/attention_tensorops_mx.metal attn_tops_k_tensor.
    ScalePlaneLayout k_layout;
    if (tier == Tier::TensorOpsMx && q == DType::Float16 && kv_quantized) {
      k_layout = scale_plane_layout(kv_format, 32, Shape{p.B, p.Hkv, p.Lk, D}, tier);
    }
    if (tops) {
      d.library = tier == Tier::TensorOpsMx ? "attention_tensorops_mx" : "attention_tensorops";
      d.kernel = std::string("attention_tensorops_prefill_") + (k_layout.ok ? "kt_" : "") + tail;
      d.threadgroups[0] = ceil_div(p.Lq, ATTN_TOPS_SIMDGROUPS * ATTN_TOPS_SG_ROWS);
      d.threads_per_threadgroup[0] = 32 * ATTN_TOPS_SIMDGROUPS;
    }
    d.threadgroups[1] = uint32_t(p.Hq);
    d.threadgroups[2] = uint32_t(p.B);
    d.buffers = {{ATTN_BUFFER_Q, Arg::Q},         {ATTN_BUFFER_K, Arg::K},
                 {ATTN_BUFFER_V, Arg::V},         {ATTN_BUFFER_K_SCALES, k_scales},
                 {ATTN_BUFFER_V_SCALES, v_scales}, {ATTN_BUFFER_MASK, mask},
                 {ATTN_BUFFER_O, Arg::O},         {ATTN_BUFFER_PARAMS, Arg::Params},
                 {ATTN_BUFFER_SINKS, sinks}};
    if (k_layout.ok) {
      d.tensors = {tensor_slot_of(k_layout, ATTN_BUFFER_K, Arg::KTensor, Arg::K, Arg::KScales)};
      // K's slot holds the tensor; K's scales are its scale plane.
      d.buffers.erase(std::remove_if(d.buffers.begin(), d.buffers.end(),
                                     [](const BufferSlot& b) { return b.index == ATTN_BUFFER_K; }),
                      d.buffers.end());
      for (BufferSlot& b : d.buffers)
        if (b.index == ATTN_BUFFER_K_SCALES) b.arg = Arg::Unused;
    }
    d.params = bytes_of(kp);
    out.passes.push_back(std::move(d));
    return out;
  }

  // Decode: one threadgroup per (b, kv head, chunk of rows[, split]).
  const int64_t rows = (p.Hq / p.Hkv) * p.Lq;
  const int64_t chunks = (rows + ATTN_DECODE_ROWS - 1) / ATTN_DECODE_ROWS;
  const int64_t groups = p.B * p.Hkv * chunks;
  // Split the keys until the device has ATTN_SPLIT_GROUPS_PER_CORE threadgroups per core (a
  // decode threadgroup is one kv head's memory stream; one per core leaves most of the memory
  // bandwidth idle), each split keeping at least ATTN_SPLIT_MIN_LEN keys so that the partial result
  // it writes (D floats per row) stays within the K/V it reads. Short Lk is not split: the merge
  // pass would cost more than it saves.
  int64_t splits = 1;
  const int64_t target = int64_t(std::max(device.gpu_cores, 1)) * ATTN_SPLIT_GROUPS_PER_CORE;
  if (device.attention_splits > 0) {
    splits = std::min<int64_t>(device.attention_splits, ATTN_MAX_SPLITS);
  } else if (p.Lk >= ATTN_SPLIT_MIN_KEYS && groups < target) {
    splits = std::min<int64_t>({int64_t(ATTN_MAX_SPLITS), p.Lk / ATTN_SPLIT_MIN_LEN, (target + groups - 1) / groups});
    splits = std::max<int64_t>(splits, 1);
  }
  const int64_t split_len = (p.Lk + splits - 1) / splits;
  // Rounding split_len up can leave the last splits without keys: they are not launched (a forced
  // count keeps them, so that the harness proves the merge ignores empty splits).
  if (device.attention_splits <= 0) splits = (p.Lk + split_len - 1) / split_len;
  check_i32("B * Hkv", p.B * p.Hkv);
  kp.rows = int32_t(rows);
  kp.chunks = int32_t(chunks);
  kp.splits = int32_t(splits);
  kp.split_len = int32_t(split_len);
  out.splits = int(splits);

  Dispatch d = base("attention_decode_" + tail);
  d.threadgroups[0] = uint32_t(p.B * p.Hkv);
  d.threadgroups[1] = uint32_t(chunks);
  d.threadgroups[2] = uint32_t(splits);
  d.threads_per_threadgroup[0] = 32 * ATTN_DECODE_SIMDGROUPS;
  const bool split = splits > 1;
  d.buffers = {{ATTN_BUFFER_Q, Arg::Q},
               {ATTN_BUFFER_K, Arg::K},
               {ATTN_BUFFER_V, Arg::V},
               {ATTN_BUFFER_K_SCALES, k_scales},
               {ATTN_BUFFER_V_SCALES, v_scales},
               {ATTN_BUFFER_MASK, mask},
               {ATTN_BUFFER_O, split ? Arg::Unused : Arg::O},
               {ATTN_BUFFER_PARTIAL_O, split ? Arg::PartialO : Arg::Unused},
               {ATTN_BUFFER_PARTIAL_ML, split ? Arg::PartialML : Arg::Unused},
               {ATTN_BUFFER_PARAMS, Arg::Params},
               {ATTN_BUFFER_SINKS, split ? Arg::Unused : sinks}};  // split: the merge adds the sink
  d.params = bytes_of(kp);
  out.passes.push_back(std::move(d));
  if (split) {
    const uint64_t prow = uint64_t(groups) * uint64_t(splits) * ATTN_DECODE_ROWS;
    out.partial_o_bytes = prow * uint64_t(D) * sizeof(float);
    out.partial_ml_bytes = prow * 2 * sizeof(float);
    Dispatch m = base(std::string("attention_merge_") + suffix);  // o has q's dtype
    m.threadgroups[0] = uint32_t(p.B * p.Hkv);
    m.threadgroups[1] = uint32_t(chunks);
    m.threadgroups[2] = uint32_t(std::min<int64_t>(rows, ATTN_DECODE_ROWS));  // one row of the chunk each
    m.threads_per_threadgroup[0] = ATTN_MERGE_THREADS;
    m.buffers = {{ATTN_BUFFER_PARTIAL_O, Arg::PartialO},
                 {ATTN_BUFFER_PARTIAL_ML, Arg::PartialML},
                 {ATTN_BUFFER_O, Arg::O},
                 {ATTN_BUFFER_PARAMS, Arg::Params},
                 {ATTN_BUFFER_SINKS, sinks}};
    m.params = bytes_of(kp);
    out.passes.push_back(std::move(m));
  }
  return out;
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
