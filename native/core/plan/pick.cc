// Plans of argmax, topK and sample (plan/pick.h).
#include "pick.h"

#include <algorithm>
#include <string>

#include "../../../shaders/pick_params.h"
#include "kernel_args.h"
#include "plan_util.h"

namespace mto::plan {
namespace {

static_assert(sizeof(PickKernelParams) == 48, "PickKernelParams layout");

// The threads of pick_argmax, pick_topk and pick_sample: a power of two (their bitonic sort's
// size is threads * PICK_KEEP) from 32 to `cap` and at least cols / PICK_KEEP, so that a row
// that fits in the threads' kept ranks is wholly candidates.
uint32_t pick_threads(int64_t cols, int cap) {
  uint32_t t = 32;
  while (int64_t(t) * 2 <= cap && int64_t(t) * PICK_KEEP < cols) t *= 2;
  return t;
}

// The threads of the wide kernels: whole SIMD-groups, about PICK_WIDE_READS elements each, up
// to `cap` (they loop over the row with any number).
uint32_t wide_threads(int64_t cols, int cap) {
  const int64_t simds = (cols + 32 * PICK_WIDE_READS - 1) / (32 * PICK_WIDE_READS);
  return uint32_t(std::min<int64_t>(std::max<int64_t>(simds, 1) * 32, cap));
}

// pick_threads within the pipeline's limit.
uint32_t narrow_threads(const Dispatch& d, const PickParams& p, uint32_t max_threads) {
  return pick_threads(p.cols, util::thread_cap(max_threads, PICK_MAX_THREADS, d.kernel.c_str()));
}

Dispatch base(const char* op, DType x, const PickParams& p, Tier tier, PickKernelParams& kp) {
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
  const char* tag = float_dtype_tag(x);
  if (!tag) {
    throw Error(code::DType, std::string("the Metal ") + op + " kernels take float32, float16 or bfloat16 x, got " +
                                 dtype_name(x));
  }
  if (p.rows <= 0 || p.cols <= 0) {
    throw Error(code::Shape, std::string(op) + " needs rows and cols > 0, got " + std::to_string(p.rows) + " x " +
                                 std::to_string(p.cols));
  }
  require_i32("rows", p.rows);
  require_i32("cols", p.cols);
  require_i32("rows * cols", p.rows * p.cols);
  kp = PickKernelParams{};
  kp.rows = int32_t(p.rows);
  kp.cols = int32_t(p.cols);
  Dispatch d;
  d.library = "pick";
  d.kernel = std::string("pick_") + op + "_" + tag;
  d.tier = Tier::Simdgroup;  // nothing on the tensorops tiers is faster for a row reduction
  d.threadgroups[0] = uint32_t(p.rows);
  return d;
}

// Whether pick_topk / pick_sample rank k candidates with `threads`: at most PICK_MAX_K, and no
// more than the threads keep (fewer threads than a row would get: a pipeline limit).
bool narrow_takes(int64_t k, uint32_t threads) { return k <= PICK_MAX_K && k <= int64_t(threads) * PICK_KEEP; }

// d as the wide kernel of its op ("pick_<op>" -> "pick_<op>_wide_<tag>").
void make_wide(Dispatch& d, const char* op, DType x, const PickParams& p, uint32_t max_threads) {
  d.kernel = std::string("pick_") + op + "_wide_" + float_dtype_tag(x);
  d.threads_per_threadgroup[0] = wide_threads(
      p.cols, util::thread_cap(max_threads, PICK_WIDE_MAX_THREADS, d.kernel.c_str()));
}

}  // namespace

Dispatch plan_argmax(DType x, const PickParams& p, Tier tier, uint32_t max_threads) {
  PickKernelParams kp;
  Dispatch d = base("argmax", x, p, tier, kp);
  d.threads_per_threadgroup[0] = narrow_threads(d, p, max_threads);
  d.buffers = {{PICK_BUFFER_X, Arg::X}, {PICK_BUFFER_IDS, Arg::Ids}, {PICK_BUFFER_PARAMS, Arg::Params}};
  d.params = params_bytes(kp);
  return d;
}

TopKPlan plan_top_k(DType x, const PickParams& p, Tier tier, uint32_t max_threads) {
  PickKernelParams kp;
  Dispatch d = base("topk", x, p, tier, kp);
  if (p.k < 1 || p.k > p.cols) {
    throw Error(code::Arg, "the Metal topK kernels take k from 1 to cols (" + std::to_string(p.cols) + "), got " +
                               std::to_string(p.k));
  }
  require_i32("rows * k", p.rows * p.k);
  kp.k = int32_t(p.k);
  d.threads_per_threadgroup[0] = narrow_threads(d, p, max_threads);
  d.buffers = {{PICK_BUFFER_X, Arg::X},
               {PICK_BUFFER_IDS, Arg::Ids},
               {PICK_BUFFER_VALUES, Arg::Y},
               {PICK_BUFFER_PARAMS, Arg::Params}};
  TopKPlan plan;
  if (!narrow_takes(p.k, d.threads_per_threadgroup[0])) {
    make_wide(d, "topk", x, p, max_threads);
    d.buffers.push_back({PICK_BUFFER_SCRATCH, Arg::Scratch});
    plan.scratch_bytes = uint64_t(p.rows * p.k) * sizeof(int32_t);
  }
  d.params = params_bytes(kp);
  plan.passes = {d};
  return plan;
}

Dispatch plan_sample(DType x, const PickParams& p, Tier tier, uint32_t max_threads) {
  PickKernelParams kp;
  Dispatch d = base("sample", x, p, tier, kp);
  d.threads_per_threadgroup[0] = narrow_threads(d, p, max_threads);
  const bool ranked = p.top_k > 0 || p.top_p < 1;  // the cpu backend's rule (cpu/pick.cc)
  const int64_t k = p.top_k > 0 ? std::min(p.top_k, p.cols) : p.cols;
  if (p.temperature == 0) {
    kp.mode = PICK_SAMPLE_ARGMAX;
  } else if (!ranked) {
    kp.mode = PICK_SAMPLE_INDEX;
  } else {
    kp.mode = PICK_SAMPLE_RANKED;
    kp.k = int32_t(k);
    if (!narrow_takes(k, d.threads_per_threadgroup[0])) make_wide(d, "sample", x, p, max_threads);
  }
  kp.seed_lo = int32_t(uint32_t(p.seed));
  kp.seed_hi = int32_t(uint32_t(p.seed >> 32));
  if (p.temperature != 0) {
    const float c = sample_log2e_over_t(p.temperature);
    std::memcpy(&kp.scale_bits, &c, sizeof c);
  }
  if (p.top_p < 1) {
    const uint64_t q = sample_top_p_q32(p.top_p);
    kp.has_top_p = 1;
    kp.top_p_lo = int32_t(uint32_t(q));
    kp.top_p_hi = int32_t(uint32_t(q >> 32));
  }
  d.buffers = {{PICK_BUFFER_X, Arg::X},
               {PICK_BUFFER_IDS, Arg::Ids},
               {PICK_BUFFER_STATUS, Arg::Status},
               {PICK_BUFFER_PARAMS, Arg::Params}};
  d.params = params_bytes(kp);
  return d;
}

uint64_t sample_status_bytes(const PickParams& p) { return uint64_t(p.rows) * 2 * sizeof(int32_t); }

OpStatus sample_status(const int32_t* status, const PickParams& p) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const int32_t what = status[2 * r], at = status[2 * r + 1];
    if (what == PICK_STATUS_OK) continue;
    const std::string row = "sample: logits row " + std::to_string(r);
    if (what == PICK_STATUS_ALL_NEG_INF) return OpStatus{code::Arg, row + " is all -inf"};
    return OpStatus{code::Arg, row + " holds " + (what == PICK_STATUS_NAN ? "NaN" : "+inf") + " at " +
                                   std::to_string(at) + "; no distribution to draw from"};
  }
  return OpStatus{};
}

}  // namespace mto::plan
