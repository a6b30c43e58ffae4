#include "async_test_backend.h"

#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"

namespace mto::addon {
namespace {

class AsyncTestBackend final : public Backend {
 public:
  explicit AsyncTestBackend(BackendPtr cpu) : cpu_(std::move(cpu)) {}

  BackendInfo info() const override { return cpu_->info(); }
  BufferPtr allocate(size_t bytes) override { return cpu_->allocate(bytes); }
  bool buffer_stats(SizeClassPool::Stats* out) const override { return cpu_->buffer_stats(out); }
  bool runs_on_caller() const override { return false; }

  bool quantize(const Tensor& x, QTensor& out, Completion done) override {
    // What the metal backend does when a library fails to compile: throw before encoding.
    if (out.format == Format::MXINT2) {
      throw Error(code::Backend, "compiling the Metal library shaders/quantize.metal (MSL 3.1) failed: "
                                 "simulated compiler error");
    }
    return later([=, &x, &out](BackendPtr b) { b->quantize(x, out, done); });
  }
  bool dequantize(const QTensor&, Tensor&, Completion) override { return false; }
  bool cast(const Tensor&, Tensor&, Completion) override { return false; }
  bool linear(const Operand& x, const Operand& w, const Tensor* bias, const LinearParams& p,
              Tensor& y, Completion done) override {
    return later([=, &y](BackendPtr b) { b->linear(x, w, bias, p, y, done); });
  }
  // As the metal backend: a and b of one dtype have a kernel, mixed dtypes are declined.
  bool matmul(const Tensor& a, const Tensor& b, const MatmulParams& p, Tensor& c, Completion done) override {
    if (a.dtype != b.dtype) return false;
    return later([=, &a, &b, &c](BackendPtr cpu) { cpu->matmul(a, b, p, c, done); });
  }
  bool attention(const Operand& q, const Operand& k, const Operand& v, const AttentionParams& p,
                 Tensor& o, Completion done) override {
    return later([=, &o](BackendPtr b) { b->attention(q, k, v, p, o, done); });
  }

 private:
  // Queues `op` for the next flush(), as the metal backend holds ops in one command buffer. The
  // operands are the caller's, alive until `done` (core/backend.h).
  template <class Op>
  bool later(Op op) {
    std::lock_guard<std::mutex> lock(mu_);
    batch_.push_back(std::move(op));
    return true;
  }

  // Runs the batch on a new thread, in order, as a GPU would finish the ops after the calls
  // returned. Ops that were never flushed never complete: the tests would hang.
  void flush() override {
    std::vector<std::function<void(BackendPtr)>> batch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      batch.swap(batch_);
    }
    if (batch.empty()) return;
    std::thread([cpu = cpu_, batch = std::move(batch)] {
      for (const auto& op : batch) op(cpu);
    }).detach();
  }

  BackendPtr cpu_;
  std::mutex mu_;
  std::vector<std::function<void(BackendPtr)>> batch_;
};

}  // namespace

BackendPtr make_async_test_backend(BackendPtr cpu) {
  return std::make_shared<AsyncTestBackend>(std::move(cpu));
}

}  // namespace mto::addon
