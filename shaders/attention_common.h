// Helpers shared by the attention kernels of both tiers (shaders/attention.metal,
// shaders/attention_tensorops.metal): K/V element loads (dense or mxfp8 decoded by mx_formats.h,
// the decoder the cpu backend uses) and the visibility/additive-mask rule of one (query, key).
#ifndef MTO_SHADERS_ATTENTION_COMMON_H
#define MTO_SHADERS_ATTENTION_COMMON_H

#include <metal_stdlib>

#include "attention_params.h"
#include "mx_formats.h"

using namespace metal;

#define ATTN_LOG2E 1.44269504088896340736f

inline float attn_neg_inf() { return as_type<float>(0xff800000u); }

// Element type of the K/V buffers: q's dtype when dense, code bytes when mxfp8.
template <typename T, int KV>
struct attn_kv_storage {
  typedef uchar type;
};
template <typename T>
struct attn_kv_storage<T, ATTN_KV_DENSE> {
  typedef T type;
};

// Element d of K/V row `row` (row = (b * Hkv + kvh) * Lk + j) as float.
template <int KV, typename S>
inline float attn_kv_load(device const S* src, device const uchar* scales, ulong row, uint d, uint D) {
  if (KV == ATTN_KV_DENSE) return float(src[row * D + d]);
  const int elem = KV == ATTN_KV_MXFP8_E4M3 ? MTO_ELEM_FP8_E4M3 : MTO_ELEM_FP8_E5M2;
  const float s = mto_decode_e8m0(uint(scales[row * (D / 32u) + d / 32u]));
  return mto_decode_element(elem, uint(src[row * D + d])) * s;
}

// Whether query i of (b, h) may see key j, and the additive mask there (log2 domain).
inline bool attn_visible(constant AttentionKernelParams& p, device const uchar* mask, uint b, uint h,
                         int i, int j, thread float& bias) {
  bias = 0.0f;
  if (j >= p.Lk || i >= p.Lq) return false;  // past the keys, or a prefill row past the queries
  if (p.causal && j > i + p.Lk - p.Lq) return false;
  if (p.mask_kind == ATTN_MASK_NONE) return true;
  const long idx = long(b) * p.mask_stride[0] + long(h) * p.mask_stride[1] + long(i) * p.mask_stride[2] +
                   long(j) * p.mask_stride[3];
  if (p.mask_kind == ATTN_MASK_BOOL) return mask[idx] != 0;
  float add;
  if (p.mask_kind == ATTN_MASK_F32) add = ((device const float*)mask)[idx];
  else if (p.mask_kind == ATTN_MASK_F16) add = float(((device const half*)mask)[idx]);
  else add = float(((device const bfloat*)mask)[idx]);
  bias = add * ATTN_LOG2E;
  return true;
}

#endif  // MTO_SHADERS_ATTENTION_COMMON_H
