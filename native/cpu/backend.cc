// The cpu backend behind core/backend.h: host memory from a buffer pool (buffers.h) and the
// kernels of this directory, run on the calling thread with the backend's thread pool (the addon
// calls them from a task it posts to that pool, or inline for tiny ops). linear, matmul, attention
// and dequantize write float32, and other output dtypes go through a float32 staging buffer
// converted at the end; the model ops write their outputs' dtypes themselves.
#include <cstring>
#include <vector>

#include "../core/backend.h"
#include "buffers.h"
#include "ops.h"

namespace mto::cpu {
namespace {

// Runs a kernel that writes float32 into `out`: directly when out is float32, else through a
// staging buffer converted to out's dtype.
template <class Kernel>
void write_as(Tensor& out, Kernel&& kernel) {
  if (out.dtype == DType::Float32) {
    kernel(out.data<float>());
  } else {
    std::vector<float> staging(size_t(out.numel()));
    kernel(staging.data());
    from_float32(out.dtype, staging.data(), out.buffer->data(), staging.size());
  }
}

// Empty dimensions (core/ops.h): an op with an empty output runs no kernel, and one that reduces
// over nothing writes its output here, before any kernel (which may divide by the empty extent).
bool empty(const Tensor& t) { return t.numel() == 0; }
int64_t part_elements(const CopyPart& part) { return shape_numel(part.dims); }

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads)
      : pool_(threads), buffers_(CpuBufferPool::process_pool()) {}

  BackendInfo info() const override {
    BackendInfo i;
    i.threads = pool_.size();
    return i;
  }
  BufferPtr allocate(size_t bytes) override { return buffers_->allocate(bytes); }
  bool buffer_stats(SizeClassPool::Stats* out) const override {
    *out = buffers_->stats();
    return true;
  }
  bool runs_on_caller() const override { return true; }
  void post(std::function<void()> task) override { pool_.post(std::move(task)); }

