// Dispatch plan of rotary position embedding (shaders/rope.metal; core/ops.h RopeParams).
#pragma once
#include "../dispatch_plan.h"

namespace mto::plan {

// y = rope(x) as check_rope validated it, x of dtype x and y of dtype y (x's). Without freqs the
// plan tabulates base^(-2i/dims) / (2 pi) in double for the kernel (at most ROPE_MAX_PAIRS pairs).
// Throws E_DTYPE, E_SHAPE (more pairs than that without freqs; sizes or positions past 32-bit
// integers), E_BACKEND (Tier::Cpu). Slots: X, Positions, Freqs, Y (Positions, Freqs Unused
// when absent).
Dispatch plan_rope(const RopeParams& p, DType x, DType y, Tier tier);

}  // namespace mto::plan
