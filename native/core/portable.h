// The few things C++17 leaves to each compiler, wrapped once so that native/core, native/kernels
// and native/cpu build unchanged with GCC and clang (Linux, macOS, mingw-w64) and MSVC (the
// win32-x64 prebuild), with no #ifdefs at the call sites. Rules for the code that uses it:
// ../../CONTRIBUTING.md#portability.
#pragma once
#include <cstddef>
#include <new>

#if defined(_MSC_VER) && !defined(__clang__) && (defined(_M_X64) || defined(_M_ARM64))
#include <intrin.h>  // _mm_prefetch (x64), __prefetch (arm64)
#endif

// MTO_GNU_EXTENSIONS: GCC/clang vector types, __builtin_shufflevector, target attributes,
// __builtin_* and inline asm may be used (guard every use with it); clang-cl (clang with MSVC's
// ABI and headers) has them too. Defining MTO_PORTABLE_ONLY turns it off where it would be on, so
// that GCC builds exactly the paths MSVC builds: test/native/build.mjs's win64 target does, and
// runs them under wine.
#if (defined(__GNUC__) || defined(__clang__)) && !defined(MTO_PORTABLE_ONLY)
#define MTO_GNU_EXTENSIONS 1
#else
#define MTO_GNU_EXTENSIONS 0
#endif

// MTO_X86_KERNELS: x86-64 kernels compiled for AVX2 / AVX-512 with target attributes and chosen at
// run time (cpu_features.h). On with GCC and clang everywhere, clang-cl 19 and later included (the
// win32-x64 prebuild; before 19 its <immintrin.h> left out the AVX headers unless the whole file
// was compiled for AVX, llvm-project issue 53520), but not with MSVC's own compiler (no target
// attributes) nor GCC on Windows, which cannot realign the stack for spilled 32/64-byte vectors
// (GCC PR 54412).
#if defined(__x86_64__) && MTO_GNU_EXTENSIONS && !(defined(_WIN32) && !defined(__clang__)) && \
    !(defined(_MSC_VER) && defined(__clang__) && __clang_major__ < 19)
#define MTO_X86_KERNELS 1
#else
#define MTO_X86_KERNELS 0
#endif

// Inlining that the optimiser may not decline (kernels' per-vector helpers).
#if defined(__GNUC__) || defined(__clang__)
#define MTO_FORCE_INLINE inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define MTO_FORCE_INLINE __forceinline
#else
#define MTO_FORCE_INLINE inline
#endif

// A call kept out of line (a rare path whose inlining would reshape its caller's hot loops).
#if defined(__GNUC__) || defined(__clang__)
#define MTO_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define MTO_NOINLINE __declspec(noinline)
#else
#define MTO_NOINLINE
#endif

namespace mto {

// Heap memory aligned to `alignment` (a power of two), nullptr when it cannot be had; release it
// with aligned_free and the same alignment. C++17's aligned operator new rather than
// std::aligned_alloc, which MSVC's C runtime does not have (and whose memory free() releases,
// where _aligned_malloc's must go to _aligned_free).
inline void* aligned_alloc_bytes(std::size_t alignment, std::size_t bytes) {
  return ::operator new(bytes, std::align_val_t(alignment), std::nothrow);
}
inline void aligned_free(void* p, std::size_t alignment) {
  ::operator delete(p, std::align_val_t(alignment));
}

// Keeps a __builtin_prefetch that a loop holds alone: GCC 12 deletes a loop whose body is nothing
// but prefetches (a span of rows fetched ahead) as a loop without effects, at -O2 and -O3 alike.
// An empty volatile asm that takes the address gives each step an effect it must keep; it emits
// no instruction.
#if MTO_GNU_EXTENSIONS
#define MTO_KEEP_PREFETCH(p) __asm__ volatile("" : : "r"(p))
#endif

// A hint that the cache line holding p will be read soon; no effect where there is no such hint.
MTO_FORCE_INLINE void prefetch(const void* p) {
#if MTO_GNU_EXTENSIONS
  __builtin_prefetch(p);
  MTO_KEEP_PREFETCH(p);
#elif defined(_MSC_VER) && defined(_M_X64)
  _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0);
#elif defined(_MSC_VER) && defined(_M_ARM64)
  __prefetch(p);
#else
  (void)p;
#endif
}

// Tells the core that this thread is spinning on a flag (x86 PAUSE, arm64 YIELD): less power, and
// the sibling hyper-thread gets the pipeline meanwhile.
MTO_FORCE_INLINE void cpu_relax() {
#if MTO_GNU_EXTENSIONS && (defined(__x86_64__) || defined(__i386__))
  __builtin_ia32_pause();
#elif MTO_GNU_EXTENSIONS && defined(__aarch64__)
  __asm__ __volatile__("yield");
#elif defined(_MSC_VER) && defined(_M_X64)
  _mm_pause();
#elif defined(_MSC_VER) && defined(_M_ARM64)
  __yield();
#endif
}

}  // namespace mto
