// Picking the GPU and describing it as a Capabilities record (core/capabilities.h). Everything
// decided from that record lives in backend-neutral C++ (core/tiers.h); this file only asks Metal
// and the OS. Objective-C++ only: include from native/metal/*.mm.
#pragma once
#import <Metal/Metal.h>

#include "core/capabilities.h"
#include "core/os_detect.h"

namespace mto::metal {

// MTLCreateSystemDefaultDevice, else the first of MTLCopyAllDevices (the default device may be
// nil in headless contexts, docs/design/METAL.md); nil when the machine has no Metal device.
id<MTLDevice> pick_device();

// Everything but the probes (probe.mm fills those). `device` may be nil: then has_device is
// false and only the OS fields are set.
Capabilities query_capabilities(id<MTLDevice> device);

// The running macOS, as the tiers are gated on it (core/tiers.h) and MSL versions are asked for
// (library.mm): the readings (NSProcessInfo.operatingSystemVersion, sysctl kern.osproductversion
// and kern.osrelease) handed to core/os_detect.h, which sees through the compatibility version
// (macOS 26 shown as 16.0) a process linked against an older SDK is given. Never `@available`
// alone: it may answer for the version the process is shown.
OsDetection running_os_version();

// True in an x86-64 process translated by Rosetta 2 (sysctl.proc_translated == 1).
bool running_under_rosetta();

// The IORegistry's gpu-core-count of the AGXAccelerator service, as read (IOKit); absent when the
// service or the property is missing or not a number. core/capabilities.h gpu_core_count decides
// whether to believe it.
std::optional<int64_t> ioregistry_gpu_cores();

}  // namespace mto::metal
