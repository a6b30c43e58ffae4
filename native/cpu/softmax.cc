// softmax over the last axis (core/ops.h RowsParams): exp(x - max) / sum, the sum in double.
// Plain float arithmetic: a NaN in a row, a +inf (inf - inf), or a row of only -inf (0 / 0) makes
// the row NaN, as in PyTorch.
#include <cmath>
#include <vector>

#include "ops.h"
#include "rows.h"

namespace mto::cpu {

void softmax(ThreadPool& pool, const Tensor& x, const RowsParams& p, Tensor& out) {
  const int64_t cols = p.cols;
  pool.parallel_for(p.rows, std::max<int64_t>(1, kParallelGrain / cols), [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; ++r) {
      load_f32(x, r * cols, cols, row.data());
      float m = -INFINITY;
      bool nan = false;
      for (float v : row) {
        nan |= v != v;
        m = v > m ? v : m;
      }
      if (nan) m = NAN;
      double sum = 0;
      for (float& v : row) {
        v = std::exp(v - m);
        sum += v;
      }
      const float inv = float(1.0 / sum);
      for (float& v : row) v *= inv;
      store_f32(out, r * cols, cols, row.data());
    }
  });
}

}  // namespace mto::cpu
