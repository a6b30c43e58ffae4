#include "async_test_backend.h"

#include <thread>

namespace mto::addon {
namespace {

class AsyncTestBackend final : public Backend {
 public:
  explicit AsyncTestBackend(BackendPtr cpu) : cpu_(std::move(cpu)) {}

  BackendInfo info() const override { return cpu_->info(); }
  BufferPtr allocate(size_t bytes) override { return cpu_->allocate(bytes); }
  bool runs_on_caller() const override { return false; }

  bool quantize(const Tensor& x, QTensor& out, Completion done) override {
    return later([=, &x, &out](BackendPtr b) { b->quantize(x, out, done); });
  }
  bool dequantize(const QTensor&, Tensor&, Completion) override { return false; }
  bool cast(const Tensor&, Tensor&, Completion) override { return false; }
  bool linear(const Operand& x, const Operand& w, const Tensor* bias, const LinearParams& p,
              Tensor& y, Completion done) override {
    return later([=, &y](BackendPtr b) { b->linear(x, w, bias, p, y, done); });
  }
  bool matmul(const Tensor&, const Tensor&, const MatmulParams&, Tensor&, Completion) override {
    return false;
  }
  bool attention(const Operand& q, const Operand& k, const Operand& v, const AttentionParams& p,
                 Tensor& o, Completion done) override {
    return later([=, &o](BackendPtr b) { b->attention(q, k, v, p, o, done); });
  }

 private:
  // Runs `op` on a new thread, as a GPU would finish an op after the call returned. The operands
  // are the caller's, alive until `done` (core/backend.h).
  template <class Op>
  bool later(Op op) {
    std::thread([cpu = cpu_, op] { op(cpu); }).detach();
    return true;
  }

  BackendPtr cpu_;
};

}  // namespace

BackendPtr make_async_test_backend(BackendPtr cpu) {
  return std::make_shared<AsyncTestBackend>(std::move(cpu));
}

}  // namespace mto::addon
