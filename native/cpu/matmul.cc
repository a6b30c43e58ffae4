// The cpu backend's matmul: c[batch, M, N] = a[batch, M, K] @ b[K, N] or b[batch, K, N].
//
// a becomes float32 rows once; b is packed panel by panel straight from its storage (converted
// from float16/bfloat16 on the way) by DensePanels, and the gemm core does the rest. With b shared
// by every batch, the batch folds into M: one [batch * M, K] @ [K, N] product, so b is packed once
// per panel for all batches. With few rows of a, gemv_n streams b's rows instead (no packing).
#include <algorithm>
#include <cstring>
#include <vector>

#include "gemm.h"
#include "ops.h"

namespace mto::cpu {
namespace {

// b[batch?][K, N] row-major, any float dtype, as packed panels.
class DensePanels final : public PanelSource {
 public:
  DensePanels(const Tensor& b, int64_t K, int64_t N, bool batched)
      : bytes_(static_cast<const uint8_t*>(b.buffer->data())), dtype_(b.dtype), N_(N),
        batch_stride_(batched ? K * N : 0) {}

  void pack(int64_t b, int64_t n0, int64_t nc, int64_t k0, int64_t kc, float* dst) const override {
    thread_local std::vector<float> row_store;  // one converted row segment (float16/bfloat16 b)
    if (dtype_ != DType::Float32 && row_store.size() < size_t(nc)) row_store.resize(size_t(nc));
    const size_t esize = dtype_size(dtype_);
    for (int64_t k = 0; k < kc; ++k) {
      const size_t offset = size_t(b * batch_stride_ + (k0 + k) * N_ + n0);
      const float* row;
      if (dtype_ == DType::Float32) {
        row = reinterpret_cast<const float*>(bytes_) + offset;
      } else {
        to_float32(dtype_, bytes_ + offset * esize, row_store.data(), size_t(nc));
        row = row_store.data();
      }
      // Column j of the panel goes to strip j / 16, group k, lane j % 16.
      float* group = dst + k * kPanelWidth;
      for (int64_t s = 0; s < nc; s += kPanelWidth, group += kc * kPanelWidth) {
        const int64_t nr = std::min<int64_t>(kPanelWidth, nc - s);
        if (nr == kPanelWidth) {  // constant size: an inlined vector copy, not a libc call
          std::memcpy(group, row + s, kPanelWidth * sizeof(float));
          continue;
        }
        std::memcpy(group, row + s, size_t(nr) * sizeof(float));
        for (int64_t j = nr; j < kPanelWidth; ++j) group[j] = 0.f;
      }
    }
  }

 private:
  const uint8_t* bytes_;
  DType dtype_;
  int64_t N_, batch_stride_;
};

}  // namespace

void matmul(ThreadPool& pool, const Tensor& a, const Tensor& b, const MatmulParams& p, float* c) {
  const int64_t batch = p.batch, M = p.M, N = p.N, K = p.K;
  if (batch <= 0 || M <= 0 || N <= 0) return;

  std::vector<float> a_store;
  const float* af;
  if (a.dtype == DType::Float32) {
    af = a.data<float>();
  } else {
    const int64_t rows = batch * M;
    a_store.resize(size_t(rows * K));
    const auto* src = static_cast<const uint8_t*>(a.buffer->data());
    const size_t esize = dtype_size(a.dtype);
    const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(K, 1));
    pool.parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
      to_float32(a.dtype, src + size_t(r0 * K) * esize, a_store.data() + r0 * K,
                 size_t((r1 - r0) * K));
    });
    af = a_store.data();
  }

  GemmArgs g;
  g.N = N;
  g.K = K;
  g.a = af;
  g.lda = K;
  g.c = c;
  g.ldc = N;
  if (p.b_batched) {
    g.batch = batch;
    g.M = M;
    g.a_batch_stride = M * K;
    g.c_batch_stride = M * N;
  } else {
    g.M = batch * M;  // every batch multiplies the same b: one taller product
  }
  if (g.M <= kGemvMaxRows) {  // few rows: stream b once instead of packing it
    gemv_n(pool, g, DenseRows(b, N), p.b_batched ? K : 0);
    return;
  }
  gemm(pool, g, DensePanels(b, K, N, p.b_batched));
}

}  // namespace mto::cpu
