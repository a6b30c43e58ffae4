// Rotary position embedding (core/ops.h RopeParams). The angle of each (position, pair) is worked
// out in double, once per op, so that long positions keep float32 accuracy (pos * inv_freq in
// float32 is off by ~pos * 2^-24 radians: 0.006 at position 100,000).
#include <cmath>
#include <vector>

#include "ops.h"
#include "rows.h"

namespace mto::cpu {

void rope(ThreadPool& pool, const Tensor& x, const Tensor* positions, const Tensor* freqs,
          const RopeParams& p, Tensor& out) {
  const int64_t half = p.dims / 2;
  std::vector<double> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    inv[size_t(i)] = freqs ? double(freqs->data<float>()[i])
                           : std::pow(p.base, -2.0 * double(i) / double(p.dims));
  }
  std::vector<float> cs(size_t(p.L * half)), sn(size_t(p.L * half));
  for (int64_t l = 0; l < p.L; ++l) {
    const double pos = positions ? double(positions->data<int32_t>()[l]) : double(p.offset + l);
    for (int64_t i = 0; i < half; ++i) {
      const double a = pos * inv[size_t(i)];
      cs[size_t(l * half + i)] = float(std::cos(a));
      sn[size_t(l * half + i)] = float(std::sin(a));
    }
  }
  const int64_t rows = p.B * p.H * p.L, D = p.D;
  pool.parallel_for(rows, std::max<int64_t>(1, kParallelGrain / D), [&](int64_t r0, int64_t r1) {
    std::vector<float> v(static_cast<size_t>(D));
    for (int64_t r = r0; r < r1; ++r) {
      // Rows are in memory order: (b, h, l) for bhld, (b, l, h) for blhd.
      const int64_t l = p.blhd ? (r / p.H) % p.L : r % p.L;
      const float* c = &cs[size_t(l * half)];
      const float* s = &sn[size_t(l * half)];
      load_f32(x, r * D, D, v.data());
      for (int64_t i = 0; i < half; ++i) {
        const size_t i1 = size_t(p.neox ? i : 2 * i), i2 = size_t(p.neox ? i + half : 2 * i + 1);
        const float x1 = v[i1], x2 = v[i2];
        v[i1] = x1 * c[i] - x2 * s[i];
        v[i2] = x2 * c[i] + x1 * s[i];
      }
      store_f32(out, r * D, D, v.data());
    }
  });
}

}  // namespace mto::cpu
