// How JS calls a device's methods. They are own properties of each device's JS object, functions
// whose data points at the device, instead of prototype methods (ObjectWrap's InstanceMethod),
// which find the device with napi_unwrap(this) on every call: that lookup was ~9% of the JS
// thread's cost of queueing an op (perf, 1 x 256 linear; PERFORMANCE.md, the decode step).
//
// A function may outlive its device (a JS reference to it kept after the device object was
// collected): each function holds the device's Link, and the device clears it when it goes, so
// such a call throws E_DISPOSED instead of reaching freed memory.
#include "device.h"
#include "errors.h"

namespace mto::addon {

void NativeDevice::drop_link(napi_env, void* data, void*) { delete static_cast<std::shared_ptr<Link>*>(data); }

template <Napi::Value (NativeDevice::*Method)(const Napi::CallbackInfo&)>
Napi::Value NativeDevice::call_bound(const Napi::CallbackInfo& info) {
  NativeDevice* device = static_cast<Link*>(info.Data())->device;
  if (!device) throw_error(info.Env(), code::Disposed, "the device was garbage-collected; open() a new one");
  return (device->*Method)(info);
}

void NativeDevice::bind_methods(Napi::Object self) {
  Napi::Env env = self.Env();
  link_ = std::make_shared<Link>(Link{this});
  using Method = Napi::Value (*)(const Napi::CallbackInfo&);
  const std::pair<const char*, Method> methods[] = {
      {"info", &call_bound<&NativeDevice::Info>},
      {"fallbacks", &call_bound<&NativeDevice::Fallbacks>},
      {"bufferStats", &call_bound<&NativeDevice::BufferStats>},
      {"tensor", &call_bound<&NativeDevice::Tensor>},
      {"fromQuantized", &call_bound<&NativeDevice::FromQuantized>},
      {"close", &call_bound<&NativeDevice::Close>},
      {"synchronize", &call_bound<&NativeDevice::Synchronize>},
      {"quantize", &call_bound<&NativeDevice::Quantize>},
      {"dequantize", &call_bound<&NativeDevice::Dequantize>},
      {"cast", &call_bound<&NativeDevice::Cast>},
      {"linear", &call_bound<&NativeDevice::Linear>},
      {"matmul", &call_bound<&NativeDevice::Matmul>},
      {"attention", &call_bound<&NativeDevice::Attention>},
      {"unary", &call_bound<&NativeDevice::Unary>},
      {"binary", &call_bound<&NativeDevice::Binary>},
      {"norm", &call_bound<&NativeDevice::Norm>},
      {"rope", &call_bound<&NativeDevice::Rope>},
      {"softmax", &call_bound<&NativeDevice::Softmax>},
      {"layout", &call_bound<&NativeDevice::Layout>},
      {"pick", &call_bound<&NativeDevice::Pick>},
      {"embedding", &call_bound<&NativeDevice::Embedding>},
      {"groupedLinear", &call_bound<&NativeDevice::GroupedLinear>},
      {"groupRows", &call_bound<&NativeDevice::GroupRows>},
      {"runProcess", &call_bound<&NativeDevice::RunProcess>},
      {"compileKernel", &call_bound<&NativeDevice::CompileKernel>},
      {"runKernel", &call_bound<&NativeDevice::RunKernel>},
      {"write", &call_bound<&NativeDevice::Write>},
  };
  for (const auto& [name, method] : methods) {
    Napi::Function fn = Napi::Function::New(env, method, name, link_.get());
    // The function keeps the Link alive for as long as it lives itself.
    auto* held = new std::shared_ptr<Link>(link_);
    if (napi_add_finalizer(env, fn, held, drop_link, nullptr, nullptr) != napi_ok) {
      delete held;
      throw_error(env, code::Backend, "internal: could not bind the device's methods");
    }
    self.DefineProperty(Napi::PropertyDescriptor::Value(name, fn, napi_default));
  }
}

}  // namespace mto::addon
