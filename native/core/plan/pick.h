// Dispatch plans of argmax, topK and sample (shaders/pick.metal, one threadgroup per row), and
// how the host reads what sample's kernel found in a row (it cannot throw).
#pragma once
#include <cstdint>

#include "../backend.h"
#include "../dispatch_plan.h"
#include "../ops.h"

namespace mto::plan {

// argmax / topK over the rows of x (dtype float32, float16 or bfloat16) as check_pick
// (core/ops.h) describes them. Every metal tier runs these simdgroup-tier kernels. Throws E_DTYPE
// (another dtype), E_SHAPE (an empty row, sizes past 32-bit indices), E_ARG (topK's k above
// PICK_MAX_K: the cpu backend runs it), E_BACKEND (Tier::Cpu).
Dispatch plan_argmax(DType x, const PickParams& p, Tier tier);
Dispatch plan_top_k(DType x, const PickParams& p, Tier tier);

// sample (check_pick plus the options in p). Throws as above, and E_ARG for options the kernel
// does not take: top_k above PICK_MAX_K, or top_p without top_k on rows wider than PICK_MAX_K
// (the candidates would be the whole sorted row); the cpu backend runs those, in stream order
// (README.md lists them). Why no kernel yet: ranking more than PICK_MAX_K candidates is a sort
// past one threadgroup's 32 KiB (a vocabulary row is 128256 wide) whose order the draw must share
// with the cpu bit for bit; that needs a multi-pass device sort, not a larger PICK_MAX_K.
Dispatch plan_sample(DType x, const PickParams& p, Tier tier);
// Bytes of sample's status buffer (Arg::Status): two int32 per row.
uint64_t sample_status_bytes(const PickParams& p);
// What the kernel wrote there, as the op's status: OK, or E_ARG with the cpu backend's message
// for the first row that has no distribution (NaN, +inf, or all -inf).
OpStatus sample_status(const int32_t* status, const PickParams& p);

}  // namespace mto::plan
