// The cpu backend's linear: y[M, N] = x[M, K] @ w[N, K]^T (+ bias), float32 accumulation.
//
// x (and bias) become float32 once; w stays as it is and is read through a RowSpanSource that
// hands out float32 spans of its rows (in place for float32, converted for float16/bfloat16,
// decoded by dequantize_span for quantized formats). The gemm core then decodes each weight span
// once per packed panel; for a few rows of x (decode) gemv_t streams each weight row once instead.
#include <algorithm>
#include <vector>

#include "../core/core_simd.h"
#include "gemm.h"
#include "ops.h"

namespace mto::cpu {
namespace {

// Rows of a quantized w[N, K]: the one decode path, dequantize_span.
// For few rows of x (gemv_t) the formats with a fused decode-and-dot kernel (core_simd.h) skip the
// float32 spans: each block is decoded in registers and multiplied with x there.
class QuantRows final : public RowSpanSource {
 public:
  explicit QuantRows(const QTensor& w) : view_(w.view()) {
    const FormatInfo& info = format_info(view_.format);
    bits_ = info.bits;
    affine_ = info.affine;
    row_bytes_ = view_.cols * info.bits / 8;
    groups_ = view_.block > 0 ? view_.cols / view_.block : 0;
    const mto::simd::CoreKernels& kern = mto::simd::core_kernels();
    // The portable (baseline) gemm path stays the decode-and-dot one.
    if (gemm_isa() == GemmIsa::Baseline || view_.block <= 0 || view_.block % 32 != 0) return;
    if (affine_) {
      fused_ = kern.dot_affine != nullptr;
      return;
    }
    if (!kern.dot_mx || view_.block != 32) return;
    switch (view_.format) {
      case Format::MXINT8: mode_ = mto::simd::DeqMode::Int8; break;
      case Format::MXFP8_E4M3: mode_ = mto::simd::DeqMode::E4M3; break;
      case Format::MXFP8_E5M2: mode_ = mto::simd::DeqMode::E5M2; break;
      case Format::MXFP4:
      case Format::MXINT4:
        mode_ = mto::simd::DeqMode::Lut4;
        for (int c = 0; c < 16; ++c) lut_[c] = decode_element(info.element, uint8_t(c));
        break;
      default: return;  // FP6, int2: decode spans
    }
    fused_ = true;
  }
  const float* span(int64_t n, int64_t k0, int64_t k1, float* scratch) const override {
    dequantize_span(view_, n, k0, k1, scratch);
    return scratch;
  }
  bool dots(int64_t n0, int nrows, int64_t k0, int64_t k1, const float* a, int64_t lda, int64_t M,
            float* out) const override {
    const int64_t block = view_.block;
    if (!fused_ || M > 8 || (k1 - k0) % block != 0) return false;
    const mto::simd::CoreKernels& kern = mto::simd::core_kernels();
    const uint8_t* codes = view_.codes + size_t(n0 * row_bytes_ + k0 * bits_ / 8);
    const int64_t g0 = n0 * groups_ + k0 / block;
    if (affine_)
      return kern.dot_affine(bits_, int(block), codes, row_bytes_,
                             static_cast<const uint16_t*>(view_.scales) + g0, view_.biases + g0,
                             groups_, nrows, (k1 - k0) / block, a, lda, int(M), out);
    return kern.dot_mx(mode_, lut_, codes, row_bytes_,
                       static_cast<const uint8_t*>(view_.scales) + g0, groups_, nrows,
                       (k1 - k0) / block, a, lda, int(M), out);
  }

 private:
  QuantView view_;
  int bits_ = 8;
  bool affine_ = false;
  bool fused_ = false;
  int64_t row_bytes_ = 0, groups_ = 0;
  mto::simd::DeqMode mode_ = mto::simd::DeqMode::Int8;
  alignas(64) float lut_[16] = {};
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
