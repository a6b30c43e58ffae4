// Compile-time properties of each quantized format and the dequantization of a run of weights,
// for kernels specialised on a format id (MTO_FORMAT_*). Decoding itself is mx_formats.h's, so
// kernels and the cpu backend read the same bits the same way. The format accessors compile as C++
// too (the harness driver checks them against native/core/formats.cc); the rest is MSL only, in
// the C++14 subset MSL 3 accepts (no `if constexpr`: constant conditions fold away).
#ifndef MTO_SHADERS_MX_DEQUANT_H
#define MTO_SHADERS_MX_DEQUANT_H

#include "mx_formats.h"

// A format's row of mx_formats.h's table, by name.
constexpr int mto_format_bits(int f) { return mto_format_table(f).bits; }
constexpr bool mto_format_is_affine(int f) { return mto_format_table(f).affine; }
constexpr int mto_format_element(int f) { return mto_format_table(f).element; }
constexpr int mto_format_emax(int f) { return mto_element_table(mto_format_element(f)).emax; }

#if defined(__METAL_VERSION__)
// Code of element i of a packed row (docs/design/API.md "Packing").
template <int FMT, typename P>
inline uint mto_packed_code(P row, uint i) {
  const int bits = mto_format_bits(FMT);
  if (bits == 8) return uint(row[i]);
  if (bits == 6) return mto_code6(row, i);
  if (bits == 4) return mto_code4(row, i);
  return mto_code2(row, i);
}

// The element type of a format's scale plane: E8M0 bytes (MX) or float16 (affine).
template <int FMT>
struct mto_scale_storage {
  typedef uchar type;
};
template <>
struct mto_scale_storage<MTO_FORMAT_AFFINE4> {
  typedef half type;
};
template <>
struct mto_scale_storage<MTO_FORMAT_AFFINE8> {
  typedef half type;
};

// Writes w[n, k .. k+COUNT) as float into out[0 .. COUNT). COUNT divides 32 and k is a multiple of
// COUNT, so the run lies inside one MX block / affine group.
//   MX:     element * 2^(scale - 127); a NaN scale byte (0xFF) makes every value NaN, since
//           element * NaN is NaN, as in the cpu backend.
//   affine: s * q + b with the group's float16 s and b, as the cpu backend computes it.
//   codes : N rows of K * bits / 8 bytes; scales: [N, K/32] (MX) or [N, K/group] (affine);
//   biases: [N, K/group] (affine only; never read for MX).
template <int FMT, int COUNT, typename OUT>
inline void mto_dequantize_run(device const uchar* codes,
                               device const typename mto_scale_storage<FMT>::type* scales,
                               device const half* biases, uint n, uint k, uint K, uint group,
                               OUT out) {
  const int bits = mto_format_bits(FMT);
  const device uchar* row = codes + ulong(n) * (ulong(K) * ulong(bits) / 8ul);
  if (mto_format_is_affine(FMT)) {
    const ulong g = ulong(n) * ulong(K / group) + ulong(k / group);
    const float s = float(scales[g]);
    const float b = float(biases[g]);
    for (int i = 0; i < COUNT; ++i) out[i] = s * float(mto_packed_code<FMT>(row, k + uint(i))) + b;
  } else {
    const float s = mto_decode_e8m0(uint(scales[ulong(n) * ulong(K / 32u) + ulong(k / 32u)]));
    for (int i = 0; i < COUNT; ++i)
      out[i] = mto_decode_element(mto_format_element(FMT), mto_packed_code<FMT>(row, k + uint(i))) * s;
  }
}
#endif  // __METAL_VERSION__

#endif  // MTO_SHADERS_MX_DEQUANT_H
