// gemv_fused: x is rearranged once per call (prepare_x, shared by every thread), then each task
// streams a contiguous run of weight rows through the fused kernel. Decode is bound by memory
// bandwidth: long runs keep the hardware prefetchers on one stream per thread, and a run is never
// so short that waking a thread costs more than it saves.
#include "gemv.h"

#include <algorithm>
#include <vector>

namespace mto::cpu {
namespace {

constexpr int64_t kMinTaskBytes = int64_t(1) << 18;  // weight bytes below which a task is not split
constexpr int64_t kRowAlign = 4;                     // task boundaries on the kernels' row groups

thread_local std::vector<float> tl_xp;  // prepared x of the calling thread (reused across calls)

}  // namespace

void gemv_fused(ThreadPool& pool, const mto::kernels::DotKernels& kern,
                const mto::kernels::DotWeights& w, int64_t M, int64_t N, const float* x,
                int64_t ldx, const float* bias, float* y, int64_t ldy) {
  if (M <= 0 || N <= 0) return;
  const size_t need = kern.x_floats(w, int(M));
  if (tl_xp.size() < need) tl_xp.resize(need);
  const float* xp = tl_xp.data();
  kern.prepare_x(w, x, ldx, int(M), tl_xp.data());

  // Tasks of kRowAlign-row units, at least kMinTaskBytes each; guided, so that each thread streams
  // long runs first and both finish within one short run of each other.
  const int64_t units = (N + kRowAlign - 1) / kRowAlign;
  const int64_t unit_bytes = std::max<int64_t>(1, kRowAlign * w.row_bytes);
  const int64_t grain = std::max<int64_t>(1, kMinTaskBytes / unit_bytes);
  const auto run = [&](int64_t u0, int64_t u1) {
    const int64_t r0 = u0 * kRowAlign, r1 = std::min(N, u1 * kRowAlign);
    kern.rows(w, r0, r1 - r0, xp, int(M), y + r0, ldy);
    if (bias)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t r = r0; r < r1; ++r) y[m * ldy + r] += bias[r];
  };
  pool.parallel_for(units, grain, run, ThreadPool::Schedule::Guided);
}

}  // namespace mto::cpu
