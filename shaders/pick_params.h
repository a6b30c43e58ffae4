// argmax, topK and sample over the last axis (shaders/pick.metal): buffer slots, geometry and
// parameters, declared once for the kernels and the host (native/core/plan/pick.cc).
//
// One threadgroup per row of x [rows, cols]; what each element counts as (its rank, sample's
// integer weight) is shaders/pick_sample.h's, shared with the cpu backend.
#ifndef MTO_SHADERS_PICK_PARAMS_H
#define MTO_SHADERS_PICK_PARAMS_H

#include "kernel_abi.h"

#define PICK_BUFFER_X 0       // x [rows, cols]: float32, float16 or bfloat16 (the instance's type)
#define PICK_BUFFER_IDS 1     // int32: argmax and sample [rows], topK [rows, k]
#define PICK_BUFFER_VALUES 2  // topK: values [rows, k] in x's dtype
#define PICK_BUFFER_STATUS 3  // sample: int32 [rows][2], what each row's check found (PICK_STATUS_*)
#define PICK_BUFFER_PARAMS 4  // PickKernelParams (setBytes)
#define PICK_BUFFER_SCRATCH 5 // pick_topk_wide: int32 [rows, k], the sort's second buffer

// Threads per threadgroup: the plan picks a power of two from 32 to PICK_MAX_THREADS, at least a
// quarter of cols, so that the PICK_KEEP ranks every thread keeps while it scans hold the whole
// row when it is short.
#define PICK_MAX_THREADS 512
#define PICK_KEEP 4
// topK's k and sample's top_k (the candidates, largest first) that pick_topk and pick_sample take:
// their candidates are sorted in threadgroup memory, threads * PICK_KEEP at a time.
#define PICK_MAX_K 256

// Larger k, and sample's ranked mode over more candidates (topK above PICK_MAX_K, or topP alone
// on a row wider than PICK_MAX_K), or fewer threads than k / PICK_KEEP (a pipeline that allows
// fewer): pick_topk_wide and pick_sample_wide (shaders/pick_radix.h), any k up to cols, any whole
// number of SIMD-groups up to PICK_WIDE_MAX_THREADS, about PICK_WIDE_READS elements a thread.
#define PICK_WIDE_MAX_THREADS 1024
#define PICK_WIDE_READS 8

// sample's modes.
#define PICK_SAMPLE_ARGMAX 0  // temperature 0
#define PICK_SAMPLE_RANKED 1  // the k largest (top_k, or every element of a row no wider than
                              // PICK_MAX_K when only top_p is set), then top_p
#define PICK_SAMPLE_INDEX 2   // no top_k and no top_p: every element, in index order

// What sample found in a row: status[row][0]; status[row][1] holds the index for NaN and +inf.
#define PICK_STATUS_OK 0
#define PICK_STATUS_NAN 1
#define PICK_STATUS_POS_INF 2
#define PICK_STATUS_ALL_NEG_INF 3

struct PickKernelParams {
  mto_i32 rows, cols;
  mto_i32 k;                    // topK: k; sample (ranked): the candidates
  mto_i32 mode;                 // sample: PICK_SAMPLE_*
  mto_i32 seed_lo, seed_hi;     // sample's seed
  mto_i32 scale_bits;           // sample: log2(e) / temperature as float bits (core/ops.h)
  mto_i32 has_top_p;            // sample (ranked): cut at top_p
  mto_i32 top_p_lo, top_p_hi;   // round(top_p * 2^32)
  mto_i32 reserved[2];          // keeps the struct 48 bytes
};

#endif  // MTO_SHADERS_PICK_PARAMS_H
