// A test-only backend that behaves, towards the device's stream, like the metal backend: ops are
// accepted on the JS thread, held in a batch until flush() (as one command buffer), and completed
// later, in submission order, from another thread (one "GPU" thread running the cpu kernels);
// as there, matmul of mixed dtypes, dequantize and cast are declined so the stream runs them on
// the cpu backend, and quantizing to mxint2 throws while encoding (an encode error: a failed Metal
// compile no longer throws, it falls back per library, modelled below). Scripted
// faults (AsyncTestScript) make chosen ops or batches fail as a GPU error would, and delay ops so
// that work stays queued. A batch is also flushed mid-turn once it holds commit_ops ops, by the
// metal backend's rule (BatchBudget), so batch numbers count those commits too. It lets Linux tests drive the stream's asynchronous path with real ops.
// Never chosen by open().
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "core/backend.h"
#include "core/commit_policy.h"

namespace mto::addon {

struct AsyncTestScript {
  std::set<int64_t> fail_ops;      // accepted ops (1-based) that complete with fail_code
  std::set<int64_t> fail_batches;  // flushed batches (1-based) whose ops all complete with it
  const char* fail_code = "E_OOM";
  int64_t delay_us = 0;            // per op, on the "GPU" thread
  // The first op of each kind asks to be prepared (EncodeNeedsPreparation) for this long, as a
  // Metal pipeline compiling; 0: nothing to prepare. compile_fail: that preparation throws (how
  // the stream fails an op whose preparation throws; the metal backend's compile failures fall
  // back instead, see `tier`).
  int64_t compile_us = 0;
  bool compile_fail = false;
  // Per-library fallback as the metal backend does it (core/library_fallback.h), when `tier` is a
  // metal tier: linear (quantized w), matmul (one dtype) and attention are planned by the real
  // dispatch plans at that tier through plan_avoiding; the first op that needs a library prepares
  // it (EncodeNeedsPreparation, on a pool thread); a library in `fail_libraries` then fails with a
  // scripted compiler message and is marked unusable, and the op is planned again, one tier lower.
  // An op whose every tier uses an unusable library is declined: the stream runs it on the cpu
  // backend. info().fallbacks lists the unusable libraries. The ops still run the cpu kernels.
  Tier tier = Tier::Cpu;
  std::set<std::string> fail_libraries;
  // The mid-turn commit rule of the metal backend (BatchBudget, core/commit_policy.h): a batch is
  // flushed once it holds this many ops (default: CommitPolicy's 40, the base and Pro chips'
  // count). Ops only: the test backend binds no buffers, so the byte budget never ends a batch.
  int commit_ops = CommitPolicy{}.max_ops;
};

BackendPtr make_async_test_backend(BackendPtr cpu, AsyncTestScript script);

// Process-wide counters of every async test backend (internal asyncTestCounters, for tests that
// must see what happened after a worker went away): ops run on the "GPU" thread, and
// preparations run on the JS thread of an environment (which must stay 0).
struct AsyncTestCounters {
  int64_t ops_run = 0;
  int64_t prepared_on_js_thread = 0;
  std::map<std::string, int64_t> ops_by_library;  // ops encoded with a plan, by each library it used
};
AsyncTestCounters async_test_counters();

}  // namespace mto::addon
