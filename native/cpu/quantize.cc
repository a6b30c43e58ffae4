// Quantization and dequantization on the cpu backend: rows are independent, so they are split
// across the pool (guided: the threads finish together). Input that is not float32 is converted a
// few rows at a time, into a buffer that stays in cache, not a chunk's whole share at once.
#include <algorithm>
#include <vector>

#include "ops.h"

namespace mto::cpu {
namespace {

constexpr int64_t kConvertFloats = 16384;  // float32 values converted at a time (64 KiB)

}  // namespace

void quantize(ThreadPool& pool, const Tensor& x, QTensor& out) {
  const int64_t rows = out.rows(), cols = out.cols();
  const size_t code_bytes = row_code_bytes(out.format, cols);
  const size_t scale_bytes = row_scale_bytes(out.format, cols, out.block);
  const bool affine = format_info(out.format).affine;
  auto* codes = static_cast<uint8_t*>(out.codes->data());
  auto* scales = static_cast<uint8_t*>(out.scales->data());
  auto* biases = affine ? static_cast<uint8_t*>(out.biases->data()) : nullptr;
  // Rows r0 .. r0 + n - 1 from float32 values at src.
  const auto quantize_rows = [&](int64_t r0, int64_t n, const float* src) {
    if (affine) {
      affine_quantize_rows(out.format, out.block, src, n, cols, codes + r0 * code_bytes,
                           reinterpret_cast<uint16_t*>(scales + r0 * scale_bytes),
                           reinterpret_cast<uint16_t*>(biases + r0 * scale_bytes));
    } else {
      mx_quantize_rows(out.format, src, n, cols, codes + r0 * code_bytes,
                       scales + r0 * scale_bytes);
    }
  };
  const int64_t step = std::max<int64_t>(1, kConvertFloats / cols);  // rows converted at a time
  const auto run = [&](int64_t r0, int64_t r1) {
    if (x.dtype == DType::Float32) {
      quantize_rows(r0, r1 - r0, x.data<float>() + r0 * cols);
      return;
    }
    const auto* src = static_cast<const uint8_t*>(x.buffer->data());
    std::vector<float> tmp(size_t(std::min(step, r1 - r0) * cols));
    for (int64_t r = r0; r < r1; r += step) {
      const int64_t n = std::min(step, r1 - r);
      to_float32(x.dtype, src + size_t(r * cols) * dtype_size(x.dtype), tmp.data(),
                 size_t(n * cols));
      quantize_rows(r, n, tmp.data());
    }
  };
  pool.parallel_for(rows, step, run, ThreadPool::Schedule::Guided);
  out.fp8_nan_codes = false;  // the quantizers never write a NaN code (a NaN block's are 0)
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
