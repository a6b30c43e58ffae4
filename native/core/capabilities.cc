#include "capabilities.h"

namespace mto {

const char* tier_name(Tier t) {
  switch (t) {
    case Tier::Cpu: return "cpu";
    case Tier::Simdgroup: return "simdgroup";
    case Tier::TensorOps: return "tensorops";
    case Tier::TensorOpsMx: return "tensorops-mx";
  }
  return "cpu";
}

bool parse_tier(const std::string& name, Tier* out) {
  for (int i = 0; i < kTierCount; ++i) {
    if (name == tier_name(Tier(i))) {
      *out = Tier(i);
      return true;
    }
  }
  return false;
}

std::string os_version_string(const OsVersion& v) {
  std::string s = std::to_string(v.major) + "." + std::to_string(v.minor);
  if (v.patch != 0) s += "." + std::to_string(v.patch);
  return s;
}

MslVersion msl_version_for(Tier t) {
  switch (t) {
    case Tier::Cpu: return {0, 0};
    case Tier::Simdgroup: return {3, 1};
    case Tier::TensorOps: return {4, 0};
    case Tier::TensorOpsMx: return {4, 1};
  }
  return {0, 0};
}

int architecture_generation(const std::string& arch) {
  // Same positions as MLX (size-3 and size-2); a non-digit there counts as 0, as in MLX.
  if (arch.size() < 3) return 0;
  const auto digit = [](char c) { return c >= '0' && c <= '9' ? c - '0' : 0; };
  return digit(arch[arch.size() - 3]) * 10 + digit(arch[arch.size() - 2]);
}

bool gpu_has_neural_accelerators(const Capabilities& caps) {
  if (!caps.has_device) return false;
  if (caps.apple_family >= 10) return true;
  if (caps.architecture.empty()) return false;
  const bool phone = caps.architecture.back() == 'p';
  return architecture_generation(caps.architecture) >= (phone ? 18 : 17);
}

const char* core_count_source_name(CoreCountSource s) {
  switch (s) {
    case CoreCountSource::Default: return "default";
    case CoreCountSource::DeviceClass: return "device-class";
    case CoreCountSource::IORegistry: return "ioregistry";
  }
  return "default";
}

GpuCoreCount gpu_core_count(std::optional<int64_t> ioregistry_cores, const std::string& architecture) {
  if (ioregistry_cores && *ioregistry_cores > 0 && *ioregistry_cores <= kMaxPlausibleGpuCores) {
    return {int(*ioregistry_cores), CoreCountSource::IORegistry};
  }
  switch (architecture.empty() ? '\0' : architecture.back()) {
    case 'p': return {4, CoreCountSource::DeviceClass};
    case 'g': return {8, CoreCountSource::DeviceClass};
    case 's': return {38, CoreCountSource::DeviceClass};
    case 'd': return {80, CoreCountSource::DeviceClass};
    default: return {8, CoreCountSource::Default};
  }
}

DeviceProfile device_profile(const std::string& architecture, std::optional<int64_t> ioregistry_cores) {
  DeviceProfile d;
  d.gpu_cores = gpu_core_count(ioregistry_cores, architecture).cores;
  return d;
}

std::string gpu_family_name(const Capabilities& caps) {
  if (caps.apple_family <= 0) return "";
  return "apple" + std::to_string(caps.apple_family);
}

}  // namespace mto
