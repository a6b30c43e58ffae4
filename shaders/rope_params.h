// The rotary position embedding kernel (shaders/rope.metal): buffer slots, geometry and
// parameters, declared once for the kernels and the host (native/core/plan/rope.cc).
//
// x [B, H, L, D] (bhld) or [B, L, H, D] (blhd), dtype T (float32, float16 or bfloat16), y of T:
// row l has position offset + l or positions[l] (int32); pair i < dims / 2, (i, i + dims / 2)
// (neox) or (2i, 2i + 1) (interleaved), turns by pos * inv_freq(i) radians, inv_freq(i) =
// base^(-2i / dims) or freqs[i] (float32); features >= dims pass through.
#ifndef MTO_SHADERS_ROPE_PARAMS_H
#define MTO_SHADERS_ROPE_PARAMS_H

#include "kernel_abi.h"

#define ROPE_BUFFER_X 0
#define ROPE_BUFFER_POSITIONS 1  // int32 [L], or unused
#define ROPE_BUFFER_FREQS 2      // float32 [dims / 2], or unused
#define ROPE_BUFFER_Y 3
#define ROPE_BUFFER_PARAMS 4     // RopeKernelParams (setBytes)

// One thread per rotated pair or passed-through feature of a row (dims / 2 + D - dims a row),
// ROPE_THREADS a threadgroup over the flattened rows.
#define ROPE_THREADS 256
// Pairs whose frequency the host tabulates (base^(-2i/dims) in double, as the cpu backend
// works it out): dims up to 512 without a freqs tensor; with freqs, any dims.
#define ROPE_MAX_PAIRS 256

struct RopeKernelParams {
  mto_i32 total;   // rows * per_row work items (< 2^31)
  mto_i32 per_row; // dims / 2 + (D - dims)
  mto_i32 half;    // dims / 2
  mto_i32 D, H, L;
  mto_i32 blhd, neox, has_positions, has_freqs;
  mto_i32 offset;  // offset + L - 1 < 2^31
  mto_i32 reserved;
  // Without freqs: the fraction of inv_freq(i) / (2 pi), the turns a position adds, in 64-bit
  // fixed point (units of 2^-64), split into its low and high 32 bits.
  mto_i32 turns_lo[ROPE_MAX_PAIRS];
  mto_i32 turns_hi[ROPE_MAX_PAIRS];
};

#endif  // MTO_SHADERS_ROPE_PARAMS_H
