// The attention kernels (shaders/attention.metal, attention_tensorops.metal): buffer slots, tile
// geometry and parameters, declared once for the kernels and the host (native/core/plan/attention.cc).
//
// o[B, Hq, Lq, D] = softmax(q k^T * scale + mask) v, FlashAttention as in docs/design/API.md:
// bottom-right causal, bool or additive mask broadcast by element strides, GQA (query head h reads
// kv head h / G), a row that sees no key is zeros. q, k, v are dense and contiguous [B, H, L, D];
// k/v may instead be mxfp8 (E4M3/E5M2) codes [B*Hkv*Lk, D] bytes with E8M0 scales [B*Hkv*Lk, D/32].
// o has q's dtype (softmax and accumulation are float32 throughout; each element of o is rounded
// once as it is stored; the split decode's partial results are float32). With sinks, head h's
// logit s_h joins each row's softmax denominator (no value), once, where o is normalised.
#ifndef MTO_SHADERS_ATTENTION_PARAMS_H
#define MTO_SHADERS_ATTENTION_PARAMS_H

#include "kernel_abi.h"

#define ATTN_BUFFER_Q 0          // q [B, Hq, Lq, D] (float32, float16 or bfloat16)
#define ATTN_BUFFER_K 1          // k [B, Hkv, Lk, D] dense (q's dtype), or mxfp8 codes
#define ATTN_BUFFER_V 2          // v, as k
#define ATTN_BUFFER_K_SCALES 3   // mxfp8: k's E8M0 scales [B*Hkv*Lk, D/32]; dense: unused
#define ATTN_BUFFER_V_SCALES 4   // mxfp8: v's scales; dense: unused
#define ATTN_BUFFER_MASK 5       // mask elements (see ATTN_MASK_*); unused when mask_kind == 0
#define ATTN_BUFFER_O 6          // o [B, Hq, Lq, D] of q's dtype (one pass, or the merge pass)
#define ATTN_BUFFER_PARTIAL_O 7  // split decode: unnormalised O [B, Hkv, chunks, split, rows, D], float32
#define ATTN_BUFFER_PARTIAL_ML 8 // split decode: (m, l) [B, Hkv, chunks, split, rows, 2], float32
#define ATTN_BUFFER_PARAMS 9     // AttentionKernelParams (setBytes)
#define ATTN_BUFFER_SINKS 10     // attention sinks float32 [Hq] (has_sinks); unused otherwise

// Mask element types (mask_kind).
#define ATTN_MASK_NONE 0
#define ATTN_MASK_BOOL 1   // one byte per element, nonzero = attend
#define ATTN_MASK_F32 2    // additive
#define ATTN_MASK_F16 3    // additive
#define ATTN_MASK_BF16 4   // additive

// K/V storage (template argument KV of the kernels).
#define ATTN_KV_DENSE 0
#define ATTN_KV_MXFP8_E4M3 1
#define ATTN_KV_MXFP8_E5M2 2

// Decode (Lq <= ATTN_DECODE_MAX_LQ): a threadgroup owns (batch, kv head, row chunk, kv split).
// Its rows are the G * Lq query rows of the kv head's group (row r = head-in-group r / Lq, query
// r % Lq), ATTN_DECODE_ROWS at a time, so every K/V element is read from device memory once per
// chunk -- once per kv head whenever G * Lq <= ATTN_DECODE_ROWS (decode with GQA up to 8). Its
// SIMD-groups take keys round robin; lane l holds features l, l + 32, ... of each row.
#define ATTN_DECODE_MAX_LQ 8
#define ATTN_DECODE_ROWS 8
#define ATTN_DECODE_SIMDGROUPS 4
// A split (second pass merges) is planned when Lk >= ATTN_SPLIT_MIN_KEYS and the device would
// otherwise get fewer than ATTN_SPLIT_GROUPS_PER_CORE threadgroups per GPU core
// (DeviceProfile, native/core/capabilities.h); each split gets at least ATTN_SPLIT_MIN_LEN keys,
// at most ATTN_MAX_SPLITS splits. The merge runs one threadgroup per query row.
#define ATTN_SPLIT_MIN_KEYS 256
#define ATTN_SPLIT_MIN_LEN 8
#define ATTN_MAX_SPLITS 128
#define ATTN_SPLIT_GROUPS_PER_CORE 64
#define ATTN_MERGE_THREADS 64

// Prefill: a threadgroup owns 8 x ATTN_PREFILL_SIMDGROUPS(D) query rows of one query head; each
// of its SIMD-groups owns 8 of them (a strip of D/8 simdgroup_matrix accumulators) and the
// threadgroup steps through the keys ATTN_PREFILL_BK at a time, staging K then V in threadgroup
// memory. 4 SIMD-groups (32 rows: MLX's steel attention tile, each staged key serving twice the
// rows of 16) up to D = 128; 2 at D = 256, where 32 rows' threadgroup memory would pass 22 KiB.
#define ATTN_PREFILL_BK 16
#define ATTN_PREFILL_SIMDGROUPS(D) ((D) > 128 ? 2 : 4)

// Prefill on the tensorops tiers (shaders/attention_tensorops.metal): a threadgroup owns
// ATTN_TOPS_SIMDGROUPS x ATTN_TOPS_SG_ROWS query rows of one query head, each SIMD-group whole
// rows (execution_simdgroup). Keys go ATTN_TOPS_BK at a time: the P V product takes the scores as
// its left input, which needs a static inner dimension, and a static K must be a multiple of 32.
// Q and K are staged ATTN_TOPS_DCHUNK features at a time (threadgroup memory holds 32 KiB).
#define ATTN_TOPS_SG_ROWS 16
#define ATTN_TOPS_SIMDGROUPS 2
#define ATTN_TOPS_BK 32
#define ATTN_TOPS_DCHUNK 64

struct AttentionKernelParams {
  mto_i32 B, Hq, Hkv, Lq, Lk, D;
  mto_i32 G;            // Hq / Hkv
  float scale_log2;     // scale * log2(e): scores are kept in the log2 domain
  mto_i32 causal;       // 1: query i sees keys j <= i + Lk - Lq
  mto_i32 mask_kind;    // ATTN_MASK_*
  mto_i32 mask_stride[4];  // element strides of the mask over (b, h, i, j); 0 = broadcast
  mto_i32 rows;         // decode: G * Lq query rows per kv head
  mto_i32 chunks;       // decode: threadgroups over the rows, ceil(rows / ATTN_DECODE_ROWS)
  mto_i32 splits;       // decode: kv splits (1: one pass writes o)
  mto_i32 split_len;    // decode: keys per split
  mto_i32 has_sinks;    // 1: the sink logit of each query head joins its rows' denominators once,
                        // where o is normalised (one pass, or the split decode's merge)
};

#endif  // MTO_SHADERS_ATTENTION_PARAMS_H
