#include "async_test_backend.h"
#include "async_test_kernel.h"

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

#include "core/dispatch_plan.h"
#include "core/error.h"
#include "core/library_fallback.h"

namespace mto::addon {
namespace {

using Op = std::function<void(Backend& cpu)>;

std::atomic<int64_t> g_ops_run{0};
std::atomic<int64_t> g_prepared_on_js_thread{0};
std::mutex g_by_library_mu;
std::map<std::string, int64_t> g_ops_by_library;

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
        budget_(CommitPolicy{script_.commit_ops, CommitPolicy{}.max_bytes}),
        js_thread_(std::this_thread::get_id()) {}
  ~AsyncTestBackend() override {
    std::lock_guard<std::mutex> lock(queue_->mu);
    queue_->stop = true;
    queue_->cv.notify_all();
  }

  BackendInfo info() const override {
    BackendInfo i = cpu_->info();
    i.fallbacks = unusable_.list();
    return i;
  }
  BufferPtr allocate(size_t bytes) override { return cpu_->allocate(bytes); }
  bool buffer_stats(SizeClassPool::Stats* out) const override { return cpu_->buffer_stats(out); }
  bool runs_on_caller() const override { return false; }

  bool quantize(const Tensor& x, QTensor& out, Completion done) override {
    // A backend whose encode throws (a plan that does not fit its pipeline, say): before encoding.
    if (out.format == Format::MXINT2) {
      throw Error(code::Backend, "encoding quantize to mxint2 failed: simulated encode error");
    }
    prepared("quantize");
    return later(done, [&x, &out](Backend& b, Completion d) { b.quantize(x, out, std::move(d)); });
  }
  bool dequantize(const QTensor&, Tensor&, Completion) override { return false; }
  bool cast(const Tensor&, Tensor&, Completion) override { return false; }
  bool linear(const Operand& x, const Operand& w, const Tensor* bias, const LinearParams& p,
              Tensor& y, Completion done) override {
    std::vector<std::string> libraries;
    if (scripted_tier()) {
      if (!x.dense || !w.quant) return false;  // as the metal backend: no dense-w kernel
      const QTensor& q = *w.quant;
      if (!libraries_ready([&](Tier t) {
            return plan::plan_linear(q.format, q.block, x.dense->dtype, y.dtype, p.M, p.N, p.K, bias != nullptr, t);
          }, &libraries)) {
        return false;
      }
    }
    prepared("linear");
    count(libraries);
    return later(done, [=, &y](Backend& b, Completion d) { b.linear(x, w, bias, p, y, std::move(d)); });
  }
  // As the metal backend: a and b of one dtype have a kernel, mixed dtypes are declined.
  bool matmul(const Tensor& a, const Tensor& b, const MatmulParams& p, Tensor& c, Completion done) override {
    if (a.dtype != b.dtype) return false;
    std::vector<std::string> libraries;
    if (scripted_tier() && !libraries_ready([&](Tier t) {
          return plan::plan_matmul(a.dtype, b.dtype, c.dtype, p.batch, p.M, p.N, p.K, p.b_batched, t);
        }, &libraries)) {
      return false;
    }
    prepared("matmul");
    count(libraries);
    return later(done, [=, &a, &b, &c](Backend& cpu, Completion d) { cpu.matmul(a, b, p, c, std::move(d)); });
  }
  bool attention(const Operand& q, const Operand& k, const Operand& v, const AttentionParams& p,
                 Tensor& o, Completion done) override {
    std::vector<std::string> libraries;
    if (scripted_tier()) {
      // As the metal backend: dense q, k/v of q's dtype or both mxfp8.
      if (!q.dense || (k.quant != nullptr) != (v.quant != nullptr)) return false;
      const bool kv_quantized = k.quant != nullptr;
      if (!kv_quantized && (k.dense->dtype != q.dense->dtype || v.dense->dtype != q.dense->dtype)) return false;
      const Format kv_format = kv_quantized ? k.quant->format : Format::MXFP8_E4M3;
      const DType mask = p.mask ? p.mask->dtype : DType::Bool;
      if (!libraries_ready([&](Tier t) {
            return plan::plan_attention(p, q.dense->dtype, o.dtype, kv_quantized, kv_format, mask, t);
          }, &libraries)) {
        return false;
      }
    }
    prepared("attention");
    count(libraries);
    return later(done, [=, &o](Backend& b, Completion d) { b.attention(q, k, v, p, o, std::move(d)); });
  }

