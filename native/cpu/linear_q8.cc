// linear_q8.h: quantize x across the threads, then each thread runs its panels of weight rows past
// every row of x.
#include "linear_q8.h"

#include <algorithm>
#include <vector>

namespace mto::cpu {

void linear_q8(ThreadPool& pool, const mto::kernels::GemmQ8Kernels& kern, const mto::kernels::DotWeights& w,
               int64_t M, int64_t N, const float* x, int64_t ldx, const float* bias, float* y, int64_t ldy) {
  std::vector<uint8_t> xp(kern.x_bytes(w, M));
  pool.parallel_for(M, 16, [&](int64_t m0, int64_t m1) { kern.prepare_x(w, x, ldx, M, m0, m1, xp.data()); });
  constexpr int64_t kPanel = 16;  // the kernels' panel height: runs start at multiples of it
  pool.parallel_for((N + kPanel - 1) / kPanel, 1, [&](int64_t p0, int64_t p1) {
    kern.rows(w, p0 * kPanel, std::min(N, p1 * kPanel), xp.data(), M, y, ldy);
  });
  if (!bias) return;
  pool.parallel_for(M, 16, [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m)
      for (int64_t n = 0; n < N; ++n) y[m * ldy + n] += bias[n];
  });
}

}  // namespace mto::cpu
