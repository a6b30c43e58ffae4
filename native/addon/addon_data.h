// Per-environment state of the addon (one per Node.js environment / worker thread).
#pragma once
#include <napi.h>

#include <memory>

#include "core/tensor.h"

namespace mto::addon {

class CompletionChannel;  // js_completion.cc

struct AddonData {
  Napi::FunctionReference tensor_ctor;
  Napi::FunctionReference qtensor_ctor;
  std::shared_ptr<CompletionChannel> completions;  // created by the first op that needs it
  // What NativeTensor::Wrap / NativeQTensor::Wrap hand to the constructor they call (cheaper than
  // an External argument: a tensor object is made for every op's output).
  TensorPtr wrapping_tensor;
  bool wrapping_view = false;
  QTensorPtr wrapping_qtensor;
};

inline AddonData& addon_data(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

}  // namespace mto::addon
