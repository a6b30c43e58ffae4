// Plan of embedding (plan/embedding.h).
#include "embedding.h"

#include <string>

#include "../../../shaders/embedding_params.h"
#include "../formats.h"
#include "kernel_args.h"
#include "plan_util.h"

namespace mto::plan {

static_assert(sizeof(EmbeddingKernelParams) == 16, "EmbeddingKernelParams layout");

Dispatch plan_embedding(const EmbeddingParams& p, bool quantized, DType dense, Format f, int block, Tier tier,
                        uint32_t max_threads) {
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
  if (p.count <= 0 || p.dim <= 0 || p.vocab <= 0) {
    throw Error(code::Shape, "the Metal embedding kernel needs ids, and a table of rows > 0 and dim > 0");
  }
  require_i32("count", p.count);
  require_i32("vocab", p.vocab);
  require_i32("dim", p.dim);
  require_i32("count * dim", p.count * p.dim);
  EmbeddingKernelParams kp = {};
  kp.count = int32_t(p.count);
  kp.vocab = int32_t(p.vocab);
  kp.dim = int32_t(p.dim);
  kp.group_size = 32;
  Dispatch d;
  d.library = "embedding";
  d.tier = Tier::Simdgroup;  // a gather: bound by memory on every tier
  if (quantized) {
    const FormatInfo& info = format_info(f);
    if (!is_valid_block(f, block)) {
      throw Error(code::Format, std::string(info.name) + " does not use blocks of " + std::to_string(block));
    }
    if (p.dim % 32 != 0 || p.dim % block != 0) {
      throw Error(code::Shape, "a quantized table needs dim a multiple of 32 and of its block, got " +
                                   std::to_string(p.dim));
    }
    kp.group_size = block;
    d.kernel = std::string("embedding_") + info.name;
    d.buffers = {{EMB_BUFFER_IDS, Arg::Ids},       {EMB_BUFFER_TABLE, Arg::WCodes},
                 {EMB_BUFFER_SCALES, Arg::WScales}, {EMB_BUFFER_BIASES, info.affine ? Arg::WBiases : Arg::Unused},
                 {EMB_BUFFER_OUT, Arg::Y},          {EMB_BUFFER_STATUS, Arg::Status},
                 {EMB_BUFFER_PARAMS, Arg::Params}};
  } else {
    if (!float_dtype_tag(dense)) {
      throw Error(code::DType, std::string("the Metal embedding kernel copies float32, float16 or bfloat16 tables, got ") +
                                   dtype_name(dense));
    }
    d.kernel = dtype_size(dense) == 4 ? "embedding_dense_b4" : "embedding_dense_b2";
    d.buffers = {{EMB_BUFFER_IDS, Arg::Ids},
                 {EMB_BUFFER_TABLE, Arg::X},
                 {EMB_BUFFER_OUT, Arg::Y},
                 {EMB_BUFFER_STATUS, Arg::Status},
                 {EMB_BUFFER_PARAMS, Arg::Params}};
  }
  // Threads: enough for the row at EMB_PER_THREAD elements each, a power of two from 32, within
  // the pipeline's limit.
  const int cap = util::thread_cap(max_threads, EMB_MAX_THREADS, d.kernel.c_str());
  uint32_t threads = 32;
  while (int64_t(threads) * 2 <= cap && int64_t(threads) * EMB_PER_THREAD < p.dim) threads *= 2;
  d.threads_per_threadgroup[0] = threads;
  d.threadgroups[0] = uint32_t(p.count);
  d.threadgroups[1] = div_up(p.dim, int64_t(threads) * EMB_PER_THREAD);
  d.params = params_bytes(kp);
  return d;
}

OpStatus embedding_status(const int32_t* status, const EmbeddingParams& p) {
  if (status[0] < 0) return OpStatus{};
  return OpStatus{code::Arg, "embedding: ids holds " + std::to_string(status[1]) + " at flat index " +
                                 std::to_string(status[0]) + "; the table has rows 0.." + std::to_string(p.vocab - 1)};
}

}  // namespace mto::plan
