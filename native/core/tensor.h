// Backend-neutral tensor storage: a dense tensor (shape + dtype + bytes) and a quantized tensor
// (shape + format + code, scale and bias planes). The cpu backend owns plain aligned host memory;
// the metal backend will own MTLBuffers behind the same Buffer interface.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "dtype.h"
#include "formats.h"

namespace mto {

// One owned allocation, 64-byte aligned (cache line / AVX-512 width).
class Buffer {
 public:
  explicit Buffer(size_t bytes);  // throws Error(E_OOM) when the allocation fails
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_;
  size_t bytes_;
};
using BufferPtr = std::shared_ptr<Buffer>;
BufferPtr make_buffer(size_t bytes);

using Shape = std::vector<int64_t>;
int64_t shape_numel(const Shape& s);
std::string shape_string(const Shape& s);  // "[2, 3, 4]"

struct Tensor {
  Shape shape;
  DType dtype = DType::Float32;
  BufferPtr buffer;

  int64_t numel() const { return shape_numel(shape); }
  size_t bytes() const { return size_t(numel()) * dtype_size(dtype); }
  template <class T> const T* data() const { return static_cast<const T*>(buffer->data()); }
  template <class T> T* data() { return static_cast<T*>(buffer->data()); }
};
using TensorPtr = std::shared_ptr<Tensor>;

struct QTensor {
  Shape shape;  // logical shape; the last dim is blocked
  Format format = Format::MXFP4;
  int block = 32;
  BufferPtr codes, scales, biases;  // biases only for affine formats

  int64_t cols() const { return shape.back(); }
  int64_t rows() const { return shape_numel(shape) / cols(); }
  QuantView view() const {
    return QuantView{format, block, rows(), cols(), static_cast<const uint8_t*>(codes->data()),
                     scales->data(),
                     biases ? static_cast<const uint16_t*>(biases->data()) : nullptr};
  }
  size_t bytes() const {
    return codes->bytes() + scales->bytes() + (biases ? biases->bytes() : 0);
  }
};
using QTensorPtr = std::shared_ptr<QTensor>;

// Allocates the planes of a quantized tensor of `shape` (validated by the caller).
QTensorPtr make_qtensor(const Shape& shape, Format f, int block);

}  // namespace mto