  bool quantize(const Tensor& x, QTensor& out, Completion done) override {
    return run(done, [&] {
      if (!empty(x)) cpu::quantize(pool_, x, out);
    });
  }
  bool dequantize(const QTensor& q, Tensor& out, Completion done) override {
    return run(done, [&] {
      if (!empty(out)) write_as(out, [&](float* o) { cpu::dequantize(pool_, q, o); });
    });
  }
  bool cast(const Tensor& x, Tensor& out, Completion done) override {
    return run(done, [&] {
      if (!empty(out)) write_as(out, [&](float* o) { to_float32(x.dtype, x.buffer->data(), o, size_t(x.numel())); });
    });
  }
  bool linear(const Operand& x, const Operand& w, const Tensor* bias, const LinearParams& p,
              Tensor& y, Completion done) override {
    return run(done, [&] {
      if (empty(y)) return;
      if (p.K == 0) return fill_bias_rows(bias, y);
      write_as(y, [&](float* o) { cpu::linear(pool_, x, w, bias, p, o); });
    });
  }
  bool matmul(const Tensor& a, const Tensor& b, const MatmulParams& p, Tensor& c,
              Completion done) override {
    return run(done, [&] {
      if (empty(c)) return;
      if (p.K == 0) return fill_zeros(c);
      write_as(c, [&](float* o) { cpu::matmul(pool_, a, b, p, o); });
    });
  }
  bool attention(const Operand& q, const Operand& k, const Operand& v, const AttentionParams& p,
                 Tensor& o, Completion done) override {
    return run(done, [&] {
      if (empty(o)) return;
      if (p.Lk == 0) return fill_zeros(o);  // no key to see: every row is zeros
      write_as(o, [&](float* out) { cpu::attention(pool_, q, k, v, p, out); });
    });
  }
  bool unary(UnaryOp op, const Tensor& x, const ElementwiseParams& p, Tensor& out, Completion done) override {
    return run(done, [&] {
      if (!empty(out)) cpu::unary(pool_, op, x, p, out);
    });
  }
  bool binary(BinaryOp op, const Tensor& a, const Tensor& b, const ElementwiseParams& p, Tensor& out,
              Completion done) override {
    return run(done, [&] {
      if (!empty(out)) cpu::binary(pool_, op, a, b, p, out);
    });
  }
  bool norm(const Tensor& x, const Tensor* weight, const Tensor* bias, const NormParams& p, Tensor& out,
            Completion done) override {
    return run(done, [&] {
      if (!empty(out)) cpu::norm(pool_, x, weight, bias, p, out);
    });
  }
  bool rope(const Tensor& x, const Tensor* positions, const Tensor* freqs, const RopeParams& p, Tensor& out,
            Completion done) override {
    return run(done, [&] {
      if (!empty(out)) cpu::rope(pool_, x, positions, freqs, p, out);
    });
  }
  bool softmax(const Tensor& x, const RowsParams& p, Tensor& out, Completion done) override {
    return run(done, [&] {
      if (!empty(out)) cpu::softmax(pool_, x, p, out);
    });
  }
  bool argmax(const Tensor& x, const PickParams& p, Tensor& ids, Completion done) override {
    return run(done, [&] {
      if (!empty(ids)) cpu::argmax(pool_, x, p, ids);
    });
  }
  bool top_k(const Tensor& x, const PickParams& p, Tensor& values, Tensor& ids, Completion done) override {
    return run(done, [&] {
      if (!empty(ids)) cpu::top_k(pool_, x, p, values, ids);
    });
  }
  bool sample(const Tensor& logits, const PickParams& p, Tensor& ids, Completion done) override {
    return run(done, [&] {
      if (!empty(ids)) cpu::sample(pool_, logits, p, ids);
    });
  }
  bool embedding(const Operand& table, const Tensor& ids, const EmbeddingParams& p, Tensor& out,
                 Completion done) override {
    return run(done, [&] { cpu::embedding(pool_, table, ids, p, out); });
  }
  bool group_rows(const Tensor& ids, const GroupRowsParams& p, Tensor& sizes, Tensor& rows, Tensor& positions,
                  Completion done) override {
    return run(done, [&] { cpu::group_rows(ids, p, sizes, rows, positions); });
  }
  bool grouped_linear(const Operand& x, const Operand& w, const Tensor& group_sizes, const GroupedLinearParams& p,
                      Tensor& y, Completion done) override {
    return run(done, [&] {
      if (empty(y) || p.K == 0) {  // the sizes still have to add up
        check_group_sizes(group_sizes, p);
        return fill_zeros(y);
      }
      write_as(y, [&](float* o) { cpu::grouped_linear(pool_, x, w, group_sizes, p, o); });
    });
  }
  bool copy(const std::vector<const Tensor*>& srcs, const std::vector<CopyPart>& parts, Tensor& dst,
            Completion done) override {
    return run(done, [&] {
      for (size_t i = 0; i < parts.size(); ++i) {
        if (part_elements(parts[i]) == 0) continue;  // an empty input of concat, an empty write
        // A write from a view of dst's own storage reads what it overwrites: copy src aside first.
        if (srcs[i]->buffer->data() == dst.buffer->data()) {
          Tensor aside = *srcs[i];
          aside.buffer = allocate(srcs[i]->bytes());
          std::memcpy(aside.buffer->data(), srcs[i]->buffer->data(), srcs[i]->bytes());
          cpu::copy(pool_, aside, parts[i], dst);
        } else {
          cpu::copy(pool_, *srcs[i], parts[i], dst);
        }
      }
    });
  }

 private:
  template <class Fn>
  static bool run(const Completion& done, Fn&& fn) {
    done(capture_status(fn));
    return true;
  }

  ThreadPool pool_;
  std::shared_ptr<CpuBufferPool> buffers_;
};

}  // namespace
}  // namespace mto::cpu

namespace mto {
BackendPtr make_cpu_backend(int threads) { return std::make_shared<cpu::CpuBackend>(threads); }
}  // namespace mto
