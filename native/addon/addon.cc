// Module entry: registers the class and functions lib/native.ts loads.
#include <napi.h>

#include "addon_data.h"
#include "codecs.h"
#include "device.h"
#include "device_open.h"
#include "internal.h"
#include "roofline.h"
#include "tensors.h"

namespace mto::addon {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData();
  env.SetInstanceData(data);  // freed by Node when the environment shuts down
  exports.Set("tensors", InitTensors(env));  // functions over tensor ids (tensors.h)
  exports.Set("NativeDevice", NativeDevice::Init(env));
  exports.Set("openDevice", Napi::Function::New(env, OpenDevice, "openDevice"));  // device_open.h
  InitCodecs(env, exports);
  InitRoofline(env, exports);  // internal: bench/ only
  exports.Set("_internal", InitInternal(env));  // tests only: native/core metal host logic
  exports.Set("napiVersion", Napi::Number::New(env, NAPI_VERSION));
  return exports;
}

}  // namespace mto::addon

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
  return mto::addon::Init(env, exports);
}

NODE_API_MODULE(metal_tensorops, InitModule)
