// Per-environment state of the addon (one per Node.js environment / worker thread).
#pragma once
#include <napi.h>

#include <memory>

#include "tensor_table.h"

namespace mto::addon {

class CompletionChannel;  // js_completion.cc

struct AddonData {
  std::shared_ptr<CompletionChannel> completions;  // created by the first op that needs it
  TensorTable tensors;  // every tensor JS holds, by id (tensor_table.h)
};

inline AddonData& addon_data(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

}  // namespace mto::addon
