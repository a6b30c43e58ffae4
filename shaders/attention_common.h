// Helpers shared by the attention kernels of both tiers (shaders/attention.metal,
// shaders/attention_tensorops.metal): K/V element loads (dense or mxfp8 decoded by mx_formats.h,
// the decoder the cpu backend uses), the visibility/additive-mask rule of one (query, key), and the
// NaN rule (native/core/ops.h, check_attention): a hidden key (score -inf) is never read, and over
// the seen keys NaN and inf follow float arithmetic, row by row.
#ifndef MTO_SHADERS_ATTENTION_COMMON_H
#define MTO_SHADERS_ATTENTION_COMMON_H

#include <metal_stdlib>

#include "attention_params.h"
#include "mx_formats.h"

using namespace metal;

#define ATTN_LOG2E 1.44269504088896340736f

inline float attn_neg_inf() { return as_type<float>(0xff800000u); }
// The lowest finite float (-FLT_MAX): the decode key loop's first running maximum (attention_decode.h).
inline float attn_lowest() { return as_type<float>(0xff7fffffu); }

// max(m, s) that returns a NaN s (MSL's max may drop a NaN operand); a NaN m stays NaN. Either
// argument order gives a NaN when one is NaN, so lanes that exchange maxima agree.
inline float attn_max_nan(float m, float s) { return (s > m || isnan(s)) ? s : m; }

// P of a key the row does not see is -0, told apart from a weight that underflowed to +0: a NaN V
// of a hidden key must not reach the row, while 0 * NaN of a seen key must.
inline bool attn_hidden_p(float p) { return p == 0.0f && signbit(p); }

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

// Whether the mask (mask_kind not ATTN_MASK_NONE) lets query i of (b, h) see key j, and its
// additive value there (log2 domain). An additive -inf hides the key like a false bool mask (a NaN
// q.k must not turn it into a NaN score).
inline bool attn_mask_visible(constant AttentionKernelParams& p, device const uchar* mask, uint b, uint h,
                              int i, int j, thread float& bias) {
  bias = 0.0f;
  const long idx = long(b) * p.mask_stride[0] + long(h) * p.mask_stride[1] + long(i) * p.mask_stride[2] +
                   long(j) * p.mask_stride[3];
  if (p.mask_kind == ATTN_MASK_BOOL) return mask[idx] != 0;
  float add;
  if (p.mask_kind == ATTN_MASK_F32) add = ((device const float*)mask)[idx];
  else if (p.mask_kind == ATTN_MASK_F16) add = float(((device const half*)mask)[idx]);
  else add = float(((device const bfloat*)mask)[idx]);
  bias = add * ATTN_LOG2E;
  return add != attn_neg_inf();
}

// Whether query i of (b, h) may see key j (in range, causal, the mask), and the additive mask
// there (log2 domain).
inline bool attn_visible(constant AttentionKernelParams& p, device const uchar* mask, uint b, uint h,
                         int i, int j, thread float& bias) {
  bias = 0.0f;
  if (j >= p.Lk || i >= p.Lq) return false;  // past the keys, or a prefill row past the queries
  if (p.causal && j > i + p.Lk - p.Lq) return false;
  if (p.mask_kind == ATTN_MASK_NONE) return true;
  return attn_mask_visible(p, mask, b, h, i, j, bias);
}

// The factor f of o = O f for a row's final (m, l) (log2 domain): 1 / l, or with head h's sink
// s joined once (attention sinks): 2^(m - M) / (l 2^(m - M) + 2^(s - M)), M = max(m, s). 0 for a
// row that saw no key (l = 0); NaN when m, l or the sink is NaN or the sink is +inf (the row is
// NaN); otherwise in (0, 1] (l >= 1 once a key is seen). -inf is no sink.
inline float attn_out_scale(constant AttentionKernelParams& p, device const float* sinks, uint h, float m,
                            float l) {
  if (l == 0.0f) return 0.0f;
  if (p.has_sinks == 0) return 1.0f / l;
  const float s = sinks[h] * ATTN_LOG2E;
  const float M = attn_max_nan(m, s);
  const float c = exp2(m - M);
  return c / (l * c + exp2(s - M));
}

#endif  // MTO_SHADERS_ATTENTION_COMMON_H
