// Which macOS is running, decided from what the OS told us (native/metal/device.mm reads it),
// as pure C++ so the decision is unit-tested on every platform (test/os-detect.test.ts through
// the addon's `_internal.detectOs`).
//
// Why more than one reading: a process whose executable was linked against an SDK older than
// the running macOS may be shown a compatibility version. macOS 11 showed 10.16, macOS 26 shows
// 16.0 (dotnet/runtime issue 116503, PR 116536 maps 16 back to 26), and Node's release binaries
// are such processes. NSProcessInfo.operatingSystemVersion is one reading, the
// kern.osproductversion sysctl another (on Monterey it said 12.0 while
// kern.osproductversioncompat said 10.16: dotnet/runtime issue 58575; on Big Sur it too showed
// 10.16 to some processes: ziglang/zig issue 7569), the Darwin release (kern.osrelease, 25.x on
// macOS 26) a third that no compatibility shim rewrites but that gives only the major version.
#pragma once
#include <string>

#include "capabilities.h"

namespace mto {

// One reading of a version: `ok` false when the call failed (a missing sysctl), else its text.
struct OsReading {
  bool ok = false;
  std::string text;  // "26.2", "16.0", "25.2.0"
};

struct OsReadings {
  OsReading process_info;    // NSProcessInfo.operatingSystemVersion, formatted "major.minor.patch"
  OsReading product_version;  // sysctl kern.osproductversion
  OsReading darwin_release;   // sysctl kern.osrelease (the Darwin kernel: 25.2.0 on macOS 26.2)
};

struct OsDetection {
  OsVersion version;   // {0, 0, 0} when no reading could be parsed
  // How `version` was found, for dev.info: "kern.osproductversion", "NSProcessInfo",
  // "NSProcessInfo 16.0.0 (a compatibility version) read as 26.0", "kern.osrelease 25.2.0 (Darwin
  // 25: macOS 26, minor unknown)", or "none" when nothing could be read.
  std::string source;
  // A compatibility version was seen in some reading (the process is shown an older macOS, so
  // `@available` may answer for that older one too: native/metal/os_gate.h).
  bool compat_seen = false;
};

// The highest version among the readings, each compatibility version (10.16, 16.x) first read as
// the version it stands for (11.0, 26.x), a Darwin release D >= 25 as macOS D+1 (minor 0: the
// kernel's minor is not the product's). A compatibility or Darwin-derived value never wins over
// a direct reading of the same major version, which carries the real minor.
OsDetection detect_os_version(const OsReadings& r);

}  // namespace mto
