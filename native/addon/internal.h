// `binding._internal`: the backend-neutral metal host logic (tier selection, buffer pool size
// classes and reuse, pipeline cache keys) exposed for unit tests only. Not part of the public
// API; lib/ never calls it.
#pragma once
#include <napi.h>

namespace mto::addon {
Napi::Object InitInternal(Napi::Env env);
// internal_plans.cc: planLibraries() -> [{ op, tier, library, kernel }].
Napi::Value PlanLibraries(const Napi::CallbackInfo& info);
// internal_scale_plane.cc: scalePlaneLayout(format, block, shape, tier), quantizedView(q).
Napi::Value ScalePlaneLayoutOf(const Napi::CallbackInfo& info);
Napi::Value QuantizedView(const Napi::CallbackInfo& info);
}
