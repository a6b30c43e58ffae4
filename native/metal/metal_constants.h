// Metal enum values by their raw numbers (docs/design/METAL.md). Builds must compile with SDKs that
// predate the named constants (the macos-14 runner's Xcode 15 has no MTLGPUFamilyMetal4 or
// MTLLanguageVersion4_0; only the macOS 27 SDK has MTLLanguageVersion4_1), so, as llama.cpp (ggml-metal-device.m: MTLGPUFamilyMetal4_GGML = 5002)
// and PyTorch (GemmMetal.mm: static_cast<MTLGPUFamily>(1010)) do, we spell them as numbers.
// Raw numbers bypass -Wunguarded-availability, so every use that needs a newer macOS sits in an
// explicit @available block; an OS that does not know a family simply answers NO.
#pragma once
#import <Metal/Metal.h>

#include "core/capabilities.h"

namespace mto::metal {

// MTLGPUFamilyApple<n> = 1000 + n: Apple7 1007 (M1), Apple9 1009 (M3/M4), Apple10 1010 (M5).
inline MTLGPUFamily apple_family(int n) { return static_cast<MTLGPUFamily>(1000 + n); }
// MTLGPUFamilyMetal4 = 5002.
inline MTLGPUFamily metal4_family() { return static_cast<MTLGPUFamily>(5002); }
// MTLLanguageVersion: (major << 16) + minor; 4.0 = 0x40000, 4.1 = 0x40001.
inline MTLLanguageVersion language_version(MslVersion v) { return static_cast<MTLLanguageVersion>(v.raw()); }

}  // namespace mto::metal
