// rope plan (rope.h). Slots and geometry come from shaders/rope_params.h, which the kernel
// includes too.
#include "rope.h"

#include <cmath>

#include "../../../shaders/rope_params.h"
#include "../rope_turns.h"
#include "plan_util.h"

namespace mto::plan {

using namespace util;

static_assert(sizeof(RopeKernelParams) == 4 * (12 + 2 * ROPE_MAX_PAIRS), "RopeKernelParams layout");

Dispatch plan_rope(const RopeParams& p, DType x, DType y, Tier tier) {
  require_metal(tier);
  const char* sx = float_suffix(x);
  if (!sx) throw Error(code::DType, std::string("the Metal rope kernel takes float32, float16 or bfloat16 x, got ") + dtype_name(x));
  if (y != x) {
    throw Error(code::DType, std::string("the Metal rope kernel writes x's dtype ") + dtype_name(x) + ", not " +
                                 dtype_name(y));
  }
  const int64_t half = p.dims / 2;
  if (p.B <= 0 || p.H <= 0 || p.L <= 0 || half <= 0 || p.dims > p.D || p.dims % 2 != 0) {
    throw Error(code::Shape, "rope needs B, H, L > 0 and an even dims in [2, D]");
  }
  if (!p.has_freqs && half > ROPE_MAX_PAIRS) {
    throw Error(code::Shape, "the Metal rope kernel tabulates at most " + std::to_string(ROPE_MAX_PAIRS) +
                                 " frequencies (dims " + std::to_string(2 * ROPE_MAX_PAIRS) + "); got dims " +
                                 std::to_string(p.dims) + " without freqs");
  }
  const int64_t rows = p.B * p.H * p.L;
  const int64_t per_row = half + (p.D - p.dims);
  check_i32("B * H * L * D", rows * p.D);
  check_i32("rope work items", rows * per_row);
  if (!p.has_positions) check_i32("offset + L - 1", p.offset + p.L - 1);

  RopeKernelParams kp = {};
  kp.total = int32_t(rows * per_row);
  kp.per_row = int32_t(per_row);
  kp.half = int32_t(half);
  kp.D = int32_t(p.D);
  kp.H = int32_t(p.H);
  kp.L = int32_t(p.L);
  kp.blhd = p.blhd ? 1 : 0;
  kp.neox = p.neox ? 1 : 0;
  kp.has_positions = p.has_positions ? 1 : 0;
  kp.has_freqs = p.has_freqs ? 1 : 0;
  kp.offset = int32_t(p.offset);
  if (!p.has_freqs) {
    // The cpu backend's inverse frequencies (native/cpu/rope.cc), in turns per position: only
    // the fraction matters (a whole turn per position adds nothing), kept to 64 bits.
    for (int64_t i = 0; i < half; ++i) {
      const uint64_t fixed = rope_turns(std::pow(p.base, -2.0 * double(i) / double(p.dims)));
      kp.turns_lo[i] = int32_t(uint32_t(fixed));
      kp.turns_hi[i] = int32_t(uint32_t(fixed >> 32));
    }
  }

  Dispatch d;
  d.library = "rope";
  d.kernel = std::string("rope_rows_") + sx;
  d.tier = Tier::Simdgroup;
  d.threadgroups[0] = ceil_div(rows * per_row, ROPE_THREADS);
  d.threads_per_threadgroup[0] = ROPE_THREADS;
  d.buffers = {{ROPE_BUFFER_X, Arg::X},
               {ROPE_BUFFER_POSITIONS, p.has_positions ? Arg::Positions : Arg::Unused},
               {ROPE_BUFFER_FREQS, p.has_freqs ? Arg::Freqs : Arg::Unused},
               {ROPE_BUFFER_Y, Arg::Y},
               {ROPE_BUFFER_PARAMS, Arg::Params}};
  d.params = bytes_of(kp);
  return d;
}

}  // namespace mto::plan
