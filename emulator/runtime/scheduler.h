// Runs one threadgroup of a launch: its threads as fibers on the calling OS thread, switching only
// at rendezvous points (barriers, SIMD-group functions), with the checks GPUs leave undefined:
// barriers reached by part of a threadgroup, threads at different barriers, SIMD-group functions
// or simdgroup_matrix operations in divergent control flow, threadgroup memory over the limit,
// and faults in guarded memory (guard.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bridge.h"
#include "fiber.h"
#include "guard.h"
#include "launch.h"
#include "tensor_binding.h"

namespace mtoh {

// A buffer or dynamic threadgroup allocation bound at an index for the whole launch.
struct BoundRegion {
  int index = 0;
  std::string name;
  std::unique_ptr<GuardedRegion> region;
  // A tensor bound at index (launch_tensors.h): region is its data plane, scales its scale plane
  // (or null); taken_as_tensor once a kernel parameter was built from it (bound_tensor).
  bool is_tensor = false;
  std::unique_ptr<GuardedRegion> scales;
  TensorBinding tensor;
  mutable bool taken_as_tensor = false;
};

struct LaunchState {
  const KernelInfo* kernel = nullptr;
  Geometry geometry;
  RunOptions options;
  std::vector<BoundRegion> buffers;
  std::vector<std::pair<int, uint32_t>> threadgroup_memory;  // dynamic [[threadgroup(n)]] sizes
  const BoundRegion* find_buffer(int index) const;
};

class ThreadgroupRunner {
 public:
  // Runners alive at once on one OS thread, each on its own fiber stacks (`slot`).
  static constexpr uint32_t kSlots = 2;
  ThreadgroupRunner(const LaunchState& launch, uint32_t slot);
  ~ThreadgroupRunner();
  // Runs threadgroup `group` in steps, so that two runners' threadgroups can interleave: start
  // readies its threads; each step runs them to their next rendezvous and resolves it, and returns
  // true once the threadgroup has finished or failed (result() says which).
  void start(const uint32_t group[3]);
  bool step();
  const RunResult& result() const { return result_; }

  // ---- For the bridge functions and ThreadArgs (called on a fiber of this runner).
  static ThreadgroupRunner* current();
  const ThreadIds& ids() const;
  const SimdView& simd_exchange(const void* value, size_t bytes, const Site& site);
  void barrier(const Site& site, bool simd_only);
  void* threadgroup_array(const void* key, const char* name, size_t bytes, size_t align);
  void* dynamic_threadgroup_memory(int index, size_t* bytes);
  const void** pointer_slots() { return pointer_slots_.data(); }
  void count_matrix_op(const Site& site, uint64_t args);
  [[noreturn]] void fail(const std::string& kind, const std::string& message);
  const LaunchState& launch() const { return launch_; }

 private:
  enum class Wait : uint8_t { Runnable, Barrier, SimdBarrier, SimdOp, Done };
  struct Lane {
    ThreadIds ids;
    Context ctx;
    Wait wait = Wait::Runnable;
    Site site{};
    unsigned char posted[kMaxSimdValueBytes];
    uint64_t matrix_ops = 0;
    uint64_t matrix_fingerprint = 0;  // of every simdgroup_matrix operation's site and arguments
    Site matrix_site{};               // the last one, for messages
  };
  struct SimdState {
    SimdView view;
    unsigned char snapshot[kSimdWidth][kMaxSimdValueBytes];
  };
  struct TgArray {
    const void* key;
    std::string name;
    size_t bytes;
    std::unique_ptr<GuardedRegion> region;
    bool fresh;  // poisoned for the current threadgroup
  };

  static void fiber_entry();
  bool advance();
  void block(Wait wait, const Site& site);
  bool resolve();
  bool resolve_simdgroup(uint32_t s, bool* progressed);
  bool check_matrix_uniform(const std::vector<uint32_t>& lanes, const char* when);
  std::string thread_name(uint32_t lane) const;
  std::string describe_fault(const FaultTrap& trap) const;
  size_t threadgroup_bytes_in_use() const;

  const LaunchState& launch_;
  const uint32_t slot_;
  uint32_t threads_ = 0, simdgroups_ = 0;
  uint32_t group_[3] = {0, 0, 0};
  std::vector<Lane> lanes_;
  std::vector<SimdState> simd_;
  std::vector<TgArray> arrays_;
  std::vector<std::unique_ptr<GuardedRegion>> dynamic_;  // per [[threadgroup(n)]] entry
  std::vector<const void*> pointer_slots_;                // threadgroup_pointer_slots()
  Context scheduler_;
  uint32_t running_ = 0;
  bool failed_ = false;
  bool finished_ = false;
  RunResult result_;
};

}  // namespace mtoh
