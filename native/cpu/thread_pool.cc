#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <string>

#include "../core/error.h"
#include "../core/portable.h"

namespace mto::cpu {
namespace {

// How long an idle thread looks for new work before it sleeps. Long enough to cover a decode
// loop's turnaround on the JS thread (settle the Promise, start the next op), short enough that
// an idle process stops using the cores at once.
constexpr auto kSpin = std::chrono::microseconds(300);

// Waits up to kSpin for ready() to hold, yielding the core to any other runnable thread (the JS
// thread first of all) between looks. Returns ready().
template <class Ready>
bool spin_until(Ready&& ready) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  do {
    for (int i = 0; i < 32; ++i) {
      if (ready()) return true;
      cpu_relax();
    }
    std::this_thread::yield();
  } while (std::chrono::steady_clock::now() < until);
  return ready();
}

}  // namespace

// One parallel_for call, on its caller's stack. Items are claimed with atomics, so the caller and
// any helping threads share them without further locking.
struct ThreadPool::Job {
  const std::function<void(int64_t, int64_t)>* fn;
  int64_t n, chunk;
  int threads;
  Schedule schedule;
  std::atomic<int64_t> next{0};  // first item not yet claimed
  std::atomic<int64_t> pending;  // items not yet finished
  std::atomic<int> helpers{0};   // threads inside run_chunks besides the caller (joined under mu)
  std::mutex error_mu;
  std::exception_ptr error;      // first exception thrown by a chunk, rethrown to the caller

  bool has_chunks() const { return next.load(std::memory_order_relaxed) < n; }
  bool finished() const {
    return pending.load(std::memory_order_acquire) == 0 && helpers.load(std::memory_order_acquire) == 0;
  }

  // Claims the next chunk; false when none is left.
  bool claim(int64_t& begin, int64_t& end) {
    if (schedule == Schedule::Even) {
      begin = next.fetch_add(chunk, std::memory_order_relaxed);
      if (begin >= n) return false;
      end = std::min(n, begin + chunk);
      return true;
    }
    // Guided: half an equal share of what is left (at least `chunk`), so that the chunks shrink
    // towards the end and the threads finish within one small chunk of each other.
    begin = next.load(std::memory_order_relaxed);
    for (;;) {
      if (begin >= n) return false;
      const int64_t left = n - begin;
      const int64_t take = std::min(left, std::max(chunk, left / (int64_t(threads) * 2)));
      if (next.compare_exchange_weak(begin, begin + take, std::memory_order_relaxed)) {
        end = begin + take;
        return true;
      }
    }
  }

  void run_chunks() {
    int64_t begin, end;
    while (claim(begin, end)) {
      try {
        (*fn)(begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
      }
      pending.fetch_sub(end - begin, std::memory_order_acq_rel);
    }
  }
};

struct ThreadPool::State {
  std::mutex mu;
  std::condition_variable work_cv;  // a task or job was queued, or stop
  std::condition_variable done_cv;  // a helper left a job
  std::deque<std::function<void()>> tasks;
  std::deque<Job*> jobs;            // parallel_for calls with chunks left to claim
  bool stop = false;
  int sleeping = 0;                 // threads waiting on work_cv
  std::atomic<uint64_t> queued{0};  // bumped on every push: what spinning threads watch

