// binding._internal.debouncedWrites (tests only: test/debounced-writer.test.ts): drives a
// core/debounced_writer.h DebouncedWriter through a script of changes and returns when each save
// ran. Blocks the calling thread for the script's length (a few hundred ms).
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "core/debounced_writer.h"
#include "internal.h"

namespace mto::addon {

// (quietMs, changesAtMs[], flushAtMs (-1: none), endAtMs, destroyAtEnd) -> { writes: ms[], atEnd }
// Changes are made at the given times from the start; at endAtMs the writer is destroyed when
// destroyAtEnd (its destructor saves what is pending), and `atEnd` is the number of saves before.
Napi::Value DebouncedWrites(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  using clock = std::chrono::steady_clock;
  const auto quiet = std::chrono::milliseconds(info[0].As<Napi::Number>().Int64Value());
  std::vector<double> changes;
  Napi::Array a = info[1].As<Napi::Array>();
  for (uint32_t i = 0; i < a.Length(); ++i) changes.push_back(a.Get(i).As<Napi::Number>().DoubleValue());
  const double flush_at = info[2].As<Napi::Number>().DoubleValue();
  const double end_at = info[3].As<Napi::Number>().DoubleValue();
  const bool destroy = info[4].ToBoolean().Value();

  const clock::time_point t0 = clock::now();
  auto since = [&] { return std::chrono::duration<double, std::milli>(clock::now() - t0).count(); };
  auto sleep_until_ms = [&](double ms) {
    std::this_thread::sleep_until(t0 + std::chrono::microseconds(int64_t(ms * 1000)));
  };
  std::mutex mu;
  std::vector<double> writes;
  auto writer = std::make_unique<DebouncedWriter>(quiet, [&] {
    std::lock_guard<std::mutex> lock(mu);
    writes.push_back(since());
  });
  size_t next = 0;
  bool flushed = flush_at < 0;
  while (next < changes.size() || !flushed) {
    const double t_change = next < changes.size() ? changes[next] : 1e300;
    const double t_flush = flushed ? 1e300 : flush_at;
    if (t_change <= t_flush) {
      sleep_until_ms(t_change);
      writer->changed();
      ++next;
    } else {
      sleep_until_ms(t_flush);
      writer->flush();
      flushed = true;
    }
  }
  sleep_until_ms(end_at);
  size_t at_end;
  {
    std::lock_guard<std::mutex> lock(mu);
    at_end = writes.size();
  }
  if (destroy) writer.reset();
  Napi::Object out = Napi::Object::New(env);
  Napi::Array w = Napi::Array::New(env);
  {
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < writes.size(); ++i) w.Set(uint32_t(i), writes[i]);
  }
  out.Set("writes", w);
  out.Set("atEnd", double(at_end));
  if (!destroy) writer.reset();  // still joined before the captured state goes away
  return out;
}

}  // namespace mto::addon
