// Which command path the metal backend encodes a tier's ops through (native/metal/batch_encoder.h),
// decided from plain data so the rule is unit-tested on every platform (test/os-detect.test.ts
// through `_internal.commandPath`); batch_encoder.mm only asks Metal and the compiler for the
// inputs.
#pragma once
#include <cstdint>

#include "capabilities.h"

namespace mto {

enum class CommandPath : uint8_t {
  Metal3,            // MTLCommandQueue and a concurrent compute encoder (macOS 14+)
  Metal4,            // MTL4CommandQueue, argument tables, a residency set (macOS 26+)
  Metal4PastCompat,  // Metal4, reached although `@available` said no (native/metal/os_gate.mm)
};
const char* command_path_name(CommandPath p);  // "metal3", "metal4", "metal4-past-compat"

// The TensorOps tiers take the Metal 4 path where this build has it (`sdk_metal4`: compiled with
// the macOS 26 SDK) and the framework answers its selectors (caps.metal4_api): directly when
// `available26` (what `@available(macOS 26.0, *)` answered), else only when the OS detection read
// macOS 26 or later (a process shown the compatibility version 16.0: core/os_detect.h). The
// simdgroup tier, and anything else, takes Metal 3.
CommandPath command_path_for(const Capabilities& caps, Tier tier, bool sdk_metal4, bool available26);

}  // namespace mto
