// The machine's limits for the benchmark: FMA throughput and streaming read bandwidth.
//
// FMA peak: a loop of independent fused multiply-adds on as many accumulators as it takes to hide
// the instruction's latency (a = a * m + c, which stays at a fixed point: no overflow, no
// denormals), once per instruction set the CPU runs: AVX-512 and AVX2+FMA on x86-64 (compiled
// with target attributes and chosen by core/cpu_features.h, where simd.h enables x86 dispatch), NEON on arm64, and a baseline loop everywhere (SSE2 multiply + add on x86-64).
// Read bandwidth: every thread sums 64-bit words of its share of a buffer far larger than the
// caches. Both use every thread of the pool and report the best of several trials (the peak
// is what the machine reaches while nothing else runs on it).
#include "roofline.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>

#include "../core/cpu_features.h"
#include "simd.h"

#if defined(__x86_64__) || defined(_M_X64)
#define MTO_ROOF_X86 1
#include <immintrin.h>
#else
#define MTO_ROOF_X86 0
#endif
#if defined(__aarch64__) || defined(_M_ARM64)
#define MTO_ROOF_NEON 1
#include <arm_neon.h>
#else
#define MTO_ROOF_NEON 0
#endif

namespace mto::cpu {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Results are folded in here so that no loop can be optimised away.
std::atomic<uint64_t> g_sink{0};

void sink(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  g_sink.fetch_add(bits, std::memory_order_relaxed);
}

// ---- FMA loops: each returns a value depending on every accumulator -------------------------

constexpr float kMul = 0.999999f;

#if MTO_X86_DISPATCH
// 12 accumulators cover latency 4 x 2 pipes (and latency 6 x 2 with room to spare) while leaving
// registers free for the two constants.
MTO_TARGET_AVX512 float fma_avx512(int64_t iters, float seed) {
  const __m512 m = _mm512_set1_ps(kMul), c = _mm512_set1_ps(seed * (1.f - kMul));
  __m512 a[12];
  for (int j = 0; j < 12; ++j) a[j] = _mm512_set1_ps(seed + float(j));
  for (int64_t i = 0; i < iters; ++i) {
    for (int j = 0; j < 12; ++j) a[j] = _mm512_fmadd_ps(a[j], m, c);
  }
  __m512 s = a[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, a[j]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  return lanes[0] + lanes[15];
}

MTO_TARGET_AVX2 float fma_avx2(int64_t iters, float seed) {
  const __m256 m = _mm256_set1_ps(kMul), c = _mm256_set1_ps(seed * (1.f - kMul));
  __m256 a[12];
  for (int j = 0; j < 12; ++j) a[j] = _mm256_set1_ps(seed + float(j));
  for (int64_t i = 0; i < iters; ++i) {
    for (int j = 0; j < 12; ++j) a[j] = _mm256_fmadd_ps(a[j], m, c);
  }
  __m256 s = a[0];
  for (int j = 1; j < 12; ++j) s = _mm256_add_ps(s, a[j]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  return lanes[0] + lanes[7];
}
#endif

#if MTO_ROOF_NEON
// Apple and Neoverse cores have up to 4 FMA pipes of latency 3-4: 16 accumulators.
float fma_neon(int64_t iters, float seed) {
  const float32x4_t m = vdupq_n_f32(kMul), c = vdupq_n_f32(seed * (1.f - kMul));
  float32x4_t a[16];
  for (int j = 0; j < 16; ++j) a[j] = vdupq_n_f32(seed + float(j));
  for (int64_t i = 0; i < iters; ++i) {
    for (int j = 0; j < 16; ++j) a[j] = vfmaq_f32(c, a[j], m);  // c + a * m
  }
  float32x4_t s = a[0];
  for (int j = 1; j < 16; ++j) s = vaddq_f32(s, a[j]);
  return vgetq_lane_f32(s, 0) + vgetq_lane_f32(s, 3);
}
#endif

// Baseline: multiply then add (2 flops per lane per step, like one FMA).
#if MTO_ROOF_X86
constexpr int kBaseLanes = 4;
float fma_baseline(int64_t iters, float seed) {
  const __m128 m = _mm_set1_ps(kMul), c = _mm_set1_ps(seed * (1.f - kMul));
  __m128 a[12];
  for (int j = 0; j < 12; ++j) a[j] = _mm_set1_ps(seed + float(j));
  for (int64_t i = 0; i < iters; ++i) {
    for (int j = 0; j < 12; ++j) a[j] = _mm_add_ps(_mm_mul_ps(a[j], m), c);
  }
  __m128 s = a[0];
  for (int j = 1; j < 12; ++j) s = _mm_add_ps(s, a[j]);
  float lanes[4];
  _mm_storeu_ps(lanes, s);
  return lanes[0] + lanes[3];
}
constexpr int kBaseAcc = 12;
#else
constexpr int kBaseLanes = 1;
constexpr int kBaseAcc = 16;
float fma_baseline(int64_t iters, float seed) {
  float a[kBaseAcc];
  const float c = seed * (1.f - kMul);
  for (int j = 0; j < kBaseAcc; ++j) a[j] = seed + float(j);
  for (int64_t i = 0; i < iters; ++i) {
    for (int j = 0; j < kBaseAcc; ++j) a[j] = a[j] * kMul + c;
  }
  float s = 0.f;
  for (int j = 0; j < kBaseAcc; ++j) s += a[j];
  return s;
}
#endif

struct FmaLoop {
  const char* isa;
  int lanes;
  int accumulators;
  float (*fn)(int64_t, float);
};

std::vector<FmaLoop> fma_loops() {
  std::vector<FmaLoop> loops;
#if MTO_X86_DISPATCH
  // Every level the CPU has (not capped: the peak is the machine's, whatever the kernels use).
  const X86Level level = x86_detected_level();
  if (level >= X86Level::Avx512) loops.push_back({"avx512", 16, 12, fma_avx512});
  if (level >= X86Level::Avx2) loops.push_back({"avx2", 8, 12, fma_avx2});
#endif
#if MTO_ROOF_NEON
  loops.push_back({"neon", 4, 16, fma_neon});
#endif
  loops.push_back({"baseline", kBaseLanes, kBaseAcc, fma_baseline});
  return loops;
}

double measure_fma(ThreadPool& pool, const FmaLoop& loop, double seconds) {
  // Calibrate on one thread: iterations for a task of about 5 ms.
  int64_t iters = 1024;
  double t = 0;
  for (;;) {
    auto t0 = Clock::now();
    sink(loop.fn(iters, 1.f));
    t = seconds_since(t0);
    if (t >= 2e-3 || iters > (int64_t(1) << 40)) break;
    iters *= 4;
  }
  const int64_t task_iters = std::max<int64_t>(1, int64_t(double(iters) * 5e-3 / std::max(t, 1e-9)));
  const double flops_per_task = double(task_iters) * loop.accumulators * loop.lanes * 2.0;
  // Many short trials, best taken: a peak is what the machine reaches when nothing else runs.
  const int trials = 8;
  const int64_t tasks =
      int64_t(pool.size()) * std::max<int64_t>(2, int64_t(seconds / trials / 5e-3));
  double best = 0;
  for (int trial = 0; trial < trials; ++trial) {
    auto t0 = Clock::now();
    pool.parallel_for(tasks, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sink(loop.fn(task_iters, 1.f + float(i & 7)));
    });
    best = std::max(best, double(tasks) * flops_per_task / seconds_since(t0) / 1e9);
  }
  return best;
}

// ---- read bandwidth -------------------------------------------------------------------------

constexpr int64_t kReadBlock = 1 << 20;  // bytes per work item (a multiple of 256)

#if MTO_X86_DISPATCH
MTO_TARGET_AVX512 uint64_t read_avx512(const uint8_t* p, int64_t bytes) {
  __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t i = 0; i < bytes; i += 256) {
    s0 = _mm512_add_epi64(s0, _mm512_load_si512(p + i));
    s1 = _mm512_add_epi64(s1, _mm512_load_si512(p + i + 64));
    s2 = _mm512_add_epi64(s2, _mm512_load_si512(p + i + 128));
    s3 = _mm512_add_epi64(s3, _mm512_load_si512(p + i + 192));
  }
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(s0, s1), _mm512_add_epi64(s2, s3)));
  return lanes[0] ^ lanes[7];
}

