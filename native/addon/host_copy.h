// Copies out of tensors into JS memory (reads). A small copy runs at once on the JS thread; a
// large one runs on libuv's thread pool as a Napi::AsyncWorker, so that a 256 MiB read does not
// hold the event loop for a quarter of a second. libuv's pool is right here, unlike for ops: a
// copy is short and bounded, and Node waits for a worker's pending thread-pool work before its
// environment, and the ArrayBuffer being written, go away.
#pragma once
#include <napi.h>

#include <functional>
#include <memory>

namespace mto::addon {

// Copies below this many bytes run on the JS thread.
inline constexpr size_t kAsyncCopyBytes = size_t(1) << 20;

// Runs copy(): now when `bytes` is small (returns undefined), else on libuv's pool (returns a
// Promise resolved once it ran). `out` (the typed array written) and `keep` (the storage read)
// stay alive until then. copy() must not throw.
Napi::Value copy_to_js(Napi::Env env, Napi::Value out, size_t bytes, std::shared_ptr<const void> keep,
                       std::function<void()> copy);

}  // namespace mto::addon
