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
};

BackendPtr make_async_test_backend(BackendPtr cpu, AsyncTestScript script);

}  // namespace mto::addon
