// The macOS version decision (os_detect.h).
#include "os_detect.h"

#include <vector>

namespace mto {
namespace {

// "26.2" or "26.2.1" (two or three dot-separated numbers, nothing else) -> version; false for
// anything else. By hand rather than sscanf, which also takes signs, spaces and overflow.
bool parse(const OsReading& r, OsVersion* out) {
  if (!r.ok) return false;
  int parts[3] = {0, 0, 0};
  int count = 0, digits = 0;
  for (const char c : r.text) {
    if (c >= '0' && c <= '9') {
      if (++digits > 6) return false;
      parts[count] = parts[count] * 10 + (c - '0');
    } else if (c == '.' && digits > 0 && count < 2) {
      ++count;
      digits = 0;
    } else {
      return false;
    }
  }
  if (digits == 0 || count < 1 || parts[0] == 0) return false;
  *out = OsVersion{parts[0], parts[1], parts[2]};
  return true;
}

bool newer(const OsVersion& a, const OsVersion& b) {
  if (a.major != b.major) return a.major > b.major;
  if (a.minor != b.minor) return a.minor > b.minor;
  return a.patch > b.patch;
}

// The version a compatibility version stands for; false when `v` is not one. No macOS 10.16 or
// 16 was ever released: those numbers only ever mean 11 and 26 shown to an older binary.
bool from_compat(const OsVersion& v, OsVersion* real) {
  if (v.major == 16) {
    *real = v;
    real->major = 26;
    return true;
  }
  if (v.major == 10 && v.minor == 16) {
    *real = OsVersion{11, 0, 0};
    return true;
  }
  return false;
}

struct Candidate {
  OsVersion version;
  std::string source;
};

}  // namespace

OsDetection detect_os_version(const OsReadings& r) {
  // In order of trust: a tie goes to the earlier one (a direct reading carries the real minor).
  std::vector<Candidate> candidates;
  OsDetection d;
  const auto direct = [&](const OsReading& reading, const char* name) {
    OsVersion v;
    if (!parse(reading, &v)) return;
    OsVersion real;
    if (from_compat(v, &real)) {
      d.compat_seen = true;
      candidates.push_back({real, std::string(name) + " " + reading.text + " (a compatibility version) read as " +
                                      os_version_string(real)});
    } else {
      candidates.push_back({v, name});
    }
  };
  direct(r.product_version, "kern.osproductversion");
  direct(r.process_info, "NSProcessInfo");
  // Darwin 20-24 are macOS 11-15; from Darwin 25 (macOS 26) the product number is the kernel's
  // plus one. Only the major version: the kernel's minor does not follow the product's.
  OsVersion k;
  if (parse(r.darwin_release, &k) && k.major >= 20) {
    const OsVersion v{k.major >= 25 ? k.major + 1 : k.major - 9, 0, 0};
    candidates.push_back({v, "kern.osrelease " + r.darwin_release.text + " (Darwin " + std::to_string(k.major) +
                                 ": macOS " + std::to_string(v.major) + ", minor unknown)"});
  }
  if (candidates.empty()) {
    d.source = "none";
    return d;
  }
  const Candidate* best = &candidates[0];
  for (const Candidate& c : candidates) {
    if (newer(c.version, best->version)) best = &c;
  }
  d.version = best->version;
  d.source = best->source;
  return d;
}

}  // namespace mto
