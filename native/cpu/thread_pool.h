// The cpu backend's threads. Ops are posted to the pool as tasks (the addon hands them over from
// the JS thread, one thread wake-up between the call and the kernel); a task's parallel_for shares
// its chunks with the pool's idle threads. parallel_for also works from any other thread (the JS
// thread running a tiny op inline, tests): that thread then works on its own chunks too.
//
// The thread that ran an op spins for a short while (300 us, yielding) before it sleeps: a model's
// decode loop issues its next op within microseconds of the last one's Promise settling, and
// waking a sleeping thread costs more than that (tens of microseconds on bare metal, ~100 us for a
// halted vCPU of a virtual machine), against ops of a few to a few hundred microseconds. Threads
// that only helped with an op's parallel_for sleep at once: a spinning thread would hold a core
// that the JS thread, woken to settle the op, needs.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace mto::cpu {

class ThreadPool {
 public:
  // `threads` threads (<= 0: one per hardware thread), or as many as the system lets the
  // process start (size() says how many); throws Error(E_BACKEND) when it cannot start one.
  explicit ThreadPool(int threads);
  // Runs the tasks already posted, then stops the threads. Safe from one of the pool's own
  // threads (a task that drops the last reference to the pool's owner): that thread is detached
  // and exits once its task returns.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }

  // Runs task() on one of the pool's threads, in posting order with other tasks. A task must not
  // throw (the pool ends the process if one does, as std::thread would).
  void post(std::function<void()> task);

  // How parallel_for cuts [0, n): Even, into about 4 equal chunks per thread (work whose parts
  // must line up, such as gemm's panels); Guided, into chunks that shrink as the work runs out,
  // from a share of n per thread down to `grain` (streams that should stay long, yet end together).
  enum class Schedule { Even, Guided };

  // Runs fn(begin, end) over [0, n) in chunks of at least `grain` items, in parallel, and returns
  // when all are done. Rethrows the first exception a chunk threw.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn,
                    Schedule schedule = Schedule::Even);

  struct Job;    // one parallel_for call
  struct State;  // shared with the threads, so that a detached thread never touches a dead pool

 private:
  int size_;
  std::shared_ptr<State> state_;
  std::vector<std::thread> threads_;
};

}  // namespace mto::cpu
