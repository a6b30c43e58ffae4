// One in-order stream of ops per device (docs/design/STREAM.md): an op validates and allocates its
// outputs on the JS thread, is queued here and returns at once; ops run in call order, and only
// reads wait. Backend-neutral: the cpu backend's kernels run back to back on one of its pool
// threads (the next op starts the moment the previous one ended, no trip to JS); an asynchronous
// backend (metal) encodes ops into its command queue as they are called, and the ops it declines
// run on the cpu backend once their inputs are ready, with the ops queued after them waiting in
// turn. An op whose kernel must first be compiled waits in the queue too, and the compiler runs
// on a pool thread (EncodeNeedsPreparation). Plain C++ (no Node-API).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <vector>

#include "backend.h"

namespace mto {

// How an op failed, shared by every tensor it wrote and by everything computed from them: a
// read of any of them rejects with this code and message.
using FailurePtr = std::shared_ptr<const OpStatus>;

class Stream;

// The completion of one queued op. Its outputs carry it (Tensor::event) until they are read;
// inputs' events are what a later op waits for. Completed once, from any thread.
class OpEvent {
 public:
  bool done() const { return done_.load(std::memory_order_acquire); }
  // The op's failure, or that of an input it was computed from; null when it succeeded. Valid
  // once done().
  const FailurePtr& failure() const { return failure_; }
  // Blocks the calling thread until done (backend threads only, never the JS thread).
  void wait();
  // Calls fn once done: at once on this thread when already done, else on the completing thread.
  // fn must not throw.
  void then(std::function<void()> fn);
  // The stream that runs the op (null once it is gone): a read flushes it, so that an op held in
  // an open batch starts.
  std::shared_ptr<Stream> stream() const { return stream_.lock(); }

 private:
  friend class Stream;
  void complete(FailurePtr failure);

  std::atomic<bool> done_{false};
  FailurePtr failure_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::function<void()>> then_;
  std::weak_ptr<Stream> stream_;
  const Stream* owner_ = nullptr;  // stream_'s target, compared without locking the weak_ptr
  bool on_queue_ = false;          // encoded on the asynchronous backend's (ordered) queue
};
using EventPtr = std::shared_ptr<OpEvent>;

// start(backend, done) starts an op on `backend` (core/backend.h's op methods); false when that
// backend has no kernel for it.
using OpStart = std::function<bool(Backend& backend, Completion done)>;

// The events an op waits for. Up to kInline are held in place (every op but a long concat), so
// queueing an op allocates nothing for them: each allocation costs the JS thread ~0.1 us there,
// since the op record is freed on a pool thread (PERFORMANCE.md, the decode step).
class EventList {
 public:
  static constexpr size_t kInline = 4;
  EventList() = default;
  EventList(std::initializer_list<EventPtr> events) {
    for (const EventPtr& e : events) push_back(e);
  }
  void push_back(EventPtr e) {
    if (size_ < kInline && heap_.empty()) {
      inline_[size_++] = std::move(e);
      return;
    }
    if (heap_.empty()) {
      for (EventPtr& in : inline_) heap_.push_back(std::move(in));
    }
    heap_.push_back(std::move(e));
    ++size_;
  }
  size_t size() const { return size_; }
  const EventPtr* begin() const { return heap_.empty() ? inline_ : heap_.data(); }
  const EventPtr* end() const { return begin() + size_; }

 private:
  EventPtr inline_[kInline];
  std::vector<EventPtr> heap_;  // all of them, once there are more than kInline
  size_t size_ = 0;
};

struct StreamOp {
  OpStart start;
  // The events of the ops that wrote the inputs (null entries: ready from the start).
  EventList inputs;
  // Multiply-adds (or elements) of the op: a tiny op on an idle stream runs inline.
  double work = 0;
  // An in-place write (dev.write): the reads of its destination that JS started before it. It
  // runs once their copies are done (on a stream thread: they may need the JS thread to finish).
  std::vector<std::shared_ptr<ReadToken>> reads;
};

class Stream : public std::enable_shared_from_this<Stream> {
 public:
  // `backend` runs the ops; `cpu` runs what it declines and lends its pool to the stream.
  static std::shared_ptr<Stream> make(BackendPtr backend, BackendPtr cpu);

  // JS thread. Queues `op` after every op queued before and completes `event` when it ran (or
  // failed: its own failure, its first failed input's, or an asynchronous backend's failure to
  // encode it, such as a pipeline that cannot be made). Returns having run it when it is tiny
  // and the stream idle.
  void submit(StreamOp op, const EventPtr& event);

  // The event of the last op queued (null: none yet): once it is done, everything before it is.
  EventPtr tail() const;

  // Submits what an asynchronous backend holds in its open batch (JS turn end, a read, close).
  void flush();

  // Ops estimated below this run inline on the JS thread when the stream is idle and their
  // inputs are ready (a 1x32x32 linear takes far less than a trip through the pool).
  static constexpr double kInlineWork = 32768;
  // Past this many queued ops the JS thread waits until half of them ran (MLX caps its queue
  // too): a loop that never awaits must not queue unbounded work and memory.
  static constexpr size_t kMaxQueued = 1024;

  Stream(BackendPtr backend, BackendPtr cpu);  // use make()

 private:
  struct Entry {
    StreamOp op;
    EventPtr event;
  };
  void drain();
  // Runs op on the cpu backend on this thread (its inputs done): its failure, or its first
  // failed input's (then it does not run), or null.
  FailurePtr run_on_cpu(StreamOp& op, bool timed);
  // Encodes op into the asynchronous backend: Declined when it has no kernel for it, NeedsPreparation
  // (with *prepare set) when it must first compile something (EncodeNeedsPreparation).
  enum class Encode { Encoded, Declined, NeedsPreparation };
  Encode try_encode(StreamOp& op, const EventPtr& event, std::function<void()>* prepare);
  // Drain thread: encodes op, running what it needs prepared first (outside the encode lock);
  // what that throws, or encoding does, comes back as the op's failure.
  Encode encode_prepared(StreamOp& op, const EventPtr& event, bool* unflushed, FailurePtr* failure);

  BackendPtr backend_, cpu_;
  const bool async_;
  mutable std::mutex mu_;
  std::condition_variable space_cv_;  // the queue fell below kMaxQueued / 2
  std::deque<Entry> queue_;
  bool draining_ = false;  // a drain task owns the queue's front
  bool waiting_reads_ = false;  // the drain waits for reads JS must finish: no backpressure then
  EventPtr tail_;
  std::mutex encode_mu_;   // one thread encodes into (or flushes) the asynchronous backend
};
using StreamPtr = std::shared_ptr<Stream>;

// Kernel times of the ops run on the cpu backend's pool (internal hostOpTimes, for the bench):
// from the pool thread starting an op to its completion, in microseconds, without the trips
// between the JS thread and the pool. Recorded process-wide, only between a start and the take
// that ends it.
void start_op_times();
std::vector<double> take_op_times();

}  // namespace mto
