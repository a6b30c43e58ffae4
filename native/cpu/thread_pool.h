// A fixed pool of worker threads for the cpu backend. parallel_for may be called from several
// threads at once (each libuv worker running an op): every call queues its own chunks, the caller
// works on them too, and returns when all of its chunks are done.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mto::cpu {

class ThreadPool {
 public:
  // threads <= 0 means one per hardware thread. The calling thread counts as one of them.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }

  // Runs fn(begin, end) over [0, n) in chunks of at least `grain` items, in parallel.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  struct Job;
  void worker_loop();
  static void run_chunks(Job& job);

  int size_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;       // work queued
  std::condition_variable done_cv_;  // a worker left a job
  std::deque<Job*> jobs_;
  bool stop_ = false;
};

}  // namespace mto::cpu
