// DebouncedWriter (debounced_writer.h).
#include "debounced_writer.h"

#include <utility>

namespace mto {

DebouncedWriter::DebouncedWriter(std::chrono::milliseconds quiet, std::function<void()> write)
    : quiet_(quiet), write_(std::move(write)) {}

DebouncedWriter::~DebouncedWriter() {
  flush();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DebouncedWriter::changed() {
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = true;
  last_change_ = std::chrono::steady_clock::now();
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  cv_.notify_all();
}

void DebouncedWriter::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !writing_; });
  save(lock);
}

bool DebouncedWriter::save(std::unique_lock<std::mutex>& lock) {
  if (!pending_) return false;
  pending_ = false;
  writing_ = true;
  lock.unlock();
  write_();  // a change meanwhile sets pending_ again and is saved by the next round
  lock.lock();
  writing_ = false;
  cv_.notify_all();
  return true;
}

void DebouncedWriter::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait(lock, [&] { return stop_ || (pending_ && !writing_); });
    if (stop_) break;
    // Wait until `quiet` has passed since the last change; each change moves the deadline.
    const auto due = last_change_ + quiet_;
    if (std::chrono::steady_clock::now() < due) {
      cv_.wait_until(lock, due);
      continue;
    }
    save(lock);
  }
}

}  // namespace mto