  // Users' kernels: compiled and "run" by stand-ins (async_test_kernel.h), in stream order.
  // Any tier: this backend stands in for a Mac that has them all.
  bool compile_user_kernel(const std::string& name, const std::string& source, Tier, UserKernelCompiled done) override {
    test_compile_user_kernel(name, source, std::move(done));
    return true;
  }
  bool user_kernel(const UserKernelLaunch& launch, Completion done) override {
    return later(done, [launch](Backend&, Completion d) {
      test_run_user_kernel(launch);
      d(OpStatus{});
    });
  }

  // Ends the batch (a command buffer's commit): the "GPU" thread runs it after the earlier ones.
  void flush() override {
    std::vector<Op> batch;
    batch.swap(batch_);
    budget_.committed();
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

  bool scripted_tier() const { return script_.tier != Tier::Cpu; }

  // The op planned at the scripted tier around the unusable libraries (core/library_fallback.h),
  // as the metal backend plans it: false when no tier's libraries can run it (the op is declined)
  // or no kernel covers it; true when every library of the plan is ready (its libraries are then
  // in *used). A library not ready yet is prepared first: the stream runs the preparation on a pool
  // thread and encodes the op again; a scripted failure marks the library unusable instead.
  template <class F>
  bool libraries_ready(F&& plan, std::vector<std::string>* used) {
    std::vector<plan::Dispatch> passes;
    try {
      const auto planned = plan_avoiding(unusable_, script_.tier, plan);  // the passes refer into it
      for (const plan::Dispatch& d : plan_fallback::passes_of(planned)) passes.push_back(d);
    } catch (const Error&) {
      return false;
    }
    for (const plan::Dispatch& d : passes) {
      {
        std::lock_guard<std::mutex> lock(prepared_mu_);
        if (libraries_ready_.count(d.library) > 0) continue;
      }
      throw EncodeNeedsPreparation{[this, library = d.library] {
        if (std::this_thread::get_id() == js_thread_) g_prepared_on_js_thread.fetch_add(1);
        if (script_.fail_libraries.count(library) > 0) {
          unusable_.mark(library, "compiling the Metal library shaders/" + library +
                                      ".metal failed: scripted compiler error");
          return;
        }
        std::lock_guard<std::mutex> lock(prepared_mu_);
        libraries_ready_.insert(library);
      }};
    }
    for (const plan::Dispatch& d : passes) used->push_back(d.library);
    return true;
  }

  // Counts an op encoded with a plan of these libraries (asyncTestCounters().opsByLibrary).
  static void count(const std::vector<std::string>& libraries) {
    std::lock_guard<std::mutex> lock(g_by_library_mu);
    for (const std::string& l : libraries) ++g_ops_by_library[l];
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
    // As the metal CommandStream: the op that fills the budget commits the batch (mid-turn).
    if (budget_.op_encoded()) flush();
    return true;
  }

  BackendPtr cpu_;
  AsyncTestScript script_;
  std::shared_ptr<Queue> queue_;
  std::vector<Op> batch_;                // encoded since the last flush (JS thread, or the stream
  std::vector<Op> fail_ops_of_batch_;    // under its encode lock)
  int64_t ops_ = 0, batches_ = 0;
  BatchBudget budget_;                   // the open batch against the commit rule
  const std::thread::id js_thread_;
  std::mutex prepared_mu_;
  std::set<std::string> prepared_;
  std::set<std::string> libraries_ready_;  // scripted tier: libraries "compiled"
  UnusableLibraries unusable_;
};

}  // namespace

AsyncTestCounters async_test_counters() {
  AsyncTestCounters c;
  c.ops_run = g_ops_run.load();
  c.prepared_on_js_thread = g_prepared_on_js_thread.load();
  std::lock_guard<std::mutex> lock(g_by_library_mu);
  c.ops_by_library = g_ops_by_library;
  return c;
}

BackendPtr make_async_test_backend(BackendPtr cpu, AsyncTestScript script) {
  return std::make_shared<AsyncTestBackend>(std::move(cpu), std::move(script));
}

}  // namespace mto::addon
