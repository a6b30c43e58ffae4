// What a machine offers the metal backend, as plain data. native/metal/device.mm fills it from
// Metal on a Mac (device.mm, probe.mm); tests fill it by hand. Everything that decides from it
// (tiers.h) is backend-neutral C++ so it is compiled and unit-tested on every platform.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace mto {

// The metal tiers, fastest first as tiers.cc tries them (docs/design/ARCHITECTURE.md "Metal backend
// tiers"); Cpu means the cpu backend.
enum class Tier : uint8_t { Cpu = 0, Simdgroup = 1, TensorOps = 2, TensorOpsMx = 3 };
constexpr int kTierCount = 4;

const char* tier_name(Tier t);  // "cpu", "simdgroup", "tensorops", "tensorops-mx"
// Returns false when `name` is not a tier name.
bool parse_tier(const std::string& name, Tier* out);

struct OsVersion {
  int major = 0, minor = 0, patch = 0;
  bool at_least(int maj, int min = 0) const { return major > maj || (major == maj && minor >= min); }
};
std::string os_version_string(const OsVersion& v);  // "26.2" or "26.2.1"

// MSL version a tier's kernels and probe compile with. MTLCompileOptions.languageVersion is
// always set explicitly from this: left unset it defaults to the SDK's version and the TensorOps
// headers expand to nothing ("use of undeclared identifier 'mpp'", docs/design/METAL.md).
struct MslVersion {
  int major = 0, minor = 0;
  // MTLLanguageVersion's raw value: (major << 16) + minor, 4.0 -> 0x40000 (docs/design/METAL.md).
  uint32_t raw() const { return (uint32_t(major) << 16) + uint32_t(minor); }
};
// simdgroup 3.1 (bfloat needs 3.1; macOS 14), tensorops 4.0 (macOS 26), tensorops-mx 4.1
// (macOS 27, scale planes). Cpu -> {0, 0}.
MslVersion msl_version_for(Tier t);

// Outcome of compiling a tier's probe kernel and making its pipeline (probe.mm).
struct ProbeResult {
  enum class State : uint8_t { NotRun, Ok, Failed };
  State state = State::NotRun;
  std::string message;  // the compiler's or Metal's error text when Failed
};

struct Capabilities {
  // Why this build cannot use Metal at all ("Metal is only available on macOS ..."); "" in a
  // macOS build with the metal backend compiled in. Checked before anything else.
  std::string platform_blocker;
  bool has_device = false;        // MTLCreateSystemDefaultDevice or MTLCopyAllDevices found one
  std::string device_name;        // "Apple M4 Pro", "Apple Paravirtual device"
  std::string architecture;       // MTLDevice.architecture.name, "applegpu_g17s"; "" if unknown
  OsVersion os;                   // the running macOS (device.mm, decided by core/os_detect.h)
  std::string os_source;          // how `os` was found (OsDetection::source), for dev.info
  // What the running Metal framework answers to respondsToSelector: / NSClassFromString (device.mm),
  // whatever version it claims: the Metal 4 command path (MTLDevice newMTL4CommandQueue,
  // newCommandAllocator, newArgumentTableWithDescriptor:error:, newResidencySetWithDescriptor:error:)
  // and the scale-plane tensor (class MTLTensorAuxiliaryPlaneDescriptor, macOS 27).
  bool metal4_api = false;
  bool scale_plane_api = false;
  bool rosetta = false;           // an x86-64 process translated by Rosetta 2
  // Highest N for which supportsFamily:MTLGPUFamilyAppleN is true (7 = M1, 8 = M2, 9 = M3/M4,
  // 10 = M5/A19), 0 when none. Apple10 (raw 1010) marks the GPUs with neural accelerators.
  int apple_family = 0;
  bool metal4_family = false;     // supportsFamily:MTLGPUFamilyMetal4 (raw 5002)
  bool unified_memory = false;
  uint64_t recommended_working_set = 0;  // bytes
  // The IORegistry's `gpu-core-count` of the AGXAccelerator service as device.mm read it; absent
  // when there is no such service or property (an Intel Mac, a virtual machine). Not yet checked:
  // gpu_core_count() decides whether to believe it.
  std::optional<int64_t> ioregistry_gpu_cores;
  ProbeResult probe[kTierCount];  // indexed by Tier; probe[Cpu] is unused

