// groupRows: a stable counting sort of the int32 entries of ids by value, for the simdgroup tier
// (what a mixture of experts runs before groupedLinear). Three passes over chunks of
// GROUP_ROWS_CHUNK entries, no atomics: the counts, then their prefix sums, then each entry's
// place. The result is the cpu backend's bit for bit (native/cpu/pick.cc group_rows): an entry's
// place is the entries of smaller groups, plus those of its group in earlier chunks, plus those
// of its group before it in its own chunk. Slots, geometry and the passes: group_rows_params.h;
// plan: native/core/plan/group_rows.cc.
//
// An id outside [0, groups) must fail the op, and a kernel cannot throw: such an entry is counted
// nowhere and placed nowhere (nothing outside the scratch or the outputs is touched), and the scan
// pass writes the first one into the status buffer, which the host turns into the cpu backend's
// E_ARG (core/ops_pick.cc check_group_ids).
#include <metal_stdlib>

#include "group_rows_params.h"

using namespace metal;

inline bool group_rows_valid(int id, int groups) { return id >= 0 && id < groups; }

// Chunk `chunk`'s ids into `staged` (one per thread); returns how many the chunk holds. Ends with
// the barrier that makes them visible to the whole threadgroup.
inline uint group_rows_stage(device const int* ids, uint count, uint chunk, uint tid, threadgroup int* staged) {
  const uint first = chunk * GROUP_ROWS_CHUNK;
  const uint n = min(uint(GROUP_ROWS_CHUNK), count - first);
  if (tid < n) staged[tid] = ids[first + tid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return n;
}

// counts[chunk][g] = the chunk's entries holding g. Every group's count is zeroed first; then the
// first entry of each group present in the chunk writes that group's count (one writer per slot,
// ordered after the zeros by the device-memory barrier).
[[max_total_threads_per_threadgroup(GROUP_ROWS_THREADS)]] [[kernel]] void group_rows_count(
    device const int* ids [[buffer(GROUP_ROWS_BUFFER_IDS)]],
    device int* counts [[buffer(GROUP_ROWS_BUFFER_COUNTS)]],
    constant GroupRowsKernelParams& p [[buffer(GROUP_ROWS_BUFFER_PARAMS)]],
    uint chunk [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup int staged[GROUP_ROWS_CHUNK];
  const uint n = group_rows_stage(ids, uint(p.count), chunk, tid, staged);
  const uint G = uint(p.groups);
  device int* mine = counts + ulong(chunk) * G;
  for (uint g = tid; g < G; g += GROUP_ROWS_THREADS) mine[g] = 0;
  threadgroup_barrier(mem_flags::mem_device);  // the zeros land before any count
  if (tid >= n) return;
  const int id = staged[tid];
  if (!group_rows_valid(id, p.groups)) return;
  uint same = 0;
  for (uint j = 0; j < n; ++j) {
    if (staged[j] != id) continue;
    if (j < tid) return;  // an earlier entry of this group writes its count
    ++same;
  }
  mine[id] = int(same);
}

// One threadgroup: sizes[g] = sum over chunks of counts[c][g]; then counts[c][g] = the place of
// the first entry of g in chunk c (the sizes' exclusive prefix sum up to g, plus g's entries in
// chunks before c). Groups go GROUP_ROWS_THREADS at a time, the prefix across SIMD-groups through
// threadgroup memory, the running total of earlier blocks in `carry` (the same in every thread).
// Also scans every id for the first one outside [0, groups).
[[max_total_threads_per_threadgroup(GROUP_ROWS_THREADS)]] [[kernel]] void group_rows_scan(
    device const int* ids [[buffer(GROUP_ROWS_BUFFER_IDS)]],
    device int* sizes [[buffer(GROUP_ROWS_BUFFER_SIZES)]],
    device int* counts [[buffer(GROUP_ROWS_BUFFER_COUNTS)]],
    device int* status [[buffer(GROUP_ROWS_BUFFER_STATUS)]],
    constant GroupRowsKernelParams& p [[buffer(GROUP_ROWS_BUFFER_PARAMS)]],
    uint tid [[thread_index_in_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]]) {
  constexpr uint SIMDS = GROUP_ROWS_THREADS / 32;
  threadgroup int totals[SIMDS];
  threadgroup uint firsts[SIMDS];
  const uint G = uint(p.groups), chunks = uint(p.chunks), count = uint(p.count);

  // The first bad id, as embedding's check: the lowest flat index over every thread.
  uint first = 0xFFFFFFFFu;
  for (uint i = tid; i < count; i += GROUP_ROWS_THREADS) {
    if (!group_rows_valid(ids[i], p.groups)) {
      first = i;
      break;
    }
  }
  first = simd_min(first);
  if (lane == 0) firsts[simd] = first;

  int carry = 0;  // entries of every group before this block
  for (uint g0 = 0; g0 < G; g0 += GROUP_ROWS_THREADS) {
    const uint g = g0 + tid;
    int total = 0;
    if (g < G) {
      for (uint c = 0; c < chunks; ++c) total += counts[ulong(c) * G + g];
    }
    const int within = simd_prefix_exclusive_sum(total);
    const int simd_total = simd_sum(total);
    if (lane == 0) totals[simd] = simd_total;
    threadgroup_barrier(mem_flags::mem_threadgroup);  // every SIMD-group's total is in place
    int before = 0, block = 0;
    for (uint s = 0; s < SIMDS; ++s) {
      before += s < uint(simd) ? totals[s] : 0;
      block += totals[s];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // read before the next block overwrites them
    if (g < G) {
      sizes[g] = total;
      int at = carry + before + within;
      for (uint c = 0; c < chunks; ++c) {
        device int* slot = counts + ulong(c) * G + g;
        const int here = *slot;
        *slot = at;
        at += here;
      }
    }
    carry += block;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);  // every SIMD-group's first bad index is in place
  if (tid == 0) {
    for (uint s = 1; s < SIMDS; ++s) first = min(first, firsts[s]);
    status[0] = first == 0xFFFFFFFFu ? -1 : int(first);
    status[1] = first == 0xFFFFFFFFu ? 0 : ids[first];
  }
}

// Entry i = chunk * GROUP_ROWS_CHUNK + tid goes to counts[chunk][id] plus the entries of its group
// before it in the chunk: rows[that place] = i / k, positions[i] = that place. A bad id is placed
// nowhere (position -1; the op fails).
[[max_total_threads_per_threadgroup(GROUP_ROWS_THREADS)]] [[kernel]] void group_rows_scatter(
    device const int* ids [[buffer(GROUP_ROWS_BUFFER_IDS)]],
    device const int* counts [[buffer(GROUP_ROWS_BUFFER_COUNTS)]],
    device int* rows [[buffer(GROUP_ROWS_BUFFER_ROWS)]],
    device int* positions [[buffer(GROUP_ROWS_BUFFER_POSITIONS)]],
    constant GroupRowsKernelParams& p [[buffer(GROUP_ROWS_BUFFER_PARAMS)]],
    uint chunk [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup int staged[GROUP_ROWS_CHUNK];
  const uint n = group_rows_stage(ids, uint(p.count), chunk, tid, staged);
  if (tid >= n) return;
  const uint i = chunk * GROUP_ROWS_CHUNK + tid;
  const int id = staged[tid];
  if (!group_rows_valid(id, p.groups)) {
    positions[i] = -1;
    return;
  }
  int rank = 0;  // entries of this group before this one in the chunk: what keeps the sort stable
  for (uint j = 0; j < tid; ++j) rank += staged[j] == id ? 1 : 0;
  const int at = counts[long(chunk) * long(p.groups) + long(id)] + rank;
  rows[at] = int(i / uint(p.k));
  positions[i] = at;
}
