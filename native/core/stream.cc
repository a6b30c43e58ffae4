#include "stream.h"

#include <chrono>
#include <utility>

#include "error.h"

namespace mto {
namespace {

FailurePtr first_failure(const EventList& inputs) {
  for (const EventPtr& e : inputs) {
    if (e && e->failure()) return e->failure();
  }
  return nullptr;
}

bool all_done(const EventList& inputs) {
  for (const EventPtr& e : inputs) {
    if (e && !e->done()) return false;
  }
  return true;
}

bool reads_done(const std::vector<std::shared_ptr<ReadToken>>& reads) {
  for (const auto& r : reads) {
    if (!r->done()) return false;
  }
  return true;
}

// The recorded kernel times. Never destroyed: a pool thread may finish an op while the process
// exits.
struct OpTimes {
  static constexpr size_t kMax = size_t(1) << 20;  // bounds the memory of a forgotten start
  std::atomic<bool> on{false};
  std::mutex mu;
  std::vector<double> us;
};
OpTimes& op_times() {
  static OpTimes* times = new OpTimes;
  return *times;
}

}  // namespace

// ---- OpEvent ----

void OpEvent::complete(FailurePtr failure) {
  std::vector<std::function<void()>> then;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = std::move(failure);
    done_.store(true, std::memory_order_release);
    then.swap(then_);
  }
  cv_.notify_all();
  for (auto& fn : then) fn();
}

void OpEvent::wait() {
  if (done()) return;
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done(); });
}

void OpEvent::then(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done()) {
      then_.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

// ---- Stream ----

Stream::Stream(BackendPtr backend, BackendPtr cpu)
    : backend_(std::move(backend)), cpu_(std::move(cpu)), async_(!backend_->runs_on_caller()) {}

std::shared_ptr<Stream> Stream::make(BackendPtr backend, BackendPtr cpu) {
  return std::make_shared<Stream>(std::move(backend), std::move(cpu));
}

EventPtr Stream::tail() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tail_;
}

void Stream::flush() {
  if (!async_) return;
  std::lock_guard<std::mutex> lock(encode_mu_);
  backend_->flush();
}

void Stream::submit(StreamOp op, const EventPtr& event) {
  event->stream_ = weak_from_this();
  event->owner_ = this;
  std::unique_lock<std::mutex> lock(mu_);
  // Only this (the JS) thread starts a drain, so an idle stream stays idle while it looks.
  if (queue_.empty() && !draining_ && reads_done(op.reads)) {
    if (async_) {
      // Encoded at once when every input is ready or comes from an op ahead of it on the same
      // (ordered) queue; else, or when the backend declines it, it waits in the queue below.
      bool encodable = true;
      for (const EventPtr& in : op.inputs) {
        if (in && !in->done() && !(in->owner_ == this && in->on_queue_)) encodable = false;
      }
      if (encodable) {
        lock.unlock();
        Encode r = Encode::Declined;
        std::function<void()> prepare;  // compiled by the drain below, off this thread
        // An op that cannot be encoded (a plan that does not fit its pipeline) fails like one that
        // fails on the GPU: its outputs carry the error to their reads.
        OpStatus thrown = capture_status([&] { r = try_encode(op, event, &prepare); });
        const bool encoded = r == Encode::Encoded;
        lock.lock();
        if (!thrown.ok() || encoded) {
          tail_ = event;
          lock.unlock();
          if (!thrown.ok()) event->complete(std::make_shared<const OpStatus>(std::move(thrown)));
          return;
        }
      }
    } else if (op.work < kInlineWork && all_done(op.inputs)) {
      tail_ = event;
      lock.unlock();
      FailurePtr failure = run_on_cpu(op, false);
      op.start = nullptr;
      event->complete(std::move(failure));
      return;
    }
  }
  if (queue_.size() >= kMaxQueued) {
    // Not while the drain waits for a read: finishing it may need this thread.
    space_cv_.wait(lock, [&] { return queue_.size() <= kMaxQueued / 2 || waiting_reads_; });
  }
  queue_.push_back(Entry{std::move(op), event});
  tail_ = event;
  if (draining_) return;
  draining_ = true;
  lock.unlock();
  cpu_->post([self = shared_from_this()] { self->drain(); });
}

Stream::Encode Stream::try_encode(StreamOp& op, const EventPtr& event, std::function<void()>* prepare) {
  // The completion holds the op (and through it its operands) until the backend is done with
  // them; then it completes the event with the op's failure or its first failed input's.
  auto held = std::make_shared<OpStart>(op.start);
  EventList inputs = op.inputs;
  Completion done = [held, inputs, event](OpStatus status) mutable {
    FailurePtr failure;
    if (!status.ok()) {
      failure = std::make_shared<const OpStatus>(std::move(status));
    } else {
      // Inputs from the same queue ran before this op; their completions may still be on their
      // way on another thread.
      for (const EventPtr& in : inputs) {
        if (!in) continue;
        in->wait();
        if (in->failure()) {
          failure = in->failure();
          break;
        }
      }
    }
    event->complete(std::move(failure));
  };
  std::lock_guard<std::mutex> lock(encode_mu_);
  event->on_queue_ = true;
  try {
    if ((*held)(*backend_, std::move(done))) return Encode::Encoded;
  } catch (EncodeNeedsPreparation& needs) {
    event->on_queue_ = false;
    *prepare = std::move(needs.prepare);
    return Encode::NeedsPreparation;
  } catch (...) {
    event->on_queue_ = false;
    throw;
  }
  event->on_queue_ = false;
  return Encode::Declined;
}

