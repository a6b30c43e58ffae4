// The cpu backend's linear: y[M, N] = x[M, K] @ w[N, K]^T (+ bias), float32 accumulation.
//
// x (and bias) become float32 once; w stays as it is and is read through a RowSpanSource that
// hands out float32 spans of its rows (in place for float32, converted for float16/bfloat16,
// decoded by dequantize_span for quantized formats). The gemm core then decodes each weight span
// once per packed panel; for a few rows of x (decode) gemv_t streams each weight row once instead.
#include <algorithm>
#include <vector>

#include "gemm.h"
#include "ops.h"

namespace mto::cpu {
namespace {

// Rows of a dense w[N, K] of any float dtype.
class DenseRows final : public RowSpanSource {
 public:
  DenseRows(const Tensor& w, int64_t K)
      : bytes_(static_cast<const uint8_t*>(w.buffer->data())), dtype_(w.dtype), K_(K) {}
  const float* span(int64_t n, int64_t k0, int64_t k1, float* scratch) const override {
    const size_t offset = size_t(n * K_ + k0);
    if (dtype_ == DType::Float32) return reinterpret_cast<const float*>(bytes_) + offset;
    to_float32(dtype_, bytes_ + offset * dtype_size(dtype_), scratch, size_t(k1 - k0));
    return scratch;
  }

 private:
  const uint8_t* bytes_;
  DType dtype_;
  int64_t K_;
};

// Rows of a quantized w[N, K]: the one decode path, dequantize_span.
class QuantRows final : public RowSpanSource {
 public:
  explicit QuantRows(const QTensor& w) : view_(w.view()) {}
  const float* span(int64_t n, int64_t k0, int64_t k1, float* scratch) const override {
    dequantize_span(view_, n, k0, k1, scratch);
    return scratch;
  }

 private:
  QuantView view_;
};

// x as float32 rows [M, K]: the tensor's own storage when it is float32, else a copy in `store`.
const float* x_float32(ThreadPool& pool, const Operand& x, int64_t M, int64_t K,
                       std::vector<float>& store) {
  if (x.dense && x.dense->dtype == DType::Float32) return x.dense->data<float>();
  store.resize(size_t(M * K));
  float* out = store.data();
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(K, 1));
  if (x.dense) {
    const auto* src = static_cast<const uint8_t*>(x.dense->buffer->data());
    const size_t esize = dtype_size(x.dense->dtype);
    pool.parallel_for(M, grain, [&](int64_t r0, int64_t r1) {
      to_float32(x.dense->dtype, src + size_t(r0 * K) * esize, out + r0 * K, size_t((r1 - r0) * K));
    });
  } else {
    const QuantView v = x.quant->view();
    pool.parallel_for(M, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) dequantize_span(v, r, 0, K, out + r * K);
    });
  }
  return out;
}

}  // namespace

void linear(ThreadPool& pool, const Operand& x, const Operand& w, const Tensor* bias,
            const LinearParams& p, float* y) {
  const int64_t M = p.M, N = p.N, K = p.K;
  if (M <= 0 || N <= 0) return;
  std::vector<float> x_store, bias_store;
  const float* xf = x_float32(pool, x, M, K, x_store);
  const float* bf = nullptr;
  if (bias) {
    bias_store.resize(size_t(N));
    to_float32(bias->dtype, bias->buffer->data(), bias_store.data(), size_t(N));
    bf = bias_store.data();
  }

  auto run = [&](const RowSpanSource& rows) {
    if (M <= kGemvMaxRows) {
      gemv_t(pool, M, N, K, xf, K, rows, bf, y, N);
      return;
    }
    GemmArgs g;
    g.M = M; g.N = N; g.K = K;
    g.a = xf; g.lda = K;
    g.c = y; g.ldc = N;
    g.bias = bf;
    gemm(pool, g, TransposedPanels(rows));
  };
  if (w.quant) {
    run(QuantRows(*w.quant));
  } else {
    run(DenseRows(*w.dense, K));
  }
}

}  // namespace mto::cpu
