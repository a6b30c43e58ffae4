// open() off the JS thread (device_open.cc): binding.openDevice(threads, backend, tier) chooses and
// makes the backend on a pool thread and resolves with a handle; `new NativeDevice(handle)` then
// takes the backends over on the JS thread.
#pragma once
#include <napi.h>

#include "core/backend.h"

namespace mto::addon {

// What an open made: the cpu backend (for ops the chosen backend has no kernel for) and the
// chosen backend with the reason a faster one was not used. Emptied when a device takes it over.
struct OpenedDevice {
  BackendPtr cpu;
  OpenedBackend opened;
};

Napi::Value OpenDevice(const Napi::CallbackInfo& info);

// The OpenedDevice behind a handle OpenDevice resolved with, or null for any other value.
OpenedDevice* opened_device_of(Napi::Value v);

}  // namespace mto::addon
