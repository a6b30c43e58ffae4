// Dispatch plan of embedding (shaders/embedding.metal), and how the host reads what its kernel
// found in the ids (it cannot throw).
#pragma once
#include <cstdint>

#include "../backend.h"
#include "../dispatch_plan.h"
#include "../ops.h"

namespace mto::plan {

// out = table[ids] as check_embedding (core/ops.h) describes it: a dense table of `dense` dtype
// (float32, float16 or bfloat16; pass quantized = false), or a quantized table of format f and
// block `block`. Every metal tier runs this simdgroup-tier kernel, with at most `max_threads`
// threads (the pipeline's maxTotalThreadsPerThreadgroup: the host plans again with it when it is
// below what the plan chose; the kernel covers a row with any number of threadgroups). Throws
// E_SHAPE (no ids, an empty row, sizes past 32-bit indices), E_DTYPE, E_FORMAT, E_BACKEND
// (Tier::Cpu, max_threads below one SIMD-group).
Dispatch plan_embedding(const EmbeddingParams& p, bool quantized, DType dense, Format f, int block, Tier tier,
                        uint32_t max_threads = 1024);
// Bytes of the status buffer (Arg::Status): two int32.
constexpr uint64_t kEmbeddingStatusBytes = 2 * sizeof(int32_t);
// What the kernel wrote there, as the op's status: OK, or E_ARG with the cpu backend's message
// for the first id outside the table.
OpStatus embedding_status(const int32_t* status, const EmbeddingParams& p);

}  // namespace mto::plan
