// embedding: rows of a table [V, D] picked by int32 ids, for the simdgroup tier. One threadgroup
// per (id, chunk of the row), as ggml's kernel_get_rows_*: a dense table is copied element for
// element in its own dtype (one instance per element size: the bits move unchanged), a quantized
// one decoded to float32 by mx_dequant.h in runs of EMB_PER_THREAD codes (every format of
// docs/design/API.md). Slots and geometry: embedding_params.h; plan: native/core/plan/embedding.cc.
//
// An id outside [0, V) must fail the op, and a kernel cannot throw: its rows are written as zeros
// (nothing outside the table is read), and threadgroup (0, 0) also scans every id and writes the
// first bad one into the status buffer, which the host turns into the cpu backend's E_ARG.
#include <metal_stdlib>

#include "embedding_params.h"
#include "mx_dequant.h"

using namespace metal;

inline bool embedding_valid(int id, int vocab) { return id >= 0 && id < vocab; }

// Threadgroup (0, 0): the first flat index whose id is out of range (-1: none) and that id.
inline void embedding_check(device const int* ids, uint count, int vocab, device int* status,
                            threadgroup uint* slots, uint tid, uint threads, ushort simd, ushort lane) {
  uint first = 0xFFFFFFFFu;
  for (uint i = tid; i < count; i += threads) {
    if (!embedding_valid(ids[i], vocab)) {
      first = i;
      break;
    }
  }
  first = simd_min(first);
  if (lane == 0) slots[simd] = first;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    for (uint s = 1; s < threads / 32u; ++s) first = min(first, slots[s]);
    status[0] = first == 0xFFFFFFFFu ? -1 : int(first);
    status[1] = first == 0xFFFFFFFFu ? 0 : ids[first];
  }
}

// E: the table's element as a same-size unsigned integer.
template <typename E>
[[max_total_threads_per_threadgroup(EMB_MAX_THREADS)]] [[kernel]] void embedding_dense(
    device const int* ids [[buffer(EMB_BUFFER_IDS)]],
    device const E* table [[buffer(EMB_BUFFER_TABLE)]],
    device E* out [[buffer(EMB_BUFFER_OUT)]],
    device int* status [[buffer(EMB_BUFFER_STATUS)]],
    constant EmbeddingKernelParams& p [[buffer(EMB_BUFFER_PARAMS)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint threads [[threads_per_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup uint slots[EMB_MAX_THREADS / 32];
  const uint D = uint(p.dim);
  const int id = ids[group.x];
  const bool valid = embedding_valid(id, p.vocab);
  device const E* src = table + ulong(valid ? id : 0) * D;
  device E* dst = out + ulong(group.x) * D;
  const uint c0 = group.y * threads * EMB_PER_THREAD;
  for (uint j = 0; j < EMB_PER_THREAD; ++j) {
    const uint c = c0 + j * threads + tid;
    if (c < D) dst[c] = valid ? src[c] : E(0);
  }
  if (group.x == 0 && group.y == 0) embedding_check(ids, uint(p.count), p.vocab, status, slots, tid, threads, simd, lane);
}

template <int FMT>
[[max_total_threads_per_threadgroup(EMB_MAX_THREADS)]] [[kernel]] void embedding_quantized(
    device const int* ids [[buffer(EMB_BUFFER_IDS)]],
    device const uchar* codes [[buffer(EMB_BUFFER_TABLE)]],
    device const typename mto_scale_storage<FMT>::type* scales [[buffer(EMB_BUFFER_SCALES)]],
    device const half* biases [[buffer(EMB_BUFFER_BIASES)]],
    device float* out [[buffer(EMB_BUFFER_OUT)]],
    device int* status [[buffer(EMB_BUFFER_STATUS)]],
    constant EmbeddingKernelParams& p [[buffer(EMB_BUFFER_PARAMS)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint threads [[threads_per_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup uint slots[EMB_MAX_THREADS / 32];
  const uint D = uint(p.dim);
  const int id = ids[group.x];
  device float* dst = out + ulong(group.x) * D;
  // One run of EMB_PER_THREAD codes per thread: the run lies inside one block (D is a multiple of
  // 32 and of the affine group).
  const uint k = (group.y * threads + tid) * EMB_PER_THREAD;
  if (k < D) {
    if (embedding_valid(id, p.vocab)) {
      mto_dequantize_run<FMT, EMB_PER_THREAD>(codes, scales, biases, uint(id), k, D, uint(p.group_size), dst + k);
    } else {
      for (uint i = 0; i < EMB_PER_THREAD; ++i) dst[k + i] = 0.0f;
    }
  }
  if (group.x == 0 && group.y == 0) embedding_check(ids, uint(p.count), p.vocab, status, slots, tid, threads, simd, lane);
}

// Host names: embedding_dense_b4 / _b2 (4- and 2-byte elements: float32, float16 and bfloat16
// tables), embedding_<format>.
MTO_KERNEL_INSTANCE("embedding_dense_b4", embedding_dense, uint)
MTO_KERNEL_INSTANCE("embedding_dense_b2", embedding_dense, ushort)
MTO_KERNEL_INSTANCE("embedding_mxfp8", embedding_quantized, MTO_FORMAT_MXFP8_E4M3)
MTO_KERNEL_INSTANCE("embedding_mxfp8_e5m2", embedding_quantized, MTO_FORMAT_MXFP8_E5M2)
MTO_KERNEL_INSTANCE("embedding_mxfp6_e3m2", embedding_quantized, MTO_FORMAT_MXFP6_E3M2)
MTO_KERNEL_INSTANCE("embedding_mxfp6_e2m3", embedding_quantized, MTO_FORMAT_MXFP6_E2M3)
MTO_KERNEL_INSTANCE("embedding_mxfp4", embedding_quantized, MTO_FORMAT_MXFP4)
MTO_KERNEL_INSTANCE("embedding_mxint8", embedding_quantized, MTO_FORMAT_MXINT8)
MTO_KERNEL_INSTANCE("embedding_mxint4", embedding_quantized, MTO_FORMAT_MXINT4)
MTO_KERNEL_INSTANCE("embedding_mxint2", embedding_quantized, MTO_FORMAT_MXINT2)
MTO_KERNEL_INSTANCE("embedding_affine4", embedding_quantized, MTO_FORMAT_AFFINE4)
MTO_KERNEL_INSTANCE("embedding_affine8", embedding_quantized, MTO_FORMAT_AFFINE8)
