#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>

namespace mto::cpu {

// One parallel_for call. Chunks are claimed with an atomic counter, so the caller and any idle
// workers share them without further locking; `pending` counts chunks not yet finished.
struct ThreadPool::Job {
  const std::function<void(int64_t, int64_t)>* fn;
  int64_t n, chunk, nchunks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> pending;
  int active = 0;            // workers inside run_chunks (guarded by the pool's mutex)
  std::mutex error_mu;
  std::exception_ptr error;  // first exception thrown by a chunk, rethrown to the caller
};

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  size_ = threads;
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks(Job& job) {
  for (;;) {
    int64_t c = job.next.fetch_add(1, std::memory_order_relaxed);
    if (c >= job.nchunks) return;
    int64_t begin = c * job.chunk, end = std::min(job.n, begin + job.chunk);
    try {
      (*job.fn)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(job.error_mu);
      if (!job.error) job.error = std::current_exception();
    }
    job.pending.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::worker_loop() {
  for (;;) {
    Job* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = jobs_.front();
      // Leave the job queued while chunks remain so other workers can join it.
      if (job->next.load(std::memory_order_relaxed) >= job->nchunks) {
        jobs_.pop_front();
        continue;
      }
      ++job->active;  // the caller's frame owns the job: it waits until active drops to 0
    }
    run_chunks(*job);
    std::lock_guard<std::mutex> lock(mu_);
    --job->active;
    if (!jobs_.empty() && jobs_.front() == job) jobs_.pop_front();
    done_cv_.notify_all();
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  // About 4 chunks per thread balances uneven work without much scheduling overhead.
  int64_t chunk = std::max(grain, (n + int64_t(size_) * 4 - 1) / (int64_t(size_) * 4));
  int64_t nchunks = (n + chunk - 1) / chunk;
  if (size_ == 1 || nchunks == 1) {
    fn(0, n);
    return;
  }
  Job job;
  job.fn = &fn;
  job.n = n;
  job.chunk = chunk;
  job.nchunks = nchunks;
  job.pending.store(nchunks);
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(&job);
  }
  cv_.notify_all();
  run_chunks(job);
  {
    // The job lives on this stack frame: wait until every chunk is done and no worker holds it,
    // and make sure no worker can still find it in the queue.
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] {
      return job.active == 0 && job.pending.load(std::memory_order_acquire) == 0;
    });
    auto it = std::find(jobs_.begin(), jobs_.end(), &job);
    if (it != jobs_.end()) jobs_.erase(it);
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace mto::cpu
