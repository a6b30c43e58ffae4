// Per-library fallback: a shader library the metal backend cannot use (it failed to compile, or a
// pipeline of it could not be made) is recorded once, and every op planned afterwards is planned
// one tier lower wherever its plan would use that library (tensorops-mx -> tensorops ->
// simdgroup), and runs on the cpu backend below simdgroup. The recorded libraries are reported in
// dev.info.fallbacks. Backend-neutral, so the decisions are tested on Linux
// (test/library-fallback.test.ts: through _internal and the test-only asynchronous backend).
#pragma once
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "capabilities.h"
#include "dispatch_plan.h"
#include "error.h"

namespace mto {

// A library the device stopped using, and why (the compiler's or Metal's message).
struct LibraryFallback {
  std::string library;  // shader file stem: "attention_tensorops" for shaders/attention_tensorops.metal
  std::string reason;
};

// The libraries of one device that are not to be used. Thread-safe: marked by the pool thread
// that compiles, read by the thread that encodes and by dev.info.
class UnusableLibraries {
 public:
  // Records `library` with `reason`; a library marked already keeps its first reason.
  void mark(const std::string& library, const std::string& reason);
  bool contains(const std::string& library) const;
  // In the order they were marked.
  std::vector<LibraryFallback> list() const;

 private:
  mutable std::mutex mu_;
  std::vector<LibraryFallback> list_;
};

// The tier an op is planned at when its plan at `t` uses an unusable library:
// tensorops-mx -> tensorops -> simdgroup -> cpu.
Tier tier_below(Tier t);

namespace plan_fallback {
inline std::vector<plan::Dispatch> passes_of(const plan::Dispatch& d) { return {d}; }
inline const std::vector<plan::Dispatch>& passes_of(const std::vector<plan::Dispatch>& v) { return v; }
template <class P>
auto passes_of(const P& p) -> decltype((p.passes)) {
  return p.passes;
}
}  // namespace plan_fallback

// plan(tier), or when that plan uses an unusable library, plan(tier_below(tier)) and so on: the
// first plan whose passes all use usable libraries. What plan() throws propagates (a request no
// kernel of that tier covers). Throws Error(E_BACKEND) naming the libraries when every metal tier's
// plan uses an unusable one; the metal ops catch it, as any planning error, and decline the op,
// which then runs on the cpu backend.
template <class F>
auto plan_avoiding(const UnusableLibraries& unusable, Tier tier, F&& plan) -> decltype(plan(tier)) {
  std::string avoided;
  for (Tier t = tier; t != Tier::Cpu; t = tier_below(t)) {
    auto p = plan(t);
    std::string bad;
    for (const plan::Dispatch& d : plan_fallback::passes_of(p)) {
      if (unusable.contains(d.library)) {
        bad = d.library;
        break;
      }
    }
    if (bad.empty()) return p;
    avoided += (avoided.empty() ? "" : ", ") + bad + " (" + tier_name(t) + ")";
  }
  throw Error(code::Backend, "every Metal library that could run this op is unusable on this device: " + avoided);
}

}  // namespace mto
