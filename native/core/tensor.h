// Backend-neutral tensor storage: a dense tensor (shape + dtype + bytes) and a quantized tensor
// (shape + format + code, scale and bias planes). The cpu backend's buffers are aligned host
// memory, the metal backend's MTLBuffers, behind the same Buffer interface (both from a pool:
// buffer_pool.h).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "dtype.h"
#include "formats.h"

namespace mto {

class OpEvent;  // stream.h: the completion of the op that writes a tensor

// One read of a buffer by JS, finished once its copy is done (from any thread).
class ReadToken {
 public:
  void finish();
  bool done() const;
  void wait();

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// One allocation the host can read and write. This class owns 64-byte aligned host memory (cache
// line / AVX-512 width); a backend's subclass owns device storage the host sees at data() (the
// metal backend: a shared MTLBuffer's contents on unified memory).
class Buffer {
 public:
  explicit Buffer(size_t bytes);  // throws Error(E_OOM) when the allocation fails
  virtual ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // The last queued op that wrote into this storage in place (dev.write), through any tensor
  // viewing it; null when none did. JS thread only.
  std::shared_ptr<OpEvent> last_write;

  // Reads JS started (data(), toFloat32(), codes()...) whose copies may not have finished: an
  // in-place write queued after them waits for these, on a backend thread, so that a read sees
  // the values of the moment it was called. JS thread only (the tokens are thread-safe).
  std::shared_ptr<ReadToken> begin_read();
  std::vector<std::shared_ptr<ReadToken>> reads_in_flight();

 protected:
  struct Adopt {};
  // `data` stays the subclass's to free.
  Buffer(Adopt, void* data, size_t bytes) : data_(data), bytes_(bytes), owned_(false) {}

 private:
  void* data_;
  size_t bytes_;
  bool owned_ = true;
  std::vector<std::shared_ptr<ReadToken>> reads_;
};
using BufferPtr = std::shared_ptr<Buffer>;
BufferPtr make_buffer(size_t bytes);
// `bytes` of `parent` from byte `offset` (within it), keeping the parent alive: the rows of one
// expert of a stacked weight, one group of rows of x.
BufferPtr buffer_view(const BufferPtr& parent, size_t offset, size_t bytes);
// The host memory behind Buffer(bytes) (64-byte aligned; from 2 MiB on, 2 MiB aligned with huge
// pages asked for): null when it cannot be had. host_free takes the same `bytes`.
void* host_alloc(size_t bytes);
void host_free(void* p, size_t bytes);
// Where a backend's tensors get their storage (Backend::allocate).
using Allocator = std::function<BufferPtr(size_t bytes)>;

using Shape = std::vector<int64_t>;
// The most elements a tensor may have: 2^53 - 1, the largest count JavaScript holds exactly, which
// also keeps every byte count (at most 8 bytes an element) far from int64_t / size_t overflow.
inline constexpr int64_t kMaxElements = (int64_t(1) << 53) - 1;
// The product of the dimensions, for shapes check_shape accepted (no overflow check).
int64_t shape_numel(const Shape& s);
// The product of every dimension but the last (1 for rank 0 and 1): the rows of an op over the
// last axis, also when that axis is 0 (numel / cols would divide by zero).
int64_t shape_rows(const Shape& s);
// Throws Error(E_SHAPE) naming `what` unless every dimension is >= 0 and the product of the
// nonzero ones, computed without overflow, is at most kMaxElements (so that strides and byte
// counts stay in range even where a 0 makes the tensor empty; NumPy and PyTorch accept any
// dimension of 0). Every shape that reaches a tensor passes here: those from JS (addon
// read_shape), from a file header, and every op output (make_tensor).
void check_shape(const Shape& s, const std::string& what);
std::string shape_string(const Shape& s);  // "[2, 3, 4]"

struct Tensor {
  Shape shape;
  DType dtype = DType::Float32;
  BufferPtr buffer;
  // The queued op that writes the tensor (null: written when made). Set and read on the JS
  // thread only: ops capture it when queued, reads wait for it.
  std::shared_ptr<OpEvent> event;

  // What a reader (an op or a read) waits for: the last in-place write into the storage, which
  // comes after the op that made it, else that op.
  const std::shared_ptr<OpEvent>& ready_event() const {
    return buffer && buffer->last_write ? buffer->last_write : event;
  }