MTO_TARGET_AVX2 uint64_t read_avx2(const uint8_t* p, int64_t bytes) {
  __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t i = 0; i < bytes; i += 128) {
    s0 = _mm256_add_epi64(s0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    s1 = _mm256_add_epi64(s1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    s2 = _mm256_add_epi64(s2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    s3 = _mm256_add_epi64(s3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3)));
  return lanes[0] ^ lanes[3];
}
#endif

// Portable: compilers vectorise an integer sum (integer addition is associative).
uint64_t read_baseline(const uint8_t* p, int64_t bytes) {
  const uint64_t* w = reinterpret_cast<const uint64_t*>(p);
  uint64_t s = 0;
  for (int64_t i = 0; i < bytes / 8; ++i) s += w[i];
  return s;
}

using ReadFn = uint64_t (*)(const uint8_t*, int64_t);

ReadFn read_loop() {
#if MTO_X86_DISPATCH
  const X86Level level = x86_detected_level();
  if (level >= X86Level::Avx512) return read_avx512;
  if (level >= X86Level::Avx2) return read_avx2;
#endif
  return read_baseline;
}

double measure_read(ThreadPool& pool, int64_t bytes, double seconds) {
  bytes = std::max<int64_t>(kReadBlock, bytes / kReadBlock * kReadBlock);
  std::unique_ptr<uint8_t[]> raw(new uint8_t[size_t(bytes) + 64]);
  uint8_t* buf = raw.get() + (64 - reinterpret_cast<uintptr_t>(raw.get()) % 64) % 64;
  const int64_t blocks = bytes / kReadBlock;
  // First touch from the pool's threads, as the reads will be.
  pool.parallel_for(blocks, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) std::memset(buf + i * kReadBlock, int(i & 0xff), kReadBlock);
  });
  const ReadFn fn = read_loop();
  double best = 0, spent = 0;
  for (int pass = 0; pass < 5 || (spent < seconds && pass < 100); ++pass) {
    auto t0 = Clock::now();
    pool.parallel_for(blocks, 1, [&](int64_t b, int64_t e) {
      uint64_t s = 0;
      for (int64_t i = b; i < e; ++i) s += fn(buf + i * kReadBlock, kReadBlock);
      g_sink.fetch_add(s, std::memory_order_relaxed);
    });
    const double t = seconds_since(t0);
    spent += t;
    best = std::max(best, double(bytes) / t / 1e9);
  }
  return best;
}

}  // namespace

Roofline measure_roofline(ThreadPool& pool, const RooflineOptions& opts) {
  Roofline r;
  r.threads = pool.size();
  for (const FmaLoop& loop : fma_loops()) {
    const double g = measure_fma(pool, loop, opts.seconds);
    r.fma.push_back({loop.isa, loop.lanes, g});
    if (g > r.fma_gflops) {
      r.fma_gflops = g;
      r.fma_isa = loop.isa;
    }
  }
  r.read_bytes = std::max<int64_t>(kReadBlock, opts.read_bytes / kReadBlock * kReadBlock);
  r.read_gbps = measure_read(pool, r.read_bytes, opts.seconds);
  return r;
}

}  // namespace mto::cpu
