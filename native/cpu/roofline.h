// The machine's limits, measured: peak FMA throughput and streaming read bandwidth. Only the
// benchmark (bench/) uses them, to say how close each op comes to what the hardware can do.
// Both take a fraction of a second each.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "thread_pool.h"

namespace mto::cpu {

struct FmaPeak {
  std::string isa;  // "avx512", "avx2", "neon" or "baseline"
  int lanes;        // float32 lanes per FMA instruction
  double gflops;    // all of the pool's threads together
};

struct Roofline {
  int threads = 0;
  std::vector<FmaPeak> fma;  // one entry per instruction set this CPU can run
  double fma_gflops = 0;     // the best of `fma`
  std::string fma_isa;       // which one that was
  double read_gbps = 0;      // streaming read of a buffer much larger than the caches
  int64_t read_bytes = 0;    // that buffer's size
};

struct RooflineOptions {
  double seconds = 0.2;              // time spent on each FMA measurement and on the read one
  int64_t read_bytes = 512ll << 20;  // buffer streamed for the bandwidth measurement
};

// Best-of-several measurements on `pool` (its size is the thread count reported). Call it from a
// task posted to the pool, so that exactly the pool's threads run (any other caller adds itself).
Roofline measure_roofline(ThreadPool& pool, const RooflineOptions& opts);

}  // namespace mto::cpu
