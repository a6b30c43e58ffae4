// The attention plan (dispatch_plan.h: plan_attention): prefill (simdgroup or tensorops), and
// decode with its key splits sized by the GPU and their merge. Slots and geometry come from
// shaders/attention_params.h, which the kernels include too.
#include <algorithm>

#include "../../../shaders/attention_params.h"
#include "../dispatch_plan.h"
#include "../scale_plane.h"
#include "plan_util.h"

namespace mto::plan {
namespace {

using namespace util;

// Copied byte for byte into the kernel's `constant` argument: the size the MSL side sees.
static_assert(sizeof(AttentionKernelParams) == 76, "AttentionKernelParams layout");

}  // namespace

AttentionPlan plan_attention(const AttentionParams& p, DType q, DType o, bool kv_quantized, Format kv_format,
                             DType mask_dtype, Tier tier, const DeviceProfile& device) {
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
  const char* suffix = float_suffix(q);
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

}  // namespace mto::plan
