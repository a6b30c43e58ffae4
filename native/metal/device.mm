// The GPU and its capabilities (device.h). Mirrors llama.cpp's ggml-metal-device.m split:
// device and capability code here, op encoding elsewhere.
#include "device.h"

#import <Foundation/Foundation.h>

#include <CoreFoundation/CoreFoundation.h>
#include <IOKit/IOKitLib.h>
#include <sys/sysctl.h>

#include <string>

#include "metal4_path.h"
#include "metal_constants.h"
#include "objc_strings.h"

namespace mto::metal {
namespace {

// A sysctl's string value; not ok when the call fails (ENOENT: an OS without that name).
OsReading sysctl_text(const char* name) {
  OsReading r;
  char text[64] = {0};
  size_t size = sizeof text - 1;
  r.ok = sysctlbyname(name, text, &size, nullptr, 0) == 0;
  if (r.ok) r.text = text;
  return r;
}

}  // namespace

std::optional<int64_t> ioregistry_gpu_cores() {
  // The GPU's AGXAccelerator service (one on Apple silicon; none on an Intel Mac or in a virtual
  // machine) and its gpu-core-count, a CFNumber, as PyTorch's MPSDevice::getCoreCount
  // (aten/src/ATen/mps/MPSDevice.mm) and fastfetch (src/detection/gpu/gpu_apple.c) read it.
  // IOServiceGetMatchingService consumes the matching dictionary; the service and the property
  // are ours to release. kIOMainPortDefault is macOS 12 (kIOMasterPortDefault before).
  std::optional<int64_t> cores;
  const io_service_t service = IOServiceGetMatchingService(kIOMainPortDefault, IOServiceMatching("AGXAccelerator"));
  if (service == IO_OBJECT_NULL) return cores;
  const CFTypeRef value = IORegistryEntryCreateCFProperty(service, CFSTR("gpu-core-count"), kCFAllocatorDefault, 0);
  if (value != nullptr) {
    int64_t n = 0;
    if (CFGetTypeID(value) == CFNumberGetTypeID() &&
        CFNumberGetValue(static_cast<CFNumberRef>(value), kCFNumberSInt64Type, &n)) {
      cores = n;
    }
    CFRelease(value);
  }
  IOObjectRelease(service);
  return cores;
}

id<MTLDevice> pick_device() {
  id<MTLDevice> device = MTLCreateSystemDefaultDevice();
  if (device) return device;
  NSArray<id<MTLDevice>>* all = MTLCopyAllDevices();
  return all.count > 0 ? all[0] : nil;
}

OsDetection running_os_version() {
  OsReadings r;
  const NSOperatingSystemVersion ns = NSProcessInfo.processInfo.operatingSystemVersion;
  r.process_info.ok = true;
  r.process_info.text = std::to_string(ns.majorVersion) + "." + std::to_string(ns.minorVersion) + "." +
                        std::to_string(ns.patchVersion);
  r.product_version = sysctl_text("kern.osproductversion");
  r.darwin_release = sysctl_text("kern.osrelease");
  return detect_os_version(r);
}

bool running_under_rosetta() {
  // 1 translated, 0 native; fails with ENOENT on Intel Macs, which have no Rosetta.
  int translated = 0;
  size_t size = sizeof translated;
  return sysctlbyname("sysctl.proc_translated", &translated, &size, nullptr, 0) == 0 && translated == 1;
}

Capabilities query_capabilities(id<MTLDevice> device) {
  Capabilities caps;
  const OsDetection os = running_os_version();
  caps.os = os.version;
  caps.os_source = os.source;
  caps.rosetta = running_under_rosetta();
  if (!device) return caps;
  // What the framework answers, whatever version it claims (core/tiers.cc gates on both). A
  // selector is asked for, not sent, so no availability applies here.
  // A build whose SDK predates Metal 4 has no Metal 4 path to use (metal4_path.h).
  caps.metal4_api = MTO_HAVE_METAL4 && [device respondsToSelector:@selector(newMTL4CommandQueue)] &&
                    [device respondsToSelector:@selector(newCommandAllocator)] &&
                    [device respondsToSelector:@selector(newArgumentTableWithDescriptor:error:)] &&
                    [device respondsToSelector:@selector(newResidencySetWithDescriptor:error:)];
  caps.scale_plane_api = NSClassFromString(@"MTLTensorAuxiliaryPlaneDescriptor") != nil &&
                         [device respondsToSelector:@selector(newTensorWithDescriptor:attachments:error:)];
  caps.has_device = true;
  caps.device_name = to_std(device.name);
  if (@available(macOS 14.0, *)) {  // MTLArchitecture: macOS 14 (our deployment target)
    caps.architecture = to_std(device.architecture.name);
  }
  // Highest Apple family, asked by raw value (metal_constants.h): an OS that predates a family
  // answers NO, as llama.cpp's loop over MTLGPUFamilyApple1 + 20 relies on.
  for (int n = 12; n >= 1; --n) {
    if ([device supportsFamily:apple_family(n)]) {
      caps.apple_family = n;
      break;
    }
  }
  caps.metal4_family = [device supportsFamily:metal4_family()];
  caps.ioregistry_gpu_cores = ioregistry_gpu_cores();  // checked by core's gpu_core_count
  caps.unified_memory = device.hasUnifiedMemory;
  caps.recommended_working_set = device.recommendedMaxWorkingSetSize;
  return caps;
}

}  // namespace mto::metal
