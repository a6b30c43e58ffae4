// Barriers and SIMD-group functions. Each is a rendezvous in the harness runtime: the calling GPU
// thread (a fiber) blocks until the threads it synchronises with arrive, and the runtime checks
// that they arrived at the same call site (bridge.h). The site comes from default arguments
// evaluated at the call: __builtin_FILE/LINE/COLUMN.
//
// SIMD-group functions see every live lane's value, and compute the result in each lane from the
// same snapshot in lane order, so all lanes agree bit for bit (as on the GPU).
// Arguments MSL requires to be uniform across the SIMD-group (shuffle deltas, xor masks, the
// broadcast lane) are checked; reading an inactive lane is reported.
#pragma once
// A system header, so the C++17 it uses internally is allowed while kernels are held to C++14.
#pragma clang system_header
#include <cstdio>
#include <cstring>

#include "../runtime/bridge.h"
#include "mtoh_math.h"
#include "mtoh_types.h"

#define MTOH_SITE_PARAMS                                                       \
  const char *mtoh_file = __builtin_FILE(), int mtoh_line = __builtin_LINE(), \
             int mtoh_col = __builtin_COLUMN()
#define MTOH_SITE(what) (::mtoh::Site{mtoh_file, mtoh_line, mtoh_col, what})

// The kernel cost report (scripts/report-kernels.mjs) compiles kernels with inlining raised, as a
// GPU compiler inlines everything; there a barrier or SIMD-group function stays one call (a few
// instructions on a GPU), not the harness's rendezvous and lane exchange inlined into the loop.
#if defined(MTOH_COST_PROXY)
#define MTOH_SIMD_FN __attribute__((noinline)) inline
#else
#define MTOH_SIMD_FN inline
#endif

namespace metal {

enum class mem_flags : unsigned {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
};
constexpr mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(unsigned(a) | unsigned(b)); }

// Memory order is not modelled: fibers of one threadgroup share memory sequentially consistently,
// and only switch at rendezvous points.
MTOH_SIMD_FN void threadgroup_barrier(mem_flags, MTOH_SITE_PARAMS) {
  mtoh::threadgroup_barrier(MTOH_SITE("threadgroup_barrier"));
}
MTOH_SIMD_FN void simdgroup_barrier(mem_flags, MTOH_SITE_PARAMS) {
  mtoh::simdgroup_barrier(MTOH_SITE("simdgroup_barrier"));
}

}  // namespace metal

namespace mtoh {

// What one lane posts: its value and the operation's lane argument (delta, mask or source lane).
template <class T>
struct Posted {
  T value;
  uint32_t arg;
};

template <class T>
inline const SimdView& post(const T& v, uint32_t arg, const Site& site) {
  static_assert(sizeof(Posted<T>) <= kMaxSimdValueBytes, "SIMD-group operand too large");
  Posted<T> p;
  std::memset(&p, 0, sizeof p);
  p.value = v;
  p.arg = arg;
  return simd_exchange(&p, sizeof p, site);
}
template <class T>
inline T lane_value(const SimdView& s, uint32_t lane) {
  Posted<T> p;
  std::memcpy(&p, s.value[lane], sizeof p);
  return p.value;
}
template <class T>
inline uint32_t lane_arg(const SimdView& s, uint32_t lane) {
  Posted<T> p;
  std::memcpy(&p, s.value[lane], sizeof p);
  return p.arg;
}
inline bool active(const SimdView& s, uint32_t lane) { return lane < 32 && ((s.active_mask >> lane) & 1u); }

template <class T>
inline void require_uniform_arg(const SimdView& s, const Site& site) {
  uint32_t first_lane = 32;
  for (uint32_t l = 0; l < 32; ++l) {
    if (!active(s, l)) continue;
    if (first_lane == 32) first_lane = l;
    const uint32_t a = lane_arg<T>(s, l), first = lane_arg<T>(s, first_lane);
    if (a != first) {
      char msg[256];
      std::snprintf(msg, sizeof msg,
                    "%s at %s:%d: the lane argument must be the same in every lane; lane %u passed "
                    "%u, lane %u passed %u",
                    site.what, site.file, site.line, l, a, first_lane, first);
      kernel_error("simd_nonuniform_argument", msg);
    }
  }
}

template <class T>
inline T read_lane(const SimdView& s, uint32_t src, const Site& site) {
  if (!active(s, src)) {
    char msg[256];
    std::snprintf(msg, sizeof msg, "%s at %s:%d: lane %u reads lane %u, which is inactive",
                  site.what, site.file, site.line, current_ids().thread_index_in_simdgroup, src);
    kernel_error("simd_inactive_lane", msg);
  }
  return lane_value<T>(s, src);
}

template <class T, class F>
inline T reduce_lanes(const SimdView& s, uint32_t below, F f) {
  T acc{};
  bool first = true;
  for (uint32_t l = 0; l < below; ++l) {
    if (!active(s, l)) continue;
    const T v = lane_value<T>(s, l);
    acc = first ? v : f(acc, v);
    first = false;
  }
  return acc;
}

}  // namespace mtoh

