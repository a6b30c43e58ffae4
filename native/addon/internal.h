// `binding._internal`: the backend-neutral metal host logic (tier selection, buffer pool size
// classes and reuse, pipeline cache keys) exposed for unit tests only. Not part of the public
// API; lib/ never calls it.
#pragma once
#include <napi.h>

#include "core/buffer_pool.h"

namespace mto::addon {
Napi::Object InitInternal(Napi::Env env);
// A buffer pool's counters as { liveBytes, cachedBytes, cachedBlocks, allocations, reuses, frees }
// (poolRun here; the native device's bufferStats()).
Napi::Object pool_stats_to_js(Napi::Env env, const SizeClassPool::Stats& s);
// internal_plans.cc: planLibraries() -> [{ op, tier, library, kernel }].
Napi::Value PlanLibraries(const Napi::CallbackInfo& info);
// internal_plans.cc: planAvoiding(op, tier, unusable) -> { tier, libraries } (core/library_fallback.h).
Napi::Value PlanAvoiding(const Napi::CallbackInfo& info);
// internal_scale_plane.cc: scalePlaneLayout(format, block, shape, tier), quantizedView(q).
Napi::Value ScalePlaneLayoutOf(const Napi::CallbackInfo& info);
Napi::Value QuantizedView(const Napi::CallbackInfo& info);
// internal_writer.cc: debouncedWrites(quietMs, changesAtMs, flushAtMs, endAtMs, destroyAtEnd).
Napi::Value DebouncedWrites(const Napi::CallbackInfo& info);
// internal_hazards.cc: hazards(dispatches), argAccess(), encoderOrder(env), stridedRange(...) (core/hazards.h).
Napi::Value Hazards(const Napi::CallbackInfo& info);
Napi::Value ArgAccess(const Napi::CallbackInfo& info);
Napi::Value EncoderOrderOf(const Napi::CallbackInfo& info);
Napi::Value StridedRange(const Napi::CallbackInfo& info);
}