Stream::Encode Stream::encode_prepared(StreamOp& op, const EventPtr& event, bool* unflushed,
                                       FailurePtr* failure) {
  // Each round prepares one missing piece: a pipeline (an attention plan has up to two), or a
  // library that fails and makes the op plan again one tier lower (core/library_fallback.h; three
  // metal tiers). A backend that keeps asking is a bug, reported on the op rather than spinning.
  constexpr int kRounds = 16;
  for (int round = 0; round < kRounds; ++round) {
    Encode r = Encode::Declined;
    std::function<void()> prepare;
    OpStatus thrown = capture_status([&] { r = try_encode(op, event, &prepare); });
    if (!thrown.ok()) {
      *failure = std::make_shared<const OpStatus>(std::move(thrown));
      return Encode::Declined;
    }
    if (r != Encode::NeedsPreparation) return r;
    // The GPU works through what is encoded while this thread compiles.
    if (*unflushed) {
      flush();
      *unflushed = false;
    }
    OpStatus prepared = capture_status(prepare);
    if (!prepared.ok()) {
      *failure = std::make_shared<const OpStatus>(std::move(prepared));
      return Encode::Declined;
    }
  }
  *failure = std::make_shared<const OpStatus>(
      OpStatus{code::Backend, "internal: the backend still asks to prepare the op after " + std::to_string(kRounds) +
                                  " rounds"});
  return Encode::Declined;
}

void Stream::drain() {
  bool unflushed = false;  // ops encoded here since the last flush
  for (;;) {
    Entry e;
    {
      std::lock_guard<std::mutex> lock(mu_);
      e = std::move(queue_.front());
      queue_.pop_front();
      if (queue_.size() <= kMaxQueued / 2) space_cv_.notify_all();
    }
    if (unflushed && !all_done(e.op.inputs)) {  // an input may wait in the batch encoded here
      flush();
      unflushed = false;
    }
    for (const EventPtr& in : e.op.inputs) {
      if (in) in->wait();
    }
    if (!reads_done(e.op.reads)) {
      if (unflushed) {  // a read may wait for an op in the batch encoded here
        flush();
        unflushed = false;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        waiting_reads_ = true;
      }
      space_cv_.notify_all();
      for (const auto& r : e.op.reads) r->wait();
      std::lock_guard<std::mutex> lock(mu_);
      waiting_reads_ = false;
    }
    bool encoded = false;
    FailurePtr failure;
    if (async_ && !first_failure(e.op.inputs)) {
      encoded = encode_prepared(e.op, e.event, &unflushed, &failure) == Encode::Encoded;
    }
    if (encoded) {
      unflushed = true;
    } else if (!failure) {
      failure = run_on_cpu(e.op, true);
    }
    e.op.start = nullptr;  // the operands go before the op is seen done
    // The stream is idle again before the last op is seen done, so that the JS thread, resumed
    // by that op's read, finds it idle (a tiny op then runs inline at once).
    bool last;
    {
      std::lock_guard<std::mutex> lock(mu_);
      last = queue_.empty();
      if (last) draining_ = false;
    }
    if (!encoded) e.event->complete(std::move(failure));
    if (last) break;
  }
  // No JS turn end commits what the drain encoded: commit it now.
  if (unflushed) flush();
}

FailurePtr Stream::run_on_cpu(StreamOp& op, bool timed) {
  FailurePtr failure = first_failure(op.inputs);
  if (failure) return failure;
  OpStatus status{code::Backend, "the cpu backend has no kernel for this op"};
  OpTimes& times = op_times();
  const bool record = timed && times.on.load(std::memory_order_relaxed);
  const auto t0 = record ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  OpStatus thrown = capture_status([&] {
    op.start(*cpu_, [&status](OpStatus s) { status = std::move(s); });
  });
  if (record) {
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard<std::mutex> lock(times.mu);
    if (times.on.load(std::memory_order_relaxed) && times.us.size() < OpTimes::kMax) {
      times.us.push_back(us);
    }
  }
  if (!thrown.ok()) status = std::move(thrown);
  return status.ok() ? nullptr : std::make_shared<const OpStatus>(std::move(status));
}

void start_op_times() {
  OpTimes& t = op_times();
  std::lock_guard<std::mutex> lock(t.mu);
  t.us.clear();
  t.on.store(true, std::memory_order_relaxed);
}

std::vector<double> take_op_times() {
  OpTimes& t = op_times();
  std::lock_guard<std::mutex> lock(t.mu);
  t.on.store(false, std::memory_order_relaxed);
  return std::move(t.us);
}

}  // namespace mto