  ProbeResult& probe_for(Tier t) { return probe[int(t)]; }
  const ProbeResult& probe_for(Tier t) const { return probe[int(t)]; }
};

// GPU generation as MLX parses it from the architecture name (mlx/backend/metal/device.cpp,
// Device::Device): the two digits before the last character, "applegpu_g17s" -> 17; 0 when the
// name is too short or those are not digits.
int architecture_generation(const std::string& arch);

// Whether the GPU has neural accelerators (the matrix units TensorOps lower to). Either signal
// suffices: family Apple10 (raw 1010, M5/A19; docs/design/METAL.md; PyTorch GemmMetal), or MLX's
// is_nax_available rule (device.cpp): generation >= 17, or >= 18 for a phone-class GPU (name
// ending in 'p': the A18 Pro is applegpu_g17p but family Apple9, without them).
bool gpu_has_neural_accelerators(const Capabilities& caps);

// What a dispatch plan may know of the GPU it will run on. The split decode sizes its key split by
// the core count (enough threadgroups to fill every core several times over, as MLX's
// sdpa_vector_2pass picks its block count by device class).
struct DeviceProfile {
  int gpu_cores = 8;         // the GPU's cores; 8 (a base chip, the smallest) when not known
  int attention_splits = 0;  // 0: from gpu_cores; n > 0: exactly n key splits, even more than Lk
                             // keys (the harness's edge cases: splits of one key, empty splits)
};

// Where a core count came from (dev.info.gpuCoresFrom).
enum class CoreCountSource : uint8_t { Default, DeviceClass, IORegistry };
const char* core_count_source_name(CoreCountSource s);  // "default", "device-class", "ioregistry"

struct GpuCoreCount {
  int cores = 8;
  CoreCountSource source = CoreCountSource::Default;
};

// The GPU's core count. Metal does not report it; two readings stand in:
//  - the IORegistry: the AGXAccelerator service's `gpu-core-count` property, an integer, the
//    chip's configuration (philipturner/applegpuinfo's users report 32 for an M1 Max, 38 for an
//    M2 Max: its issues #2, #10), what PyTorch reads for MPS (aten/src/ATen/mps/MPSDevice.mm,
//    MPSDevice::getCoreCount) and fastfetch for its GPU line (src/detection/gpu/gpu_apple.c);
//    device.mm reads it with IOKit. Believed when 1..kMaxPlausibleGpuCores; a reading of 0, a
//    negative one or an absurd one (a property of another meaning) falls back to the class;
//  - the device class, the architecture name's last character as MLX reads it (device.cpp):
//    'p' a phone (4 cores), 'g' a base chip (8), 's' a Pro or Max (38), 'd' an Ultra (80). A Pro
//    (14-20 cores) and a Max (24-40) share 's', so the class alone gives a Pro a Max's count,
//    about twice its own (issue #27);
//  - else 8, from "default".
constexpr int64_t kMaxPlausibleGpuCores = 256;  // an M3 Ultra has 80
GpuCoreCount gpu_core_count(std::optional<int64_t> ioregistry_cores, const std::string& architecture);

// The profile a plan gets: gpu_cores from gpu_core_count (the class alone when no IORegistry
// reading is given: tests and report-kernels).
DeviceProfile device_profile(const std::string& architecture, std::optional<int64_t> ioregistry_cores = std::nullopt);

// "apple10", "apple5"; "" when no Apple family is supported.
std::string gpu_family_name(const Capabilities& caps);

}  // namespace mto
