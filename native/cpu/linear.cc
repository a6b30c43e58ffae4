// The cpu backend's linear: y[M, N] = x[M, K] @ w[N, K]^T (+ bias), float32 accumulation.
//
// x (and bias) become float32 once; w stays as it is and is read through a RowSpanSource that
// hands out float32 spans of its rows (in place for float32, converted for float16/bfloat16,
// decoded by dequantize_span for quantized formats). The gemm core then decodes each weight span
// once per packed panel; for a few rows of x (decode) gemv_t streams each weight row once instead,
// and formats with a fused kernel (kernels/dot.h: most quantized ones, float16, bfloat16, float32)
// skip the float32 spans altogether.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../core/error.h"
#include "../kernels/dot.h"
#include "gemm.h"
#include "gemv.h"
#include "linear_q8.h"
#include "ops.h"

namespace mto::cpu {
namespace {

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

// The fused decode-and-dot view of w (kernels/dot.h), when its format has one; false otherwise
// (FP6, int2: gemv_t decodes spans and dots them).
bool dot_weights(const QuantView& v, float (&lut)[16], mto::kernels::DotWeights* out) {
  mto::kernels::DotWeights& d = *out;
  const FormatInfo& info = format_info(v.format);
  if (v.block <= 0 || v.block % 32 != 0 || v.cols % v.block != 0) return false;
  switch (v.format) {
    case Format::MXINT8: d.kind = mto::kernels::DotCodes::Int8; break;
    case Format::MXFP8_E4M3:
      d.kind = mto::kernels::DotCodes::E4M3;
      d.nan_codes = v.fp8_nan_codes;
      break;
    case Format::MXFP8_E5M2: d.kind = mto::kernels::DotCodes::E5M2; break;
    case Format::MXFP4:
    case Format::MXINT4:
      d.kind = mto::kernels::DotCodes::Lut4;
      for (int c = 0; c < 16; ++c) lut[c] = decode_element(info.element, uint8_t(c));
      d.lut = lut;
      break;
    case Format::AFFINE4: d.kind = mto::kernels::DotCodes::Uint4; break;
    case Format::AFFINE8: d.kind = mto::kernels::DotCodes::Uint8; break;
    default: return false;
  }
  d.group = v.block;
  d.K = v.cols;
  d.codes = v.codes;
  d.row_bytes = int64_t(row_code_bytes(v.format, v.cols));
  d.row_groups = v.cols / v.block;
  if (info.affine) {
    d.scales = static_cast<const uint16_t*>(v.scales);
    // Centred biases (Q4_0 / Q8_0 imports) are computed from the scales, bit for bit the same:
    // their plane is not read (2 of Q4_0's 20 bytes a block).
    if (v.centred_biases) d.centred_bias = -affine_centre(v.format);
    else d.biases = v.biases;
  } else {
    d.e8m0 = static_cast<const uint8_t*>(v.scales);
  }
  return true;
}

// The fused view of dense float32 / float16 / bfloat16 weights w[N, K].
bool dense_dot_weights(const Tensor& w, int64_t K, mto::kernels::DotWeights* out) {
  switch (w.dtype) {
    case DType::Float32: out->kind = mto::kernels::DotCodes::F32; break;
    case DType::Float16: out->kind = mto::kernels::DotCodes::F16; break;
    case DType::BFloat16: out->kind = mto::kernels::DotCodes::BF16; break;
    default: return false;
  }
  out->K = K;
  out->codes = static_cast<const uint8_t*>(w.buffer->data());
  out->row_bytes = K * int64_t(dtype_size(w.dtype));
  return true;
}

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

// The fused kernels multiply x by a block's raw element codes and apply the block scale to the
// sum (E5M2 codes reach 57344, E4M3 codes are taken as value / 256 against x * 256), so from
// |x| ~ 2^106 on an intermediate can overflow although every true product x * w is finite.
// Rows like that (and rows holding NaN or infinity, which come out the same either way) take the
// decode-then-dot path, whose products are x * w itself. One compare per element of x: nothing
// next to reading w.
bool fits_fused_kernels(const float* x, int64_t M, int64_t K) {
  constexpr float kLimit = 0x1p100f;
  bool fits = true;
  for (int64_t i = 0; i < M * K; ++i) fits &= std::fabs(x[i]) < kLimit;
  return fits;
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
    const mto::kernels::DotKernels* kern = mto::kernels::dot_kernels();
    mto::kernels::DotWeights dw;
    float lut[16];
    if (kern && M <= kFusedMaxRows && dot_weights(w.quant->view(), lut, &dw) &&
        fits_fused_kernels(xf, M, K)) {
      // Opted-in int8 activations where this CPU has integer kernels for the format, else float.
      const mto::kernels::DotKernels* q8 = p.int8_activations ? mto::kernels::dot_q8_kernels() : nullptr;
      if (q8 && q8->supports(dw)) kern = q8;
      if (kern->supports(dw)) {
        gemv_fused(pool, *kern, dw, M, N, xf, K, bf, y, N);
        return;
      }
    }
    // Prompt-sized int8 activations: the integer GEMM where this CPU has one.
    const mto::kernels::GemmQ8Kernels* g = p.int8_activations && M > kFusedMaxRows ? mto::kernels::gemm_q8_kernels() : nullptr;
    if (g && dot_weights(w.quant->view(), lut, &dw) && g->supports(dw) && fits_fused_kernels(xf, M, K)) {
      linear_q8(pool, *g, dw, M, N, xf, K, bf, y, N);
      return;
    }
    run(QuantRows(*w.quant));
  } else {
    const mto::kernels::DotKernels* kern = mto::kernels::dot_kernels();
    mto::kernels::DotWeights dw;
    if (kern && M <= kFusedMaxRows && dense_dot_weights(*w.dense, K, &dw) &&
        kern->supports(dw)) {
      gemv_fused(pool, *kern, dw, M, N, xf, K, bf, y, N);
      return;
    }
    run(DenseRows(*w.dense, K));
  }
}

}  // namespace mto::cpu

