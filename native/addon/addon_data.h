// Per-environment state of the addon (one per Node.js environment / worker thread).
#pragma once
#include <napi.h>

#include <memory>

namespace mto::addon {

class CompletionChannel;  // js_completion.cc

struct AddonData {
  Napi::FunctionReference tensor_ctor;
  Napi::FunctionReference qtensor_ctor;
  std::shared_ptr<CompletionChannel> completions;  // created by the first op that needs it
};

inline AddonData& addon_data(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

}  // namespace mto::addon
