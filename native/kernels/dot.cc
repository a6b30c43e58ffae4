// Picks the fused decode-and-dot kernels (dot.h) for this CPU once (NEON on every AArch64
// CPU), capped by METAL_TENSOROPS_CPU_ISA (baseline | avx2 | avx512), the switch every cpu kernel
// table obeys (avx512 here also leaves out the VBMI variant, so its plain AVX-512 FP8 path can be
// tested).
#include "dot.h"
#include "gemm_q8.h"
#include "../core/cpu_features.h"
#include "../core/portable.h"

#include "../../shaders/mx_formats.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace mto::kernels {
namespace {

const DotKernels* pick() {
  if (isa_cap() == X86Level::Baseline) return nullptr;
#if defined(__aarch64__)
  return dot_kernels_neon();  // null where not compiled in (MSVC)
#endif
#if MTO_X86_KERNELS
  const X86Level level = x86_level();
  if (level == X86Level::Avx512Vbmi) return dot_kernels_avx512_vbmi();
  if (level == X86Level::Avx512) return dot_kernels_avx512();
  if (level == X86Level::Avx2) return dot_kernels_avx2();
#endif
  return nullptr;
}

}  // namespace

const E4m3Bf16Bytes& e4m3_bf16_bytes() {
  static const E4m3Bf16Bytes t = [] {
    E4m3Bf16Bytes b{};
    for (uint32_t i = 0; i < 128; ++i) {
      const float v = mto_decode_fp8_e4m3(i);
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);  // low 16 bits are zero: exact as bfloat16
      b.hi[i] = uint8_t(bits >> 24);
      b.lo[i] = uint8_t(bits >> 16);
    }
    return b;
  }();
  return t;
}

bool dot_int8_table(const DotWeights& w, int8_t (&q)[16], float* unit) {
  if (w.kind == DotCodes::Uint4) {
    for (int i = 0; i < 16; ++i) q[i] = int8_t(i);
    *unit = 1.0f;
    return true;
  }
  float amin = 0;
  for (int i = 0; i < 16; ++i) {
    const float a = std::fabs(w.lut[i]);
    if (!(a < 1e30f)) return false;  // inf / NaN
    if (a > 0 && (amin == 0 || a < amin)) amin = a;
  }
  int e = 0;
  std::frexp(amin == 0 ? 1.0f : amin, &e);
  const float u = std::ldexp(1.0f, e - 1);  // the largest power of two <= amin
  for (int i = 0; i < 16; ++i) {
    const float v = w.lut[i] / u;
    if (v != std::nearbyint(v) || v < -128 || v > 127) return false;
    q[i] = int8_t(v);
  }
  *unit = u;
  return true;
}

bool dot_bf16_table(const DotWeights& w, uint8_t (&lo)[16], uint8_t (&hi)[16]) {
  for (int i = 0; i < 16; ++i) {
    const float v = w.kind == DotCodes::Uint4 ? float(i) : w.lut[i];
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    if ((bits & 0xFFFFu) != 0) return false;
    lo[i] = uint8_t(bits >> 16);
    hi[i] = uint8_t(bits >> 24);
  }
  return true;
}

void quantize_x_block(const float* x, int8_t* q, float* d) {
  float amax = 0;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  *d = amax / 127.0f;
  const float id = amax > 0 ? 127.0f / amax : 0.0f;
  if (std::isinf(id)) {  // max|x| below ~3.7e-37: the factor only float64 holds
    const double idd = 127.0 / double(amax);
    for (int i = 0; i < 32; ++i) q[i] = int8_t(std::clamp(std::nearbyint(double(x[i]) * idd), -127.0, 127.0));
    return;
  }
  for (int i = 0; i < 32; ++i) q[i] = int8_t(std::clamp(std::nearbyint(x[i] * id), -127.0f, 127.0f));
}

const DotKernels* dot_q8_kernels() {
  static const DotKernels* const k = [] {
    if (isa_cap() == X86Level::Baseline) return static_cast<const DotKernels*>(nullptr);
#if defined(__aarch64__)
    return dot_q8_kernels_neon();  // null where not compiled in (MSVC)
#endif
#if MTO_X86_KERNELS
    if (x86_level() >= X86Level::Avx512 && x86_has_avx512_vnni()) return dot_q8_kernels_avx512();
    if (x86_level() >= X86Level::Avx2) return dot_q8_kernels_avx2();
#endif
    return static_cast<const DotKernels*>(nullptr);
  }();
  return k;
}

const GemmQ8Kernels* gemm_q8_kernels() {
  static const GemmQ8Kernels* const k = [] {
#if MTO_X86_KERNELS
    if (x86_level() >= X86Level::Avx512 && x86_has_avx512_vnni()) return gemm_q8_kernels_avx512();
#endif
    return static_cast<const GemmQ8Kernels*>(nullptr);
  }();
  return k;
}

const DotKernels* dot_kernels() {
  static const DotKernels* const k = pick();  // thread-safe one-time init
  return k;
}

}  // namespace mto::kernels
