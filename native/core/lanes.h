// W lanes of uint32 (and their float32 view) for code written once for one value and for compiler
// vectors: the element encoders (element_encode.h) and the quantizers
// (kernels/portable/quantize_rows.cc), which run them 16, 8 or 4 lanes at a time (AVX-512, AVX2,
// SSE2 / NEON) and one at a time where the compiler has no vector types (MSVC; see portable.h):
// LaneTypes<1> is plain uint32_t / float.
//
// Every helper is force-inlined, so no vector ever crosses a call: GCC's -Wpsabi note that a
// 32/64-byte vector argument's calling convention depends on the ISA does not apply (silenced).
#pragma once
#include <cstdint>
#include <cstring>
#include <utility>

#include "dtype.h"  // float_bits, bits_float
#include "portable.h"

// Vector lanes need GCC/clang vector types and __builtin_convertvector (GCC 9 and later, clang).
#if MTO_GNU_EXTENSIONS && (defined(__clang__) || __GNUC__ >= 9)
#define MTO_LANES 1
#else
#define MTO_LANES 0
#endif
// __builtin_shufflevector: clang, GCC 12 and later; older GCC has __builtin_shuffle.
#if MTO_LANES && defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define MTO_LANES_SHUFFLEVECTOR 1
#endif
#endif

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace mto::lanes {

// The lanes a kernel written for `w` lanes gets: w, or 1 without vector lanes.
constexpr int width(int w) { return MTO_LANES ? w : 1; }

template <int W> struct LaneTypes;
template <> struct LaneTypes<1> {
  using U = uint32_t;
  using I = int32_t;
  using F = float;
};
#if MTO_LANES
template <int W> struct LaneTypes {
  typedef uint32_t U __attribute__((vector_size(4 * W)));
  typedef int32_t I __attribute__((vector_size(4 * W)));
  typedef float F __attribute__((vector_size(4 * W)));
};
template <int N> struct ByteLanes { typedef uint8_t type __attribute__((vector_size(N))); };
template <int N> struct U64Lanes { typedef uint64_t type __attribute__((vector_size(8 * N))); };
#endif
template <int W> using U32 = typename LaneTypes<W>::U;
template <int W> using F32 = typename LaneTypes<W>::F;

template <int W> MTO_FORCE_INLINE U32<W> splat(uint32_t v) {
  if constexpr (W == 1) return v;
  else return U32<W>{} + v;
}
template <int W> MTO_FORCE_INLINE F32<W> splat_f(float v) {
  if constexpr (W == 1) return v;
  else return F32<W>{} + v;
}

template <int W> MTO_FORCE_INLINE F32<W> as_f(const U32<W>& u) {
  if constexpr (W == 1) return bits_float(u);
  else return (F32<W>)u;
}
template <int W> MTO_FORCE_INLINE U32<W> as_u(const F32<W>& f) {
  if constexpr (W == 1) return float_bits(f);
  else return (U32<W>)f;
}

// Float lanes holding integers in 0 .. 2^31 as uint32 lanes.
template <int W> MTO_FORCE_INLINE U32<W> to_u32(const F32<W>& f) {
  if constexpr (W == 1) return uint32_t(int32_t(f));
  else return (U32<W>)__builtin_convertvector(f, typename LaneTypes<W>::I);
}

template <int W> MTO_FORCE_INLINE U32<W> load_u(const float* p) {
  U32<W> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <int W> MTO_FORCE_INLINE F32<W> load_f(const float* p) {
  F32<W> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// a > b ? x : y per lane, comparing int32 values (SSE2 and AVX2 compare signed integers only);
// the larger and smaller of int32 lanes; the smaller and larger of NaN-free float lanes (as
// std::min: b < a ? b : a). Comparisons inside ?: let the compiler pick max, min and blends.
template <int W>
MTO_FORCE_INLINE U32<W> if_gt_i32(const U32<W>& a, const U32<W>& b, const U32<W>& x,
                                  const U32<W>& y) {
  using I = typename LaneTypes<W>::I;
  return (I)a > (I)b ? x : y;
}
template <int W> MTO_FORCE_INLINE U32<W> max_i32(const U32<W>& a, const U32<W>& b) {
  using I = typename LaneTypes<W>::I;
  const I x = (I)a, y = (I)b;
  return (U32<W>)(x > y ? x : y);
}
template <int W> MTO_FORCE_INLINE U32<W> min_i32(const U32<W>& a, const U32<W>& b) {
  using I = typename LaneTypes<W>::I;
  const I x = (I)a, y = (I)b;
  return (U32<W>)(y < x ? y : x);
}
template <int W> MTO_FORCE_INLINE F32<W> min_f(const F32<W>& a, const F32<W>& b) {
  return b < a ? b : a;
}
template <int W> MTO_FORCE_INLINE F32<W> max_f(const F32<W>& a, const F32<W>& b) {
  return a < b ? b : a;
}

// The lanes' halves (W > 1).
template <int W> MTO_FORCE_INLINE void halves(const U32<W>& v, U32<W / 2>& lo, U32<W / 2>& hi) {
  std::memcpy(&lo, &v, sizeof lo);
  std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof lo, sizeof hi);
}

// The largest of the lanes as int32 values.
template <int W> MTO_FORCE_INLINE uint32_t hmax_i32(const U32<W>& v) {
  if constexpr (W == 1) {
    return v;
  } else {
    U32<W / 2> lo, hi;
    halves<W>(v, lo, hi);
    return hmax_i32<W / 2>(max_i32<W / 2>(lo, hi));
  }
}
// The byte-wise largest of the lanes: byte i of the result is the largest byte i of any lane.
template <int W> MTO_FORCE_INLINE uint32_t hmax_u8(const U32<W>& v);

// The smallest (kMax false) or largest of float lanes without NaN.
template <int W, bool kMax> MTO_FORCE_INLINE float hminmax_f(const F32<W>& v) {
  if constexpr (W == 1) {
    return v;
  } else {
    U32<W / 2> lo, hi;
    halves<W>(as_u<W>(v), lo, hi);
    const F32<W / 2> a = as_f<W / 2>(lo), b = as_f<W / 2>(hi);
    return hminmax_f<W / 2, kMax>(kMax ? max_f<W / 2>(a, b) : min_f<W / 2>(a, b));
  }
}

#if MTO_LANES
// Narrowing lanes to bytes: GCC 12 turns narrowing conversions into AVX-512's vpmov* and SSE2's
// packs, but into an extract per lane for AVX2 and NEON; there a byte shuffle with constant
// indices does it (vpshufb and a permute; tbl). SSE2 has no byte shuffle.
#if defined(__x86_64__) || defined(__i386__)
constexpr bool kNarrowByShuffle(int W) { return W == 8; }
#else
constexpr bool kNarrowByShuffle(int W) { return W < 16; }
#endif

// Bytes Pick::at(0), Pick::at(1), ... of v's bytes (lane i: bytes 4i .. 4i + 3, low first), as
// many as v has.
template <class Pick, int W, std::size_t... I>
MTO_FORCE_INLINE typename ByteLanes<4 * W>::type pick_bytes(const U32<W>& v,
                                                            std::index_sequence<I...>) {
  using B = typename ByteLanes<4 * W>::type;
  const B b = (B)v;
#ifdef MTO_LANES_SHUFFLEVECTOR
  return __builtin_shufflevector(b, b, Pick::at(I)...);
#else
  return __builtin_shuffle(b, B{Pick::at(I)...});  // GCC before 12
#endif
}
// Lanes Pick::at(0), ... of a and b (lanes 0 .. W - 1 of a, then W .. 2W - 1 of b).
template <class Pick, int W, std::size_t... I>
MTO_FORCE_INLINE U32<W> pick_lanes(const U32<W>& a, const U32<W>& b, std::index_sequence<I...>) {
#ifdef MTO_LANES_SHUFFLEVECTOR
  return __builtin_shufflevector(a, b, Pick::at(I)...);
#else
  return __builtin_shuffle(a, b, typename LaneTypes<W>::U{Pick::at(I)...});
#endif
}
template <int kStride, int kFirst> struct EveryNthLane {
  static constexpr int at(std::size_t i) { return int(i) * kStride + kFirst; }
};
template <int kStride, int kBytes> struct EveryNthByte {  // the rest: byte 0 again
  static constexpr int at(std::size_t i) {
    return int(i) * kStride < kBytes ? int(i) * kStride : 0;
  }
};

// Stores the low byte of each lane: W bytes at dst.
template <int W> MTO_FORCE_INLINE void store_bytes(const U32<W>& v, uint8_t* dst) {
  if constexpr (W == 1) {
    *dst = uint8_t(v);
  } else if constexpr (kNarrowByShuffle(W)) {
    const auto b = pick_bytes<EveryNthByte<4, 4 * W>, W>(v, std::make_index_sequence<4 * W>());
    std::memcpy(dst, &b, W);
  } else {
    const auto b = __builtin_convertvector(v, typename ByteLanes<W>::type);
    std::memcpy(dst, &b, sizeof b);
  }
}
// Stores 2W lanes (a's, then b's) holding 4-bit values two to a byte, lane 2j in the low
// nibble: W bytes (W > 1).
template <int W>
MTO_FORCE_INLINE void store_nibbles(const U32<W>& a, const U32<W>& b, uint8_t* dst) {
  if constexpr (W >= 16) {  // lane pairs as 64-bit lanes, narrowed by vpmovqb
    using U64 = typename U64Lanes<W / 2>::type;
    U64 pa = (U64)a, pb = (U64)b;  // lane 2j in bits 0-3, lane 2j + 1 in bits 32-35
    pa |= pa >> 28;
    pb |= pb >> 28;
    const auto ba = __builtin_convertvector(pa, typename ByteLanes<W / 2>::type);
    const auto bb = __builtin_convertvector(pb, typename ByteLanes<W / 2>::type);
    std::memcpy(dst, &ba, sizeof ba);
    std::memcpy(dst + W / 2, &bb, sizeof bb);
  } else {  // even and odd lanes (uzp on NEON, shufps on SSE2), then one byte per lane
    const U32<W> even = pick_lanes<EveryNthLane<2, 0>, W>(a, b, std::make_index_sequence<W>());
    const U32<W> odd = pick_lanes<EveryNthLane<2, 1>, W>(a, b, std::make_index_sequence<W>());
    store_bytes<W>(even | (odd << 4), dst);
  }
}

// Byte-wise max of the lanes (see the declaration above).
template <int W> MTO_FORCE_INLINE U32<W> max_u8(const U32<W>& a, const U32<W>& b) {
  using B = typename ByteLanes<4 * W>::type;
  const B x = (B)a, y = (B)b;
  return (U32<W>)(x > y ? x : y);
}
template <int W> MTO_FORCE_INLINE uint32_t hmax_u8(const U32<W>& v) {
  if constexpr (W == 1) {
    return v;
  } else if constexpr (W == 2) {
    const U32<2> swapped = pick_lanes<EveryNthLane<-1, 1>, 2>(v, v, std::make_index_sequence<2>());
    return max_u8<2>(v, swapped)[0];
  } else {
    U32<W / 2> lo, hi;
    halves<W>(v, lo, hi);
    return hmax_u8<W / 2>(max_u8<W / 2>(lo, hi));
  }
}

#else   // one lane at a time
template <int W> MTO_FORCE_INLINE void store_bytes(const U32<W>& v, uint8_t* dst) {
  *dst = uint8_t(v);
}
template <int W> void store_nibbles(const U32<W>& a, const U32<W>& b, uint8_t* dst);  // vectors
template <int W> MTO_FORCE_INLINE uint32_t hmax_u8(const U32<W>& v) { return v; }
#endif

}  // namespace mto::lanes

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
