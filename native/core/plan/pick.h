// Dispatch plans of argmax, topK and sample (shaders/pick.metal, one threadgroup per row), and
// how the host reads what sample's kernel found in a row (it cannot throw).
#pragma once
#include <cstdint>
#include <vector>

#include "../backend.h"
#include "../dispatch_plan.h"
#include "../ops.h"

namespace mto::plan {

// argmax / topK over the rows of x (dtype float32, float16 or bfloat16) as check_pick
// (core/ops.h) describes them. Every metal tier runs these simdgroup-tier kernels. `max_threads`
// is the pipeline's maxTotalThreadsPerThreadgroup on this GPU: a plan made with the default and
// above the limit of its kernel's pipeline is made again with that limit (as norm and softmax:
// native/metal/pick.mm), and stays within it in whole SIMD-groups. Throws E_DTYPE (another
// dtype), E_SHAPE (an empty row, sizes past 32-bit indices), E_ARG (topK's k outside 1..cols),
// E_BACKEND (Tier::Cpu, max_threads below one SIMD-group: the cpu backend runs it).
//
// topK's k up to PICK_MAX_K (and no more than the threads keep) runs pick_topk, which sorts its
// candidates in threadgroup memory; any larger k runs pick_topk_wide: the k-th element by a radix
// walk over the keys, the k elements gathered and sorted by a stable radix sort in device memory,
// with a scratch buffer (Arg::Scratch, scratch_bytes) as the sort's second buffer.
Dispatch plan_argmax(DType x, const PickParams& p, Tier tier, uint32_t max_threads = 1024);
struct TopKPlan {
  std::vector<Dispatch> passes;  // one
  uint64_t scratch_bytes = 0;    // pick_topk_wide's scratch (int32 [rows, k]); 0: none bound
};
TopKPlan plan_top_k(DType x, const PickParams& p, Tier tier, uint32_t max_threads = 1024);

// sample (check_pick plus the options in p), throwing as above. Temperature 0 and the draw over
// the whole row in index order run pick_sample; so do ranked candidates (topK, or topP alone:
// the whole row ranked) up to PICK_MAX_K. More candidates (topK above PICK_MAX_K, topP alone on
// rows wider than PICK_MAX_K) run pick_sample_wide: radix walks find the k-th element, topP's
// cut and the draw among the candidates in rank order, the cpu backend's id bit for bit, without
// sorting the row.
Dispatch plan_sample(DType x, const PickParams& p, Tier tier, uint32_t max_threads = 1024);
// Bytes of sample's status buffer (Arg::Status): two int32 per row.
uint64_t sample_status_bytes(const PickParams& p);
// What the kernel wrote there, as the op's status: OK, or E_ARG with the cpu backend's message
// for the first row that has no distribution (NaN, +inf, or all -inf).
OpStatus sample_status(const int32_t* status, const PickParams& p);

}  // namespace mto::plan
