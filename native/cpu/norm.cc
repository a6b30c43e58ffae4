// rmsNorm and layerNorm over the last axis (core/ops.h NormParams): one row per task, statistics
// accumulated in double (a row of 8192 float32 squares summed in float loses ~1e-4 relative).
#include <cmath>
#include <vector>

#include "ops.h"
#include "rows.h"

namespace mto::cpu {

void norm(ThreadPool& pool, const Tensor& x, const Tensor* weight, const Tensor* bias,
          const NormParams& p, Tensor& out) {
  const int64_t cols = p.cols;
  std::vector<float> w(weight ? size_t(cols) : 0), b(bias ? size_t(cols) : 0);
  if (weight) load_f32(*weight, 0, cols, w.data());
  if (bias) load_f32(*bias, 0, cols, b.data());
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / cols);
  pool.parallel_for(p.rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; ++r) {
      load_f32(x, r * cols, cols, row.data());
      double mean = 0;
      if (p.layer) {
        for (float v : row) mean += v;
        mean /= double(cols);
      }
      double ss = 0;
      for (float v : row) {
        const double d = double(v) - mean;
        ss += d * d;
      }
      const float scale = float(1.0 / std::sqrt(ss / double(cols) + double(p.eps)));
      const float m = float(mean);
      for (int64_t c = 0; c < cols; ++c) {
        float y = (row[size_t(c)] - m) * scale;
        if (weight) y *= w[size_t(c)];
        if (bias) y += b[size_t(c)];
        row[size_t(c)] = y;
      }
      store_f32(out, r * cols, cols, row.data());
    }
  });
}

}  // namespace mto::cpu