  // Under mu: drops jobs whose chunks are all claimed; true when there is something to do.
  bool has_work() {
    while (!jobs.empty() && !jobs.front()->has_chunks()) jobs.pop_front();
    return !jobs.empty() || !tasks.empty();
  }
  // Called under mu after queuing: wakes sleepers only (spinning threads see `queued`).
  void announce(std::unique_lock<std::mutex>& lock, bool everyone) {
    queued.fetch_add(1, std::memory_order_release);
    const bool wake = sleeping > 0;
    lock.unlock();
    if (!wake) return;
    if (everyone) work_cv.notify_all();
    else work_cv.notify_one();
  }
  void run();
};

void ThreadPool::State::run() {
  std::unique_lock<std::mutex> lock(mu);
  // Spin before sleeping after running a task: the next op of a model's loop comes soon, and this
  // thread takes it at once instead of waiting to be woken (the pool's round trip for a small op
  // fell from ~36 to ~16 us on this VM). Only that thread spins: a helper that joined a
  // parallel_for sleeps at once, so that a core stays free for the JS thread, woken to settle the
  // op (on this VM, waking it onto a core where a thread spins took ~70 us instead of ~17); it is
  // woken when the next op shares its work, while the spinning thread has already started it.
  bool spin = false;
  for (;;) {
    while (!has_work()) {
      if (stop) return;
      const uint64_t seen = queued.load(std::memory_order_acquire);
      lock.unlock();
      const bool arrived =
          spin && spin_until([&] { return queued.load(std::memory_order_acquire) != seen; });
      spin = false;
      lock.lock();
      if (arrived || has_work() || stop) continue;
      ++sleeping;
      work_cv.wait(lock, [&] { return stop || has_work(); });
      --sleeping;
    }
    // Help an op in flight before starting a new one: it finishes sooner, and its caller waits.
    if (!jobs.empty()) {
      Job* job = jobs.front();
      job->helpers.fetch_add(1, std::memory_order_relaxed);  // the caller waits for it to drop
      lock.unlock();
      job->run_chunks();
      // Leaving takes no lock (with 16 threads, taking mu here one after another kept the caller
      // waiting ~8 us longer for the last of them). The job may be gone once `helpers` drops:
      // nothing of it is touched after. The last helper out wakes a caller asleep on done_cv;
      // taking mu first means that caller either sees helpers == 0 or is already waiting.
      if (job->helpers.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        { std::lock_guard<std::mutex> sync(mu); }
        done_cv.notify_all();
      }
      lock.lock();
      continue;
    }
    std::function<void()> task = std::move(tasks.front());
    tasks.pop_front();
    lock.unlock();
    task();
    spin = true;
    // Its captures may hold the last reference to the pool's owner: release them here, where
    // this thread touches nothing but the shared state afterwards.
    task = nullptr;
    lock.lock();
  }
}

ThreadPool::ThreadPool(int threads) : state_(std::make_shared<State>()) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  // A process may not be allowed as many threads as asked for (a pids cgroup limit in a
  // container, RLIMIT_NPROC): run with the threads it got. An exception escaping here with
  // threads already started would end the process (std::thread's destructor on a joinable
  // thread calls std::terminate), so none does.
  std::string failure;
  for (int i = 0; i < threads; ++i) {
    try {
      threads_.emplace_back([s = state_] { s->run(); });
    } catch (const std::exception& e) {
      failure = e.what();
      break;
    }
  }
  size_ = int(threads_.size());
  if (size_ == 0) {
    throw Error(code::Backend, "the cpu backend could not start a thread (" + failure +
                                   "); the process may be at its thread or memory limit");
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
  }
  state_->work_cv.notify_all();
  for (auto& t : threads_) {
    if (t.get_id() == std::this_thread::get_id()) t.detach();
    else t.join();
  }
}

void ThreadPool::post(std::function<void()> task) {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->tasks.push_back(std::move(task));
  state_->announce(lock, false);
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn, Schedule schedule) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  // Even: about 4 chunks per thread balances uneven work without much scheduling overhead.
  // Guided: chunks of at least `grain`, shrinking towards the end (Job::claim).
  const int64_t chunk = schedule == Schedule::Guided
                            ? grain
                            : std::max(grain, (n + int64_t(size_) * 4 - 1) / (int64_t(size_) * 4));
  if (size_ == 1 || n <= chunk) {
    fn(0, n);
    return;
  }
  Job job;
  job.fn = &fn;
  job.n = n;
  job.chunk = chunk;
  job.threads = size_;
  job.schedule = schedule;
  job.pending.store(n);
  State& s = *state_;
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.jobs.push_back(&job);
    s.announce(lock, true);
  }
  job.run_chunks();
  // The job lives on this stack frame: wait until every chunk is done and no helper holds it,
  // and make sure no thread can still find it in the queue. Helpers join a job only under mu,
  // so the check under mu is the one that counts; the spin before it avoids sleeping for the
  // last few microseconds of a helper's chunk.
  spin_until([&] { return job.finished(); });
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.done_cv.wait(lock, [&] { return job.finished(); });
    auto it = std::find(s.jobs.begin(), s.jobs.end(), &job);
    if (it != s.jobs.end()) s.jobs.erase(it);
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace mto::cpu
