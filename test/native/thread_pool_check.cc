#include "thread_pool_check.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cpu/thread_pool.h"

using mto::cpu::ThreadPool;
using Clock = std::chrono::steady_clock;

namespace {

int failures = 0;

void report(bool ok, const std::string& what) {
  if (!ok) ++failures;
  std::printf("%s pool: %s\n", ok ? "ok" : "FAIL", what.c_str());
}

// A one-shot flag that a test thread waits on, with a deadline so that a broken pool fails the
// check instead of hanging it.
class Signal {
 public:
  void set() {
    std::lock_guard<std::mutex> lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool wait(std::chrono::seconds limit = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// Posted tasks run once each, and never on the posting thread.
void tasks_run_once_off_the_caller() {
  ThreadPool pool(3);
  std::mutex mu;
  std::vector<int> order;
  bool on_caller = false;
  const auto caller = std::this_thread::get_id();
  Signal done;
  const int n = 200;
  for (int i = 0; i < n; ++i) {
    pool.post([&, i] {
      std::lock_guard<std::mutex> lock(mu);
      if (std::this_thread::get_id() == caller) on_caller = true;
      order.push_back(i);
      if (int(order.size()) == n) done.set();
    });
  }
  const bool finished = done.wait();
  std::lock_guard<std::mutex> lock(mu);
  bool once = finished && int(order.size()) == n;
  std::vector<int> seen(n, 0);
  for (int i : order) ++seen[size_t(i)];
  for (int c : seen) once = once && c == 1;
  report(once && !on_caller, "200 posted tasks each ran once, none on the posting thread");
}

// Runs parallel_for(n, grain, schedule) from a task of a two-thread pool, as ops run. Chunk 0
// waits (up to 20 s) until the other thread has started a chunk, so that both really share the
// work. Returns whether they did, how often each item ran, and the chunks sorted by their start.
struct SharedRun {
  bool shared = false;
  std::vector<int> hits;
  std::vector<std::pair<int64_t, int64_t>> chunks;
};
SharedRun run_shared(int64_t n, int64_t grain, ThreadPool::Schedule schedule) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<bool> other_thread{false};
  std::atomic<bool> waited_out{false};
  std::mutex mu;
  SharedRun run;
  Signal done;
  pool.post([&] {
    const auto runner = std::this_thread::get_id();
    const auto chunk = [&](int64_t b, int64_t e) {
      if (std::this_thread::get_id() != runner) other_thread = true;
      if (b == 0) {
        const auto until = Clock::now() + std::chrono::seconds(20);
        while (!other_thread && Clock::now() < until) std::this_thread::yield();
        if (!other_thread) waited_out = true;
      }
      for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
      std::lock_guard<std::mutex> lock(mu);
      run.chunks.emplace_back(b, e);
    };
    pool.parallel_for(n, grain, chunk, schedule);
    done.set();
  });
  run.shared = done.wait() && !waited_out;
  for (auto& h : hits) run.hits.push_back(h.load());
  std::sort(run.chunks.begin(), run.chunks.end());
  return run;
}

bool each_once(const std::vector<int>& hits) {
  return std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; });
}

// parallel_for inside a task covers [0, n) exactly once and really shares chunks.
void parallel_for_in_a_task_shares_chunks() {
  const SharedRun run = run_shared(64, 1, ThreadPool::Schedule::Even);
  report(run.shared && each_once(run.hits),
         "parallel_for from a task covers every item once, on two threads");
}

// A guided parallel_for covers [0, n) exactly once, on both threads, in chunks that shrink as the
// work runs out: none above half of n, none below the grain but the remainder, never larger than
// an earlier one, the last ones of one grain (the threads end within one grain of each other).
void guided_chunks_shrink_to_the_grain() {
  const int64_t n = 1000, grain = 8;
  const SharedRun run = run_shared(n, grain, ThreadPool::Schedule::Guided);
  const auto& chunks = run.chunks;
  bool ok = run.shared && each_once(run.hits) && chunks.size() > 4;
  int64_t at = 0, prev = n;
  for (size_t c = 0; c < chunks.size(); ++c) {
    const int64_t size = chunks[c].second - chunks[c].first;
    const bool last = c + 1 == chunks.size();
    ok = ok && chunks[c].first == at && size <= n / 2 && size <= prev && (size >= grain || last);
    if (c + 3 >= chunks.size()) ok = ok && size <= grain;
    at = chunks[c].second;
    prev = size;
  }
  report(ok && at == n, "a guided parallel_for covers every item once, chunks shrinking to the grain");
}

// A chunk's exception reaches parallel_for's caller, from a task and from outside the pool.
void chunk_exceptions_reach_the_caller() {
  ThreadPool pool(2);
  auto throwing = [&] {
    try {
      pool.parallel_for(100, 1, [](int64_t b, int64_t) {
        if (b <= 50) throw std::runtime_error("chunk failed");
      });
    } catch (const std::runtime_error& e) {
      return std::string(e.what()) == "chunk failed";
    }
    return false;
  };
  std::atomic<bool> in_task{false};
  Signal done;
  pool.post([&] {
    in_task = throwing();
    done.set();
  });
  const bool task_ok = done.wait() && in_task;
  report(task_ok && throwing(), "an exception thrown by a chunk is rethrown to parallel_for's caller");
}

// Destroying the pool runs the tasks already posted first.
void destruction_drains_posted_tasks() {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(2);
    for (int i = 0; i < 40; ++i) {
      pool.post([&] {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        ran++;
      });
    }
  }
  report(ran.load() == 40, "the destructor runs the 40 tasks posted before it");
}

