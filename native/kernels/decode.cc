// decode.h's choice among the vector kernels (x86/decode_avx.cc, arm/decode_neon.cc), once per
// process, capped by METAL_TENSOROPS_CPU_ISA.
#include "decode.h"

#include "../core/cpu_features.h"

namespace mto::kernels {
namespace {

constexpr CoreKernels kBaseline{"baseline", nullptr, nullptr, nullptr, nullptr};

const CoreKernels* pick_kernels() {
  if (isa_cap() == X86Level::Baseline) return &kBaseline;
  const CoreKernels* k = nullptr;
  switch (x86_level()) {
    case X86Level::Avx512Vbmi: k = core_kernels_avx512_vbmi(); break;
    case X86Level::Avx512: k = core_kernels_avx512(); break;
    case X86Level::Avx2: k = core_kernels_avx2(); break;
    default: k = core_kernels_neon(); break;  // null but on aarch64
  }
  return k ? k : &kBaseline;
}

}  // namespace

const CoreKernels& core_kernels() {
  static const CoreKernels* const k = pick_kernels();  // thread-safe one-time init
  return *k;
}

}  // namespace mto::kernels
