// CPUID / XGETBV feature detection (cpu_features.h). Bits from the Intel SDM vol. 2A, CPUID:
// leaf 1 ECX (FMA 12, OSXSAVE 27, AVX 28, F16C 29), leaf 7 subleaf 0 EBX (AVX2 5, AVX512F 16,
// AVX512BW 30, AVX512VL 31) and ECX (AVX512VBMI 1, AVX512_VNNI 11); XCR0 (XGETBV 0) bits 1-2 (SSE/AVX state)
// and 5-7 (opmask, upper ZMM halves, ZMM16-31).
#include "cpu_features.h"

#include <cstdlib>
#include <cstring>

#include "portable.h"

namespace mto {
namespace {

#if MTO_X86_KERNELS
struct Regs {
  uint32_t a, b, c, d;
};

// GNU inline asm, which GCC, clang and clang-cl all accept (MTO_X86_KERNELS implies one of them).
Regs cpuid(uint32_t leaf, uint32_t subleaf) {
  Regs r;
  __asm__ __volatile__("cpuid" : "=a"(r.a), "=b"(r.b), "=c"(r.c), "=d"(r.d) : "a"(leaf), "c"(subleaf));
  return r;
}

uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0u));
  return (uint64_t(hi) << 32) | lo;
}

bool bit(uint32_t v, int n) { return (v >> n) & 1u; }

X86Level detect() {
  const uint32_t max_leaf = cpuid(0, 0).a;
  if (max_leaf < 7) return X86Level::Baseline;
  const Regs l1 = cpuid(1, 0), l7 = cpuid(7, 0);
  if (!bit(l1.c, 27)) return X86Level::Baseline;  // no XGETBV: the OS saves no AVX state
  const uint64_t xcr0 = xgetbv0();
  const bool avx_state = (xcr0 & 0x6) == 0x6;
#if defined(__APPLE__)
  // macOS enables the AVX-512 state per thread on its first AVX-512 instruction, so XCR0 lacks
  // those bits until then (compiler-rt's __builtin_cpu_supports trusts the OS there too).
  const bool avx512_state = avx_state;
#else
  const bool avx512_state = avx_state && (xcr0 & 0xE0) == 0xE0;
#endif
  const bool avx2 = avx_state && bit(l1.c, 28) && bit(l1.c, 12) && bit(l1.c, 29) && bit(l7.b, 5);
  if (!avx2) return X86Level::Baseline;
  const bool avx512 = avx512_state && bit(l7.b, 16) && bit(l7.b, 30) && bit(l7.b, 31);
  if (!avx512) return X86Level::Avx2;
  return bit(l7.c, 1) ? X86Level::Avx512Vbmi : X86Level::Avx512;
}

bool detect_vnni() { return x86_detected_level() >= X86Level::Avx512 && bit(cpuid(7, 0).c, 11); }
#else
X86Level detect() { return X86Level::Baseline; }
bool detect_vnni() { return false; }
#endif

}  // namespace

X86Level x86_detected_level() {
  static const X86Level level = detect();  // thread-safe one-time init
  return level;
}

bool x86_has_avx512_vnni() {
  static const bool vnni = detect_vnni();
  return vnni;
}

X86Level isa_cap() {
  if (const char* env = std::getenv("METAL_TENSOROPS_CPU_ISA")) {
    if (!std::strcmp(env, "baseline")) return X86Level::Baseline;
    if (!std::strcmp(env, "avx2")) return X86Level::Avx2;
    if (!std::strcmp(env, "avx512")) return X86Level::Avx512;
  }
  return X86Level::Avx512Vbmi;
}

X86Level x86_level() {
  const X86Level found = x86_detected_level(), cap = isa_cap();
  return found < cap ? found : cap;
}

const char* x86_level_name(X86Level level) {
  switch (level) {
    case X86Level::Avx2: return "avx2";
    case X86Level::Avx512: return "avx512";
    case X86Level::Avx512Vbmi: return "avx512vbmi";
    default: return "baseline";
  }
}

}  // namespace mto
