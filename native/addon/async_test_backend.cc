#include "async_test_backend.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"

namespace mto::addon {
namespace {

using Op = std::function<void(Backend& cpu)>;

std::atomic<int64_t> g_ops_run{0};
std::atomic<int64_t> g_prepared_on_js_thread{0};

// The "GPU": one thread that runs flushed batches in order, as a command queue does. Shared with
// the thread, which ends once the backend is gone and the queue is empty.
struct Queue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<Op>> batches;
  bool stop = false;
  bool running = false;
};

void run_queue(std::shared_ptr<Queue> q, BackendPtr cpu) {
  for (;;) {
    std::vector<Op> batch;
    {
      std::unique_lock<std::mutex> lock(q->mu);
      q->cv.wait(lock, [&] { return q->stop || !q->batches.empty(); });
      if (q->batches.empty()) {
        q->running = false;
        return;
      }
      batch = std::move(q->batches.front());
      q->batches.pop_front();
    }
    for (const Op& op : batch) {
      op(*cpu);
      g_ops_run.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

class AsyncTestBackend final : public Backend {
 public:
  AsyncTestBackend(BackendPtr cpu, AsyncTestScript script)
      : cpu_(std::move(cpu)),
        script_(std::move(script)),
        queue_(std::make_shared<Queue>()),
        js_thread_(std::this_thread::get_id()) {}
  ~AsyncTestBackend() override {
    std::lock_guard<std::mutex> lock(queue_->mu);
    queue_->stop = true;
    queue_->cv.notify_all();
  }

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
    prepared("quantize");
    return later(done, [&x, &out](Backend& b, Completion d) { b.quantize(x, out, std::move(d)); });
  }
  bool dequantize(const QTensor&, Tensor&, Completion) override { return false; }
  bool cast(const Tensor&, Tensor&, Completion) override { return false; }
  bool linear(const Operand& x, const Operand& w, const Tensor* bias, const LinearParams& p,
              Tensor& y, Completion done) override {
    prepared("linear");
    return later(done, [=, &y](Backend& b, Completion d) { b.linear(x, w, bias, p, y, std::move(d)); });
  }
  // As the metal backend: a and b of one dtype have a kernel, mixed dtypes are declined.
  bool matmul(const Tensor& a, const Tensor& b, const MatmulParams& p, Tensor& c, Completion done) override {
    if (a.dtype != b.dtype) return false;
    prepared("matmul");
    return later(done, [=, &a, &b, &c](Backend& cpu, Completion d) { cpu.matmul(a, b, p, c, std::move(d)); });
  }
  bool attention(const Operand& q, const Operand& k, const Operand& v, const AttentionParams& p,
                 Tensor& o, Completion done) override {
    prepared("attention");
    return later(done, [=, &o](Backend& b, Completion d) { b.attention(q, k, v, p, o, std::move(d)); });
  }

  // Ends the batch (a command buffer's commit): the "GPU" thread runs it after the earlier ones.
  void flush() override {
    std::vector<Op> batch;
    batch.swap(batch_);
    if (batch.empty()) return;
    // A GPU error fails every op of the command buffer: its ops complete with the error instead.
    if (script_.fail_batches.count(++batches_) > 0) batch.swap(fail_ops_of_batch_);
    fail_ops_of_batch_.clear();
    std::lock_guard<std::mutex> lock(queue_->mu);
    queue_->batches.push_back(std::move(batch));
    if (!queue_->running) {
      queue_->running = true;
      std::thread(run_queue, queue_, cpu_).detach();
    }
    queue_->cv.notify_all();
  }

 private:
  // As a Metal pipeline not compiled yet: asks the stream to prepare `kind` first (once).
  void prepared(const char* kind) {
    if (script_.compile_us <= 0) return;
    {
      std::lock_guard<std::mutex> lock(prepared_mu_);
      if (prepared_.count(kind) > 0) return;
    }
    throw EncodeNeedsPreparation{[this, kind] {
      if (std::this_thread::get_id() == js_thread_) g_prepared_on_js_thread.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(script_.compile_us));
      if (script_.compile_fail) {
        throw Error(code::Backend, std::string("compiling the pipeline for ") + kind + " failed (scripted)");
      }
      std::lock_guard<std::mutex> lock(prepared_mu_);
      prepared_.insert(kind);
    }};
  }

  // Queues the op for the next flush(); the operands are the caller's, alive until `done`
  // (core/backend.h). Scripted: the op fails instead of running, or runs after a delay.
  bool later(Completion done, std::function<void(Backend&, Completion)> run) {
    const int64_t n = ++ops_;
    const bool fail = script_.fail_ops.count(n) > 0;
    const char* code = script_.fail_code;
    const int64_t delay = script_.delay_us;
    batch_.push_back([=](Backend& cpu) {
      if (delay) std::this_thread::sleep_for(std::chrono::microseconds(delay));
      if (fail) return done(OpStatus{code, "the GPU failed running op " + std::to_string(n) + " (scripted)"});
      run(cpu, done);
    });
    // The failure of a whole batch, should this one be scripted to fail (flush() picks these).
    fail_ops_of_batch_.push_back([=](Backend&) {
      done(OpStatus{code, "the GPU failed running a command buffer (scripted)"});
    });
    return true;
  }

  BackendPtr cpu_;
  AsyncTestScript script_;
  std::shared_ptr<Queue> queue_;
  std::vector<Op> batch_;                // encoded since the last flush (JS thread, or the stream
  std::vector<Op> fail_ops_of_batch_;    // under its encode lock)
  int64_t ops_ = 0, batches_ = 0;
  const std::thread::id js_thread_;
  std::mutex prepared_mu_;
  std::set<std::string> prepared_;
};

}  // namespace

AsyncTestCounters async_test_counters() {
  return AsyncTestCounters{g_ops_run.load(), g_prepared_on_js_thread.load()};
}

BackendPtr make_async_test_backend(BackendPtr cpu, AsyncTestScript script) {
  return std::make_shared<AsyncTestBackend>(std::move(cpu), std::move(script));
}

}  // namespace mto::addon
