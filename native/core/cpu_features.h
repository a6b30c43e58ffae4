// Which x86-64 kernel level this CPU and METAL_TENSOROPS_CPU_ISA allow: the one decision every
// dispatching kernel table (kernels/dot, kernels/decode, cpu/gemm, cpu/roofline) makes from.
//
// Detected with CPUID and XGETBV rather than __builtin_cpu_supports, which clang-cl (the win32-x64
// prebuild's compiler) resolves through compiler-rt's __cpu_model, a library MSVC's linker does
// not bring in. XGETBV also says whether the OS saves the wider registers: a CPU with AVX-512 under
// an OS (or hypervisor) that does not enable it must not run AVX-512 code.
#pragma once
#include <cstdint>

namespace mto {

// Kernel levels, lowest first. Each includes the ones below it.
enum class X86Level : uint8_t {
  Baseline = 0,    // x86-64 (SSE2), and every other architecture
  Avx2 = 1,        // AVX2 + FMA + F16C (Haswell, Zen 1 and later)
  Avx512 = 2,      // + AVX-512 F, BW, VL (Skylake-SP, Zen 4 and later)
  Avx512Vbmi = 3,  // + AVX512-VBMI (Ice Lake, Zen 4 and later)
};

// The highest level this CPU (and its OS) runs; Baseline where x86 kernels are not compiled in.
X86Level x86_detected_level();

// The cap METAL_TENSOROPS_CPU_ISA sets: baseline | avx2 | avx512 (the last without VBMI); unset or
// anything else: no cap (Avx512Vbmi). `baseline` also turns the NEON kernels off on arm64, so the
// portable paths can be tested there. Read each call: callers keep their own choice.
X86Level isa_cap();

// Whether this CPU (and its OS) runs AVX512-VNNI (vpdpbusd: Ice Lake, Zen 4 and later), beside an
// AVX-512 level: the int8-activation dot kernels use it (kernels/dot.h, dot_q8_kernels).
bool x86_has_avx512_vnni();

// x86_detected_level() capped by isa_cap().
X86Level x86_level();

const char* x86_level_name(X86Level level);  // "baseline", "avx2", "avx512", "avx512vbmi"

}  // namespace mto
