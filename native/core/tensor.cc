#include "tensor.h"

#include <cstdlib>
#include <new>
#include <string>

#include "error.h"
#include "portable.h"

namespace mto {

Buffer::Buffer(size_t bytes) : data_(nullptr), bytes_(bytes) {
  // Rounded up to whole 64-byte lines; never 0 bytes.
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  data_ = aligned_alloc_bytes(64, rounded);
  if (!data_) {
    throw Error(code::OOM, "could not allocate " + std::to_string(bytes) + " bytes of host memory");
  }
}

Buffer::~Buffer() {
  if (owned_) aligned_free(data_, 64);
}

BufferPtr make_buffer(size_t bytes) { return std::make_shared<Buffer>(bytes); }

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

QTensorPtr make_qtensor(const Shape& shape, Format f, int block) {
  return make_qtensor(shape, f, block, make_buffer);
}

QTensorPtr make_qtensor(const Shape& shape, Format f, int block, const Allocator& alloc) {
  auto q = std::make_shared<QTensor>();
  q->shape = shape;
  q->format = f;
  q->block = block;
  const int64_t rows = q->rows(), cols = q->cols();
  q->codes = alloc(size_t(rows) * row_code_bytes(f, cols));
  q->scales = alloc(size_t(rows) * row_scale_bytes(f, cols, block));
  if (format_info(f).affine) q->biases = alloc(size_t(rows) * row_scale_bytes(f, cols, block));
  return q;
}

TensorPtr make_tensor(const Shape& shape, DType dtype, const Allocator& alloc) {
  auto t = std::make_shared<Tensor>();
  t->shape = shape;
  t->dtype = dtype;
  t->buffer = alloc(t->bytes());
  return t;
}

}  // namespace mto
