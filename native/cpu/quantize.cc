// Quantization and dequantization on the cpu backend: rows are independent, so they are split
// across the pool (guided: the threads finish together); each chunk converts its rows to float32
// first when the input is not float32.
#include <algorithm>
#include <vector>

#include "ops.h"

namespace mto::cpu {

void quantize(ThreadPool& pool, const Tensor& x, QTensor& out) {
  const int64_t rows = out.rows(), cols = out.cols();
  const size_t code_bytes = row_code_bytes(out.format, cols);
  const size_t scale_bytes = row_scale_bytes(out.format, cols, out.block);
  const bool affine = format_info(out.format).affine;
  auto* codes = static_cast<uint8_t*>(out.codes->data());
  auto* scales = static_cast<uint8_t*>(out.scales->data());
  auto* biases = affine ? static_cast<uint8_t*>(out.biases->data()) : nullptr;
  const int64_t grain = std::max<int64_t>(1, 16384 / cols);
  const auto run = [&](int64_t r0, int64_t r1) {
    const int64_t n = r1 - r0;
    std::vector<float> tmp;
    const float* src;
    if (x.dtype == DType::Float32) {
      src = x.data<float>() + r0 * cols;
    } else {
      tmp.resize(size_t(n * cols));
      to_float32(x.dtype, static_cast<const uint8_t*>(x.buffer->data()) +
                              size_t(r0 * cols) * dtype_size(x.dtype),
                 tmp.data(), size_t(n * cols));
      src = tmp.data();
    }
    if (affine) {
      affine_quantize_rows(out.format, out.block, src, n, cols, codes + r0 * code_bytes,
                           reinterpret_cast<uint16_t*>(scales + r0 * scale_bytes),
                           reinterpret_cast<uint16_t*>(biases + r0 * scale_bytes));
    } else {
      mx_quantize_rows(out.format, src, n, cols, codes + r0 * code_bytes,
                       scales + r0 * scale_bytes);
    }
  };
  pool.parallel_for(rows, grain, run, ThreadPool::Schedule::Guided);
}

void dequantize(ThreadPool& pool, const QTensor& q, float* out) {
  const QuantView view = q.view();
  const int64_t cols = view.cols;
  const auto run = [&](int64_t r0, int64_t r1) {
    dequantize_rows(view, r0, r1 - r0, out + r0 * cols);
  };
  pool.parallel_for(view.rows, std::max<int64_t>(1, 16384 / cols), run,
                    ThreadPool::Schedule::Guided);
}

}  // namespace mto::cpu