  int64_t numel() const { return shape_numel(shape); }
  size_t bytes() const { return size_t(numel()) * dtype_size(dtype); }
  template <class T> const T* data() const { return static_cast<const T*>(buffer->data()); }
  template <class T> T* data() { return static_cast<T*>(buffer->data()); }
};
using TensorPtr = std::shared_ptr<Tensor>;

// A backend's own handle on a quantized tensor's planes (the metal backend on tensorops-mx: one
// MTLTensor with a scale plane over codes + scales, native/metal/qtensor.mm). The planes stay the
// storage every backend reads; the view only keeps its handle alive as long as the tensor.
struct QTensorDeviceView {
  virtual ~QTensorDeviceView() = default;
  virtual const char* kind() const = 0;  // "mtltensor-scale-plane"
};

// A bool that one thread may set while others read it, where any order of the two is fine (a
// hint whose every value is safe); copied by value (QTensor is copied for views of its planes).
class RelaxedFlag {
 public:
  RelaxedFlag(bool v) : v_(v) {}  // NOLINT(google-explicit-constructor): a bool's stand-in
  RelaxedFlag(const RelaxedFlag& o) : v_(o.get()) {}
  RelaxedFlag& operator=(const RelaxedFlag& o) {
    set(o.get());
    return *this;
  }
  RelaxedFlag& operator=(bool v) {
    set(v);
    return *this;
  }
  bool get() const { return v_.load(std::memory_order_relaxed); }
  void set(bool v) { v_.store(v, std::memory_order_relaxed); }

 private:
  std::atomic<bool> v_;
};

struct QTensor {
  std::shared_ptr<OpEvent> event;  // as Tensor::event
  Shape shape;  // logical shape; the last dim is blocked
  Format format = Format::MXFP4;
  int block = 32;
  BufferPtr codes, scales, biases;  // biases only for affine formats
  std::shared_ptr<QTensorDeviceView> device_view;  // null: the planes are all there is
  // FP8 E4M3 only: whether any code may be the NaN code (magnitude 0x7F). False lets the cpu
  // fused decode kernels skip looking for it in every block (~1.1x from memory with AVX2 or
  // AVX-512 without VBMI); set by the cpu quantizer (which never writes one) and by
  // fromQuantized after a scan of the codes, made true by a write() of a tensor whose codes may
  // hold one. True is always safe. Atomic: ops already queued read it on the pool threads while
  // the JS thread's write() raises it (they then take the checking kernels: safe), and the
  // quantizer lowers it on a pool thread for a tensor still being made.
  RelaxedFlag fp8_nan_codes{true};
  // Affine only: whether every bias is -affine_centre(format) * its group's scale, exactly (GGUF's
  // Q4_0 and Q8_0: value d * (q - 8), d * (q - 128)). True lets the cpu decode kernels compute the
  // biases from the scales instead of reading their plane (2 of Q4_0's 20 bytes a block). Set by
  // fromQuantized after a scan; lowered by a write() whose src is not so (ops queued before it
  // read the old planes, which were); false is always safe.
  RelaxedFlag centred_biases{false};

  // As Tensor::ready_event: the last in-place write into the planes (dev.write of a quantized
  // cache), else the op that made the tensor.
  const std::shared_ptr<OpEvent>& ready_event() const {
    return codes && codes->last_write ? codes->last_write : event;
  }

  int64_t cols() const { return shape.back(); }
  int64_t rows() const { return shape_rows(shape); }
  QuantView view() const {
    return QuantView{format, block, rows(), cols(), static_cast<const uint8_t*>(codes->data()),
                     scales->data(),
                     biases ? static_cast<const uint16_t*>(biases->data()) : nullptr,
                     fp8_nan_codes.get(), centred_biases.get()};
  }
  size_t bytes() const {
    return codes->bytes() + scales->bytes() + (biases ? biases->bytes() : 0);
  }
};
using QTensorPtr = std::shared_ptr<QTensor>;

// Allocates the planes of a quantized tensor of `shape` (its format rules validated by the
// caller; its size is checked here, before any allocation), in host memory or from `alloc`.
QTensorPtr make_qtensor(const Shape& shape, Format f, int block);
QTensorPtr make_qtensor(const Shape& shape, Format f, int block, const Allocator& alloc);
// A dense tensor with storage from `alloc`; throws E_SHAPE before allocating when the shape is
// too large (an op's output shape combines its inputs' dimensions, so it can overflow alone).
TensorPtr make_tensor(const Shape& shape, DType dtype, const Allocator& alloc);
// The same, taking the shape over (an op's out_shape: one allocation fewer on the JS thread).
TensorPtr make_tensor(Shape&& shape, DType dtype, const Allocator& alloc);

}  // namespace mto