namespace metal {

template <class T>
MTOH_SIMD_FN T simd_sum(T v, MTOH_SITE_PARAMS) {
  const auto& s = mtoh::post(v, 0, MTOH_SITE("simd_sum"));
  return mtoh::reduce_lanes<T>(s, 32, [](T a, T b) { return T(a + b); });
}
template <class T>
MTOH_SIMD_FN T simd_product(T v, MTOH_SITE_PARAMS) {
  const auto& s = mtoh::post(v, 0, MTOH_SITE("simd_product"));
  return mtoh::reduce_lanes<T>(s, 32, [](T a, T b) { return T(a * b); });
}
template <class T>
MTOH_SIMD_FN T simd_max(T v, MTOH_SITE_PARAMS) {
  const auto& s = mtoh::post(v, 0, MTOH_SITE("simd_max"));
  return mtoh::reduce_lanes<T>(s, 32, [](T a, T b) { return metal::max(a, b); });
}
template <class T>
MTOH_SIMD_FN T simd_min(T v, MTOH_SITE_PARAMS) {
  const auto& s = mtoh::post(v, 0, MTOH_SITE("simd_min"));
  return mtoh::reduce_lanes<T>(s, 32, [](T a, T b) { return metal::min(a, b); });
}
template <class T>
MTOH_SIMD_FN T simd_or(T v, MTOH_SITE_PARAMS) {
  const auto& s = mtoh::post(v, 0, MTOH_SITE("simd_or"));
  return mtoh::reduce_lanes<T>(s, 32, [](T a, T b) { return T(a | b); });
}
template <class T>
MTOH_SIMD_FN T simd_and(T v, MTOH_SITE_PARAMS) {
  const auto& s = mtoh::post(v, 0, MTOH_SITE("simd_and"));
  return mtoh::reduce_lanes<T>(s, 32, [](T a, T b) { return T(a & b); });
}
// Sum over the active lanes below the caller (0 in the first active lane).
template <class T>
MTOH_SIMD_FN T simd_prefix_exclusive_sum(T v, MTOH_SITE_PARAMS) {
  const auto& s = mtoh::post(v, 0, MTOH_SITE("simd_prefix_exclusive_sum"));
  const uint32_t me = mtoh::current_ids().thread_index_in_simdgroup;
  T acc = T(0);
  for (uint32_t l = 0; l < me; ++l)
    if (mtoh::active(s, l)) acc = T(acc + mtoh::lane_value<T>(s, l));
  return acc;
}
template <class T>
MTOH_SIMD_FN T simd_prefix_inclusive_sum(T v, MTOH_SITE_PARAMS) {
  return T(simd_prefix_exclusive_sum(v, mtoh_file, mtoh_line, mtoh_col) + v);
}

MTOH_SIMD_FN bool simd_all(bool b, MTOH_SITE_PARAMS) {
  const auto& s = mtoh::post(b, 0, MTOH_SITE("simd_all"));
  bool r = true;
  for (uint32_t l = 0; l < 32; ++l) r = r && (!mtoh::active(s, l) || mtoh::lane_value<bool>(s, l));
  return r;
}
MTOH_SIMD_FN bool simd_any(bool b, MTOH_SITE_PARAMS) {
  const auto& s = mtoh::post(b, 0, MTOH_SITE("simd_any"));
  bool r = false;
  for (uint32_t l = 0; l < 32; ++l) r = r || (mtoh::active(s, l) && mtoh::lane_value<bool>(s, l));
  return r;
}
MTOH_SIMD_FN bool simd_is_first(MTOH_SITE_PARAMS) {
  const auto& s = mtoh::post(0, 0, MTOH_SITE("simd_is_first"));
  return mtoh::current_ids().thread_index_in_simdgroup == uint32_t(__builtin_ctz(s.active_mask));
}

// The value of lane `lane` (any lane per caller).
template <class T>
MTOH_SIMD_FN T simd_shuffle(T v, ushort lane, MTOH_SITE_PARAMS) {
  const mtoh::Site site = MTOH_SITE("simd_shuffle");
  const auto& s = mtoh::post(v, lane, site);
  return mtoh::read_lane<T>(s, lane, site);
}
template <class T>
MTOH_SIMD_FN T simd_shuffle_xor(T v, ushort mask, MTOH_SITE_PARAMS) {
  const mtoh::Site site = MTOH_SITE("simd_shuffle_xor");
  const auto& s = mtoh::post(v, mask, site);
  mtoh::require_uniform_arg<T>(s, site);
  return mtoh::read_lane<T>(s, (mtoh::current_ids().thread_index_in_simdgroup ^ mask) & 31u, site);
}
// Lane l gets lane l + delta; the upper `delta` lanes keep their own value (no wrap-around).
template <class T>
MTOH_SIMD_FN T simd_shuffle_down(T v, ushort delta, MTOH_SITE_PARAMS) {
  const mtoh::Site site = MTOH_SITE("simd_shuffle_down");
  const auto& s = mtoh::post(v, delta, site);
  mtoh::require_uniform_arg<T>(s, site);
  const uint32_t src = mtoh::current_ids().thread_index_in_simdgroup + delta;
  return src >= 32 ? v : mtoh::read_lane<T>(s, src, site);
}
// Lane l gets lane l - delta; the lower `delta` lanes keep their own value.
template <class T>
MTOH_SIMD_FN T simd_shuffle_up(T v, ushort delta, MTOH_SITE_PARAMS) {
  const mtoh::Site site = MTOH_SITE("simd_shuffle_up");
  const auto& s = mtoh::post(v, delta, site);
  mtoh::require_uniform_arg<T>(s, site);
  const uint32_t me = mtoh::current_ids().thread_index_in_simdgroup;
  return me < delta ? v : mtoh::read_lane<T>(s, me - delta, site);
}
template <class T>
MTOH_SIMD_FN T simd_broadcast(T v, ushort lane, MTOH_SITE_PARAMS) {
  const mtoh::Site site = MTOH_SITE("simd_broadcast");
  const auto& s = mtoh::post(v, lane, site);
  mtoh::require_uniform_arg<T>(s, site);
  return mtoh::read_lane<T>(s, lane, site);
}
template <class T>
MTOH_SIMD_FN T simd_broadcast_first(T v, MTOH_SITE_PARAMS) {
  const mtoh::Site site = MTOH_SITE("simd_broadcast_first");
  const auto& s = mtoh::post(v, 0, site);
  return mtoh::read_lane<T>(s, uint32_t(__builtin_ctz(s.active_mask)), site);
}

}  // namespace metal
