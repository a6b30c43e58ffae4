// The GPU and its capabilities (device.h). Mirrors llama.cpp's ggml-metal-device.m split:
// device and capability code here, op encoding elsewhere.
#include "device.h"

#import <Foundation/Foundation.h>

#include <sys/sysctl.h>

#include <cstdio>

#include "metal_constants.h"
#include "objc_strings.h"

namespace mto::metal {
namespace {

bool newer(const OsVersion& a, const OsVersion& b) {
  if (a.major != b.major) return a.major > b.major;
  if (a.minor != b.minor) return a.minor > b.minor;
  return a.patch > b.patch;
}

}  // namespace

id<MTLDevice> pick_device() {
  id<MTLDevice> device = MTLCreateSystemDefaultDevice();
  if (device) return device;
  NSArray<id<MTLDevice>>* all = MTLCopyAllDevices();
  return all.count > 0 ? all[0] : nil;
}

OsVersion running_os_version() {
  // Two readings, the higher wins: a compatibility version is always below the real one (macOS
  // 11 showed 10.16 and macOS 26 showed 16.0 to processes built with an older SDK). Reported:
  // kern.osproductversion showed 10.16 on Big Sur too (ziglang/zig#7569), and NSProcessInfo
  // answers 26 to such processes from macOS 26 beta 4 on (Apple developer forums, thread 788667).
  NSOperatingSystemVersion ns = NSProcessInfo.processInfo.operatingSystemVersion;
  OsVersion best;
  best.major = int(ns.majorVersion);
  best.minor = int(ns.minorVersion);
  best.patch = int(ns.patchVersion);
  OsVersion v;
  char text[64] = {0};
  size_t size = sizeof text - 1;
  if (sysctlbyname("kern.osproductversion", text, &size, nullptr, 0) == 0 &&
      std::sscanf(text, "%d.%d.%d", &v.major, &v.minor, &v.patch) >= 2 && newer(v, best)) {
    best = v;
  }
  return best;
}

bool running_under_rosetta() {
  // 1 translated, 0 native; fails with ENOENT on Intel Macs, which have no Rosetta.
  int translated = 0;
  size_t size = sizeof translated;
  return sysctlbyname("sysctl.proc_translated", &translated, &size, nullptr, 0) == 0 && translated == 1;
}

Capabilities query_capabilities(id<MTLDevice> device) {
  Capabilities caps;
  caps.os = running_os_version();
  caps.rosetta = running_under_rosetta();
  if (!device) return caps;
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
  caps.unified_memory = device.hasUnifiedMemory;
  caps.recommended_working_set = device.recommendedMaxWorkingSetSize;
  return caps;
}

}  // namespace mto::metal
