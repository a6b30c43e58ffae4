// Helpers the dispatch plans of the model op families (core/plan/*.cc) share: parameter bytes,
// grid arithmetic, the 32-bit index checks and the dtype suffixes of kernel host names.
#pragma once
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../dispatch_plan.h"
#include "../error.h"

namespace mto::plan::util {

// A parameter struct's bytes, bound with setBytes; the structs hold 4-byte fields only.
template <class P>
std::vector<uint8_t> bytes_of(const P& p) {
  std::vector<uint8_t> out(sizeof p);
  std::memcpy(out.data(), &p, sizeof p);
  return out;
}

inline uint32_t ceil_div(int64_t a, int64_t b) { return uint32_t((a + b - 1) / b); }

// The kernels index with 32-bit integers: refuse what they cannot express (the cpu backend runs it).
inline void check_i32(const char* what, int64_t v) {
  if (v < 0 || v > std::numeric_limits<int32_t>::max()) {
    throw Error(code::Shape, std::string(what) + " = " + std::to_string(v) +
                                 " is too large for the Metal kernels' 32-bit indices");
  }
}

// "f32", "f16", "bf16"; nullptr for dtypes the float kernels do not read.
inline const char* float_suffix(DType t) {
  switch (t) {
    case DType::Float32: return "f32";
    case DType::Float16: return "f16";
    case DType::BFloat16: return "bf16";
    default: return nullptr;
  }
}

// The model op kernels are simdgroup-tier (MSL 3.1) and run on every Metal tier.
inline void require_metal(Tier tier) {
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
}

// The threads of a one-threadgroup-per-row kernel: enough SIMD-groups that each thread reads
// about `per_thread` elements of a row of `cols`, between one SIMD-group and `max_threads`.
inline uint32_t row_threads(int64_t cols, int per_thread, int max_threads) {
  const int64_t want = (cols + per_thread - 1) / per_thread;
  const int64_t simds = (want + 31) / 32;
  const int64_t threads = simds * 32;
  return uint32_t(threads < 32 ? 32 : threads > max_threads ? max_threads : threads);
}

// The most threads a one-threadgroup-per-row plan may give a threadgroup: the kernel's own
// bound, lowered to `pipeline_max` (the pipeline's maxTotalThreadsPerThreadgroup on this GPU,
// which may be below 1024 for a kernel that needs many registers) in whole SIMD-groups, as MLX
// sizes its row kernels from the pipeline. Throws E_BACKEND below one SIMD-group (the op then
// runs on the cpu backend).
inline int thread_cap(uint32_t pipeline_max, int kernel_max, const char* kernel) {
  const uint32_t simds = pipeline_max / 32;
  if (simds == 0) {
    throw Error(code::Backend, std::string("the ") + kernel + " pipeline allows " + std::to_string(pipeline_max) +
                                   " threads per threadgroup, less than one SIMD-group");
  }
  return int(simds * 32) < kernel_max ? int(simds * 32) : kernel_max;
}

}  // namespace mto::plan::util
