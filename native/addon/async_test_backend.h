// A test-only backend that behaves, towards the device's stream, like the metal backend: ops are
// accepted on the JS thread, held in a batch until flush() (as one command buffer), and completed
// later, in submission order, from another thread (one "GPU" thread running the cpu kernels);
// as there, matmul of mixed dtypes, dequantize and cast are declined so the stream runs them on
// the cpu backend, and quantizing to mxint2 throws as a failed Metal compile would. Scripted
// faults (AsyncTestScript) make chosen ops or batches fail as a GPU error would, and delay ops so
// that work stays queued. It lets Linux tests drive the stream's asynchronous path with real ops.
// Never chosen by open().
#pragma once
#include <cstdint>
#include <set>

#include "core/backend.h"

namespace mto::addon {

struct AsyncTestScript {
  std::set<int64_t> fail_ops;      // accepted ops (1-based) that complete with fail_code
  std::set<int64_t> fail_batches;  // flushed batches (1-based) whose ops all complete with it
  const char* fail_code = "E_OOM";
  int64_t delay_us = 0;            // per op, on the "GPU" thread
  // The first op of each kind asks to be prepared (EncodeNeedsPreparation) for this long, as a
  // Metal pipeline compiling; 0: nothing to prepare. compile_fail: that preparation fails.
  int64_t compile_us = 0;
  bool compile_fail = false;
};

BackendPtr make_async_test_backend(BackendPtr cpu, AsyncTestScript script);

// Process-wide counters of every async test backend (internal asyncTestCounters, for tests that
// must see what happened after a worker went away): ops run on the "GPU" thread, and
// preparations run on the JS thread of an environment (which must stay 0).
struct AsyncTestCounters {
  int64_t ops_run = 0;
  int64_t prepared_on_js_thread = 0;
};
AsyncTestCounters async_test_counters();

}  // namespace mto::addon
