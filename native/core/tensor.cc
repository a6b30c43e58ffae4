#include "tensor.h"

#include <algorithm>

#include <cstdlib>
#include <new>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "error.h"
#include "portable.h"

namespace mto {

namespace {
// Large buffers (weights, K/V caches, activations of long prompts) start on a 2 MiB boundary and,
// on Linux, ask for transparent huge pages: kernels stream them or stride across their rows, and
// with 4 KiB pages every few rows would cost a TLB miss (dearer still under a hypervisor; 2 MiB
// K and V caches streamed by attention decode took ~1.1-1.2x as long with 4 KiB pages here). Only
// whole huge pages inside the buffer are asked for: a buffer never commits more than its size.
constexpr size_t kHugePage = size_t(2) << 20;
size_t alignment_for(size_t bytes) { return bytes >= kHugePage ? kHugePage : 64; }
}  // namespace

void* host_alloc(size_t bytes) {
  // Whole 64-byte lines (or 2 MiB pages: aligned_alloc's size is a multiple of the alignment;
  // the part past `bytes` is never touched, so never committed); never 0 bytes.
  const size_t align = alignment_for(bytes);
  size_t rounded = (bytes + align - 1) / align * align;
  if (rounded == 0) rounded = 64;
  void* p = aligned_alloc_bytes(align, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // A hint: failure is harmless.
  if (p && align == kHugePage) madvise(p, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
#endif
  return p;
}

void host_free(void* p, size_t bytes) { aligned_free(p, alignment_for(bytes)); }

Buffer::Buffer(size_t bytes) : data_(host_alloc(bytes)), bytes_(bytes) {
  if (!data_) {
    throw Error(code::OOM, "could not allocate " + std::to_string(bytes) + " bytes of host memory");
  }
}

Buffer::~Buffer() {
  if (owned_) host_free(data_, bytes_);
}

BufferPtr make_buffer(size_t bytes) { return std::make_shared<Buffer>(bytes); }

void ReadToken::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
}

bool ReadToken::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void ReadToken::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
}

std::shared_ptr<ReadToken> Buffer::begin_read() {
  reads_in_flight();  // drops the finished ones
  reads_.push_back(std::make_shared<ReadToken>());
  return reads_.back();
}

std::vector<std::shared_ptr<ReadToken>> Buffer::reads_in_flight() {
  reads_.erase(std::remove_if(reads_.begin(), reads_.end(), [](const std::shared_ptr<ReadToken>& t) { return t->done(); }),
               reads_.end());
  return reads_;
}

namespace {
class BufferView final : public Buffer {
 public:
  BufferView(BufferPtr parent, size_t offset, size_t bytes)
      : Buffer(Adopt{}, static_cast<uint8_t*>(parent->data()) + offset, bytes), parent_(std::move(parent)) {}

 private:
  BufferPtr parent_;
};
}  // namespace

BufferPtr buffer_view(const BufferPtr& parent, size_t offset, size_t bytes) {
  return std::make_shared<BufferView>(parent, offset, bytes);
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

int64_t shape_rows(const Shape& s) {
  int64_t n = 1;
  for (size_t i = 0; i + 1 < s.size(); ++i) n *= s[i];
  return n;
}

void check_shape(const Shape& s, const std::string& what) {
  bool empty = false;
  for (int64_t d : s) empty = empty || d == 0;
  int64_t n = 1;  // the product of the nonzero dimensions
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] < 0) {
      throw Error(code::Shape, what + "[" + std::to_string(i) + "] must be a non-negative integer; got " +
                                   std::to_string(s[i]));
    }
    if (s[i] == 0) continue;
    if (s[i] > kMaxElements / n) {  // n * s[i] > kMaxElements, without computing the product
      throw Error(code::Shape, what + " " + shape_string(s) +
                                   (empty ? ": its nonzero dimensions multiply to more than the 2^53 - 1 elements a tensor may hold"
                                          : " has more elements than the 2^53 - 1 a tensor may hold"));
    }
    n *= s[i];
  }
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
  check_shape(shape, "the quantized tensor's shape");
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
  return make_tensor(Shape(shape), dtype, alloc);
}

TensorPtr make_tensor(Shape&& shape, DType dtype, const Allocator& alloc) {
  check_shape(shape, "the tensor's shape");
  auto t = std::make_shared<Tensor>();
  t->shape = std::move(shape);
  t->dtype = dtype;
  t->buffer = alloc(t->bytes());
  return t;
}

}  // namespace mto
