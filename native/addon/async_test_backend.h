// A test-only backend that behaves, towards the addon, like the metal backend: ops are accepted
// on the JS thread, held in a batch until flush(), and completed later from another thread (here:
// the cpu kernels run on a new thread), and, as there, matmul of mixed dtypes, dequantize and cast
// are declined so the addon runs them on the cpu backend; quantizing to mxint2 throws as a failed
// Metal compile would. It lets Linux tests drive the addon's GPU-style path (NativeDevice::launch with
// JsCompletion, flush scheduling, and the decline fallback) with real ops. Never chosen by open().
#pragma once
#include "core/backend.h"

namespace mto::addon {

BackendPtr make_async_test_backend(BackendPtr cpu);

}  // namespace mto::addon
