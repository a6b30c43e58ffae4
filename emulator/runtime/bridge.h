// The narrow interface between the metal_stdlib shim (compiled into every kernel translation unit)
// and the harness runtime: which GPU thread is running, the rendezvous points (barriers and
// SIMD-group operations), threadgroup storage and error reporting.
//
// This header is included by the shim *before* it defines MSL's address-space keywords as macros,
// so it may only use plain C++ and must not include headers that mention `device`, `thread`, ...
#pragma once
#include <cstddef>
#include <cstdint>

namespace mtoh {

// Apple GPUs execute SIMD-groups of 32 threads.
constexpr int kSimdWidth = 32;
// The largest value one lane may post to a SIMD-group operation (a float4 plus an argument fits).
constexpr size_t kMaxSimdValueBytes = 64;
// Threadgroup memory available to one threadgroup on every Apple GPU family we target.
constexpr size_t kThreadgroupMemoryLimit = 32768;

// A program point, used to check that all threads that meet at a rendezvous are at the same one.
// Filled from __builtin_FILE()/__builtin_LINE()/__builtin_COLUMN() default arguments, so it is the
// call site in the kernel source.
struct Site {
  const char* file;
  int line;
  int column;
  const char* what;  // "threadgroup_barrier", "simd_sum", ...
};

// The kernel-attribute values of the running thread (MSL [[...]] argument attributes).
struct ThreadIds {
  uint32_t thread_position_in_grid[3];
  uint32_t thread_position_in_threadgroup[3];
  uint32_t threadgroup_position_in_grid[3];
  uint32_t threads_per_threadgroup[3];
  uint32_t threadgroups_per_grid[3];
  uint32_t threads_per_grid[3];
  uint32_t thread_index_in_threadgroup;
  uint32_t simdgroup_index_in_threadgroup;
  uint32_t thread_index_in_simdgroup;
  uint32_t simdgroups_per_threadgroup;
  uint32_t threads_per_simdgroup;  // always kSimdWidth (the execution width), as on the GPU
};

// What a SIMD-group operation sees once every live lane of the SIMD-group has arrived: the value
// each lane posted (nullptr for lanes that are inactive: returned already, or past the end of a
// partial last SIMD-group).
struct SimdView {
  uint32_t active_mask;
  const unsigned char* value[kSimdWidth];
};

// The ids of the calling GPU thread.
const ThreadIds& current_ids();

// Posts `bytes` bytes at `value` and blocks until all live lanes of the caller's SIMD-group have
// posted at the same site; then returns every lane's posted bytes. A lane that reaches a different
// site, or a threadgroup barrier, while its SIMD-group waits here is reported as divergence.
const SimdView& simd_exchange(const void* value, size_t bytes, const Site& site);

// threadgroup_barrier: blocks until every thread of the threadgroup is at this same barrier.
// Reports a barrier reached after some threads returned, or threads waiting at different barriers.
void threadgroup_barrier(const Site& site);
// simdgroup_barrier: the same among the live lanes of the caller's SIMD-group.
void simdgroup_barrier(const Site& site);

// Storage of a function-scope `threadgroup T name[...]` declaration: the same bytes for every
// thread of the running threadgroup, fresh (poisoned) for each threadgroup. `key` identifies the
// declaration (the address of a static local next to it).
void* threadgroup_array(const void* key, const char* name, size_t bytes, size_t align);

// One pointer slot per thread of the running threadgroup, for the shim's exchanges among a scope's
// threads (a cooperative tensor's elements): the running threadgroup's own, as another threadgroup
// runs between its rendezvous.
const void** threadgroup_pointer_slots();

// How the running launch lays cooperative tensors out: false, elements scattered over the scope's
// threads (every row in many threads); true, in row blocks (a row in few threads), the reverse
// pass's, so a kernel that skips a slot a row is held in is seen under one of the two.
bool coop_row_blocks();

// simdgroup_matrix operations are executed per lane on a full copy of the matrix, which is only
// faithful when every lane performs the same operations on the same memory. Each operation is
// recorded (a count and a running fingerprint of its site and arguments: pointer, stride, origin,
// transpose, fill value) so the scheduler can check that all lanes of a SIMD-group agree whenever
// they meet (on the GPU the operations are SIMD-group-wide, undefined in divergent control flow).
void count_simdgroup_matrix_op(const Site& site, uint64_t args);

// Reports an error detected inside kernel code (by the shim) and abandons the threadgroup.
[[noreturn]] void kernel_error(const char* kind, const char* message);

}  // namespace mtoh
