// groupRows (shaders/group_rows.metal): buffer slots, geometry and parameters, declared once for
// the kernels and the host (native/core/plan/group_rows.cc).
//
// The entries of ids [T, k] (count = T * k of them, int32 in [0, groups)) stably sorted by value,
// as the cpu backend's counting sort (native/cpu/pick.cc): sizes [groups], rows [count] (the row
// t = i / k of each entry i, in sorted order), positions [count] (where entry i went). Without
// atomics (the sort must give the same bits on every run): the entries are cut into chunks of
// GROUP_ROWS_CHUNK, one threadgroup each, and three passes run in order:
//   group_rows_count   (grid: chunks)  counts[c][g] = entries of chunk c holding g
//   group_rows_scan    (grid: 1)       sizes[g] = sum over chunks; counts[c][g] becomes the first
//                                      sorted position of chunk c's entries of g (the exclusive
//                                      prefix over groups, then over chunks); checks the ids
//   group_rows_scatter (grid: chunks)  entry i of chunk c goes to counts[c][id] + the entries of
//                                      g before it in its chunk
#ifndef MTO_SHADERS_GROUP_ROWS_PARAMS_H
#define MTO_SHADERS_GROUP_ROWS_PARAMS_H

#include "kernel_abi.h"

#define GROUP_ROWS_BUFFER_IDS 0        // int32 ids, count of them (flat)
#define GROUP_ROWS_BUFFER_SIZES 1      // int32 sizes [groups]: written by the scan pass
#define GROUP_ROWS_BUFFER_ROWS 2       // int32 rows [count]: written by the scatter pass
#define GROUP_ROWS_BUFFER_POSITIONS 3  // int32 positions [count]: written by the scatter pass
#define GROUP_ROWS_BUFFER_COUNTS 4     // int32 scratch [chunks][groups]: counts, then first positions
#define GROUP_ROWS_BUFFER_STATUS 5     // int32 [2]: the first flat index holding an id outside
                                       // [0, groups) (-1: none) and that id; written by the scan pass
#define GROUP_ROWS_BUFFER_PARAMS 6     // GroupRowsKernelParams (setBytes)

// Every pass runs GROUP_ROWS_THREADS threads per threadgroup (a size every Metal pipeline allows),
// and a chunk holds one entry per thread.
#define GROUP_ROWS_THREADS 256
#define GROUP_ROWS_CHUNK GROUP_ROWS_THREADS
// The largest scratch the plan accepts, in int32 (chunks * groups; 16 MiB): the scan pass walks it
// with one threadgroup, so a sort with more groups times chunks than this runs on the cpu.
#define GROUP_ROWS_MAX_COUNTS (1 << 22)

struct GroupRowsKernelParams {
  mto_i32 count;   // T * k entries
  mto_i32 k;       // entries per row of ids
  mto_i32 groups;
  mto_i32 chunks;  // ceil(count / GROUP_ROWS_CHUNK)
};

#endif  // MTO_SHADERS_GROUP_ROWS_PARAMS_H
