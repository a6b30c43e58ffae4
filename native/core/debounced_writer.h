// Runs a save once changes stop coming: the first process to use many kernels compiles dozens of
// pipelines in a burst, and writing the whole pipeline archive after each one (what we did) wrote
// it dozens of times. `changed()` asks for a save; `write` runs on the writer's own thread once no
// change came for `quiet`, and `flush()` runs a pending save at once. Portable C++ (the metal
// backend's pipeline archive uses it; test/debounced-writer.test.ts drives it through _internal).
#pragma once
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace mto {

class DebouncedWriter {
 public:
  DebouncedWriter(std::chrono::milliseconds quiet, std::function<void()> write);
  // Runs a pending save, then stops the thread.
  ~DebouncedWriter();
  DebouncedWriter(const DebouncedWriter&) = delete;
  DebouncedWriter& operator=(const DebouncedWriter&) = delete;

  // Something changed: save `quiet` after the last change (the thread starts on first use).
  void changed();
  // Saves now if anything is pending, on the calling thread; returns once it is written.
  void flush();

 private:
  void run();
  // Runs write_ with the lock released; true if a save was pending.
  bool save(std::unique_lock<std::mutex>& lock);

  const std::chrono::milliseconds quiet_;
  const std::function<void()> write_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool pending_ = false;
  bool writing_ = false;  // one save at a time: flush() waits for the thread's
  bool stop_ = false;
  std::chrono::steady_clock::time_point last_change_;
  std::thread thread_;
};

}  // namespace mto
