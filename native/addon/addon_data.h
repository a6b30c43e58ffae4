// Per-environment state of the addon (one per Node.js environment / worker thread).
#pragma once
#include <napi.h>

namespace mto::addon {

struct AddonData {
  Napi::FunctionReference tensor_ctor;
  Napi::FunctionReference qtensor_ctor;
};

inline AddonData& addon_data(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

}  // namespace mto::addon