namespace mto::cpu {

void grouped_linear(ThreadPool& pool, const Operand& x, const Operand& w, const Tensor& group_sizes,
                    const GroupedLinearParams& p, float* y) {
  check_group_sizes(group_sizes, p);
  const int32_t* g = group_sizes.data<int32_t>();
  // Each expert's rows of x and its [N, K] matrix, as views of the stacked planes (row-major, so
  // expert e's share of every plane starts at e / E of it).
  const Tensor& xd = *x.dense;
  const size_t x_row = size_t(p.K) * dtype_size(xd.dtype);
  int64_t row = 0;
  for (int64_t e = 0; e < p.E; ++e) {
    const int64_t rows = g[e];
    if (rows == 0) continue;
    Tensor xe;
    xe.shape = {rows, p.K};
    xe.dtype = xd.dtype;
    xe.buffer = buffer_view(xd.buffer, size_t(row) * x_row, size_t(rows) * x_row);
    QTensor qe;
    Tensor de;
    Operand we;
    const auto share = [&](const BufferPtr& plane) {
      const size_t bytes = plane->bytes() / size_t(p.E);
      return buffer_view(plane, size_t(e) * bytes, bytes);
    };
    if (w.quant) {
      qe = *w.quant;
      qe.shape = {p.N, p.K};
      qe.device_view = nullptr;
      qe.codes = share(w.quant->codes);
      qe.scales = share(w.quant->scales);
      if (w.quant->biases) qe.biases = share(w.quant->biases);
      we.quant = &qe;
    } else {
      de = *w.dense;
      de.shape = {p.N, p.K};
      de.buffer = share(w.dense->buffer);
      we.dense = &de;
    }
    LinearParams lp;
    lp.M = rows;
    lp.N = p.N;
    lp.K = p.K;
    lp.out_shape = {rows, p.N};
    lp.out_dtype = DType::Float32;
    lp.int8_activations = p.int8_activations;
    linear(pool, Operand{&xe, nullptr}, we, nullptr, lp, y + row * p.N);
    row += rows;
  }
}

}  // namespace mto::cpu