// A task may drop the last reference to the pool (as an op's task may drop the last reference to
// the cpu backend that owns it): the pool is destroyed on its own thread without a deadlock.
void destroyed_from_its_own_task() {
  auto pool = std::make_shared<ThreadPool>(2);
  auto destroyed = std::make_shared<Signal>();
  pool->post([keep = pool, destroyed]() mutable {
    keep.reset();  // the last reference: ~ThreadPool runs here, on one of its threads
    destroyed->set();
  });
  pool.reset();
  report(destroyed->wait(), "a task that drops the last reference destroys the pool without deadlock");
}

// Many parallel_for calls in a row, of every size and grain and both schedules, from the calling
// thread and from a task, on pools with more threads than cores: every item runs once each time.
// Helpers join and leave each call while the next is being set up (under ThreadSanitizer: the
// tsan build, test/native/thread_pool_main.cc, catches a job touched after it returned).
void many_calls_on_many_threads() {
  bool ok = true;
  for (const int threads : {3, 8}) {
    ThreadPool pool(threads);
    for (int call = 0; call < 1500 && ok; ++call) {
      const int64_t n = 1 + (call * 7919) % 257, grain = 1 + call % 5;
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      const auto schedule = call % 2 ? ThreadPool::Schedule::Guided : ThreadPool::Schedule::Even;
      const auto run = [&] {
        pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
        }, schedule);
      };
      if (call % 3 == 0) {
        Signal done;
        pool.post([&] {
          run();
          done.set();
        });
        ok = done.wait();
      } else {
        run();
      }
      for (auto& h : hits) ok = ok && h.load() == 1;
    }
  }
  report(ok, "1500 parallel_for calls on 3 and on 8 threads, from the caller and from tasks, cover every item once");
}

}  // namespace

int check_thread_pool() {
  tasks_run_once_off_the_caller();
  parallel_for_in_a_task_shares_chunks();
  guided_chunks_shrink_to_the_grain();
  chunk_exceptions_reach_the_caller();
  destruction_drains_posted_tasks();
  destroyed_from_its_own_task();
  many_calls_on_many_threads();
  return failures;
}
