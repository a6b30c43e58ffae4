// The x86-64 kernels behind decode.h (AVX2 + F16C, AVX-512 F + BW, AVX-512 + VBMI), compiled
// with target attributes and chosen at run time (decode.cc), so one binary built for baseline
// x86-64 runs everywhere. Exactness: decode_shared.h.
#include "../decode_shared.h"

#if defined(MTO_CORE_X86)
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's avx512fintrin.h trips a false -Wmaybe-uninitialized (GCC PR 105593, fixed in 12.3).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "../../../shaders/mx_formats.h"
#include "../dot.h"  // e4m3_bf16_bytes
#endif

namespace mto::kernels {

#if defined(MTO_CORE_X86)
namespace {

using namespace decode_detail;

#define MTO_T_AVX2 __attribute__((target("avx2,f16c")))
#define MTO_T_AVX512 __attribute__((target("avx512f,avx512bw,avx2,f16c")))

// Affine scales and biases are widened with F16C's scalar _cvtsh_ss: exact, and a signaling NaN it
// quiets would be quieted by the multiply or add anyway.

// ---- AVX2 (+F16C) ------------------------------------------------------------------------------

MTO_T_AVX2 void h2f_avx2(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
      h2f_scalar(src + i, dst + i, 8);
      continue;
    }
    _mm256_storeu_ps(dst + i, v);
  }
  h2f_scalar(src + i, dst + i, n - i);
}

MTO_T_AVX2 void f2h_avx2(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(src + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)) != 0) {
      f2h_scalar(src + i, dst + i, 8);
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  f2h_scalar(src + i, dst + i, n - i);
}

MTO_T_AVX2 inline __m128i load8_avx2(const uint8_t* p) {
  return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
}

// 32 nibble codes (16 bytes at c) through a 16-entry table held as two 8-float halves.
MTO_T_AVX2 inline void nibbles32_avx2(const uint8_t* c, __m256 t_lo, __m256 t_hi, float* out) {
  const __m256i dup0 = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  const __m256i dup1 = _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7);
  const __m256i sh = _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4);
  for (int h = 0; h < 2; ++h) {
    const __m256i b = _mm256_cvtepu8_epi32(load8_avx2(c + 8 * h));
    for (int q = 0; q < 2; ++q) {
      // Lane k: byte k/2 shifted to put nibble k&1 lowest; permutevar uses bits 0-2, the blend
      // bit 3 (moved to the sign), so the byte's high bits need no mask.
      const __m256i idx = _mm256_srlv_epi32(_mm256_permutevar8x32_epi32(b, q ? dup1 : dup0), sh);
      const __m256 lo = _mm256_permutevar8x32_ps(t_lo, idx);
      const __m256 hi = _mm256_permutevar8x32_ps(t_hi, idx);
      _mm256_storeu_ps(out + 16 * h + 8 * q,
                       _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28))));
    }
  }
}

// FP8 E4M3 codes (8 words) times vs: as float16 bits sign | magnitude << 7, the value / 2^8;
// the NaN magnitude 0x7F becomes 1.875, not an E4M3 value, and is replaced by the signed NaN.
MTO_T_AVX2 inline __m256 e4m3_avx2(__m128i x, __m256 vs) {
  // x sign-extended to 16 bits: shifted by 7, bit 15 (and 14) is the sign, 13-7 the magnitude.
  const __m128i h = _mm_and_si128(_mm_slli_epi16(x, 7), _mm_set1_epi16(-0x4080));
  const __m256 f = _mm256_cvtph_ps(h);
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(int(0x80000000u)));
  const __m256 is_nan =
      _mm256_cmp_ps(_mm256_andnot_ps(sign, f), _mm256_set1_ps(1.875f), _CMP_EQ_OQ);
  const __m256 v = _mm256_mul_ps(_mm256_mul_ps(f, _mm256_set1_ps(256.0f)), vs);
  const __m256 nan = _mm256_or_ps(_mm256_and_ps(f, sign),
                                  _mm256_castsi256_ps(_mm256_set1_epi32(int(kNaNBits))));
  return _mm256_blendv_ps(v, nan, is_nan);
}

MTO_T_AVX2 void deq_mx_avx2(DeqMode mode, const float* lut, const uint8_t* codes,
                            const uint8_t* scales, int64_t nblocks, float* out) {
  const int bytes_per_block = block_bytes(mode);
  for (int64_t blk = 0; blk < nblocks; ++blk, codes += bytes_per_block, out += kMxBlock) {
    const uint32_t sb = scales[blk];
    if (sb == uint32_t(MTO_E8M0_NAN)) {
      const __m256 nan = _mm256_castsi256_ps(_mm256_set1_epi32(int(kNaNBits)));
      for (int j = 0; j < kMxBlock; j += 8) _mm256_storeu_ps(out + j, nan);
      continue;
    }
    const float s = mto_decode_e8m0(sb);
    switch (mode) {
      case DeqMode::Int8: {
        const __m256 vs = _mm256_set1_ps(s * 0.015625f);
        for (int j = 0; j < kMxBlock; j += 8) {
          const __m256 x = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(load8_avx2(codes + j)));
          _mm256_storeu_ps(out + j, _mm256_mul_ps(x, vs));
        }
        break;
      }
      case DeqMode::E4M3:
      case DeqMode::E5M2: {
        const __m256 vs = _mm256_set1_ps(s);
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes));
        const bool e4m3 = mode == DeqMode::E4M3;
        // E4M3 NaN codes (magnitude 0x7F) need the checked decoder; and the value / 2^8 that
        // float16 gives is rescaled by s * 2^8 in one exact multiply where that is finite.
        const bool plain = !e4m3 || (s < 0x1p119f && _mm256_movemask_epi8(_mm256_cmpeq_epi8(
                               _mm256_or_si256(raw, _mm256_set1_epi8(-128)), _mm256_set1_epi8(-1))) == 0);
        if (e4m3 && !plain) {
          for (int j = 0; j < kMxBlock; j += 8)
            _mm256_storeu_ps(out + j, e4m3_avx2(_mm_cvtepi8_epi16(load8_avx2(codes + j)), vs));
          break;
        }
        const __m256 vs_h = e4m3 ? _mm256_set1_ps(s * 256.0f) : vs;
        for (int j = 0; j < kMxBlock; j += 16) {
          // 16 codes sign-extended to 16 bits, then float16 bits: E5M2 the code << 8, E4M3
          // sign | magnitude << 7 (bits 15 and 14 hold the sign after the shift by 7).
          const __m256i x = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + j)));
          const __m256i h = e4m3 ? _mm256_and_si256(_mm256_slli_epi16(x, 7), _mm256_set1_epi16(-0x4080))
                                 : _mm256_slli_epi16(x, 8);
          _mm256_storeu_ps(out + j, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), vs_h));
          _mm256_storeu_ps(out + j + 8, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), vs_h));
        }
        break;
      }
      case DeqMode::E3M2:
      case DeqMode::E2M3: {
        const __m256 vs = _mm256_set1_ps(s);
        // float16 bits: sign to bit 15, magnitude bits placed so the exponent fields line up;
        // then times 2^(15 - bias) (exact) makes the value.
        const bool e3m2 = mode == DeqMode::E3M2;
        const __m256 rebias = _mm256_set1_ps(e3m2 ? 4096.0f : 16384.0f);
        // Lane half L (0/1) takes group L of the 6 bytes: dword d = its 24 bits >> 6d.
        const __m256i shuf = _mm256_setr_epi8(0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2, -1,
                                              3, 4, 5, -1, 3, 4, 5, -1, 3, 4, 5, -1, 3, 4, 5, -1);
        const __m256i sh = _mm256_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18);
        const __m256i m63 = _mm256_set1_epi32(63);
        for (int j = 0; j < kMxBlock; j += 8) {
          const int o = j / 4 * 3;  // 0, 6, 12, 18: stay inside the block's 24 bytes
          const __m128i x = o + 8 <= 24 ? load8_avx2(codes + o)
                                        : _mm_srli_si128(load8_avx2(codes + 16), 2);
          const __m256i w = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(x), shuf);
          const __m256i c = _mm256_and_si256(_mm256_srlv_epi32(w, sh), m63);
          // 8 dwords -> 8 words in order (pack works per 128-bit half).
          const __m128i c16 = _mm256_castsi256_si128(
              _mm256_permute4x64_epi64(_mm256_packus_epi32(c, c), 0x08));
          const __m128i sign = _mm_slli_epi16(_mm_and_si128(c16, _mm_set1_epi16(32)), 10);
          const __m128i mag = _mm_slli_epi16(_mm_and_si128(c16, _mm_set1_epi16(31)), e3m2 ? 8 : 7);
          const __m256 f = _mm256_mul_ps(_mm256_cvtph_ps(_mm_or_si128(sign, mag)), rebias);
          _mm256_storeu_ps(out + j, _mm256_mul_ps(f, vs));
        }
        break;
      }
      case DeqMode::Lut4: {
        const __m256 vs = _mm256_set1_ps(s);
        nibbles32_avx2(codes, _mm256_mul_ps(_mm256_loadu_ps(lut), vs),
                       _mm256_mul_ps(_mm256_loadu_ps(lut + 8), vs), out);
        break;
      }
      case DeqMode::Lut2: {
        // The 4 values twice: permutevar's index bit 2 then does not matter.
        const __m256 t = _mm256_mul_ps(_mm256_broadcast_ps(reinterpret_cast<const __m128*>(lut)),
                                       _mm256_set1_ps(s));
        const __m256i b = _mm256_cvtepu8_epi32(load8_avx2(codes));
        const __m256i sh = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        for (int q = 0; q < 4; ++q) {
          const __m256i dup = _mm256_setr_epi32(2 * q, 2 * q, 2 * q, 2 * q, 2 * q + 1, 2 * q + 1,
                                                2 * q + 1, 2 * q + 1);
          const __m256i idx = _mm256_srlv_epi32(_mm256_permutevar8x32_epi32(b, dup), sh);
          _mm256_storeu_ps(out + 8 * q, _mm256_permutevar8x32_ps(t, idx));
        }
        break;
      }
    }
  }
}

MTO_T_AVX2 void deq_affine_avx2(int bits, int group, const uint8_t* codes,
                                const uint16_t* scales, const uint16_t* biases, int64_t ngroups,
                                float* out) {
  const __m256 iota_lo = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 iota_hi = _mm256_setr_ps(8, 9, 10, 11, 12, 13, 14, 15);
  for (int64_t g = 0; g < ngroups; ++g, out += group) {
    const __m256 vs = _mm256_set1_ps(_cvtsh_ss(scales[g]));
    const __m256 vb = _mm256_set1_ps(_cvtsh_ss(biases[g]));
    if (bits == 4) {
      __m256 lo = _mm256_mul_ps(iota_lo, vs), hi = _mm256_mul_ps(iota_hi, vs);
      MTO_NO_CONTRACT(lo);
      MTO_NO_CONTRACT(hi);
      const __m256 plo = lo, phi = hi;
      lo = _mm256_add_ps(lo, vb);
      hi = _mm256_add_ps(hi, vb);
      if (nan_group(scales[g], biases[g])) {
        lo = _mm256_blendv_ps(lo, plo, _mm256_cmp_ps(plo, plo, _CMP_UNORD_Q));
        hi = _mm256_blendv_ps(hi, phi, _mm256_cmp_ps(phi, phi, _CMP_UNORD_Q));
      }
      for (int j = 0; j < group; j += 32, codes += 16) nibbles32_avx2(codes, lo, hi, out + j);
    } else {
      const bool nan_in = nan_group(scales[g], biases[g]);
      for (int j = 0; j < group; j += 8, codes += 8) {
        __m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(load8_avx2(codes))), vs);
        MTO_NO_CONTRACT(p);
        __m256 r = _mm256_add_ps(p, vb);
        if (nan_in) r = _mm256_blendv_ps(r, p, _mm256_cmp_ps(p, p, _CMP_UNORD_Q));
        _mm256_storeu_ps(out + j, r);
      }
    }
  }
}

// ---- AVX-512 (F + BW) --------------------------------------------------------------------------

MTO_T_AVX512 void h2f_avx512(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0) {
      h2f_scalar(src + i, dst + i, 16);
      continue;
    }
    _mm512_storeu_ps(dst + i, v);
  }
  h2f_scalar(src + i, dst + i, n - i);
}

MTO_T_AVX512 void f2h_avx512(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(src + i);
    if (_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q) != 0) {
      f2h_scalar(src + i, dst + i, 16);
      continue;
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  f2h_scalar(src + i, dst + i, n - i);
}

MTO_T_AVX512 inline __m128i load16_avx512(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// 32 nibble codes (16 bytes at c) through a 16-entry table t.
MTO_T_AVX512 inline void nan_block_avx512(float* out) {
  const __m512 nan = _mm512_castsi512_ps(_mm512_set1_epi32(int(kNaNBits)));
  _mm512_storeu_ps(out, nan);
  _mm512_storeu_ps(out + 16, nan);
}

MTO_T_AVX512 inline void nibbles32_avx512(const uint8_t* c, __m512 t, float* out) {
  const __m512i dup0 = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m512i dup1 =
      _mm512_setr_epi32(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
  const __m512i sh = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4);
  const __m512i b = _mm512_cvtepu8_epi32(load16_avx512(c));
  // permutexvar uses index bits 0-3 only: the byte's high nibble needs no mask.
  const __m512i i0 = _mm512_srlv_epi32(_mm512_permutexvar_epi32(dup0, b), sh);
  const __m512i i1 = _mm512_srlv_epi32(_mm512_permutexvar_epi32(dup1, b), sh);
  _mm512_storeu_ps(out, _mm512_permutexvar_ps(i0, t));
  _mm512_storeu_ps(out + 16, _mm512_permutexvar_ps(i1, t));
}

MTO_T_AVX512 void deq_mx_avx512(DeqMode mode, const float* lut, const uint8_t* codes,
                                const uint8_t* scales, int64_t nblocks, float* out) {
  const int bytes_per_block = block_bytes(mode);
  __m512 t6[4];
  if (mode == DeqMode::E3M2 || mode == DeqMode::E2M3) {
    for (int q = 0; q < 4; ++q) t6[q] = _mm512_loadu_ps(lut + 16 * q);
  }
  for (int64_t blk = 0; blk < nblocks; ++blk, codes += bytes_per_block, out += kMxBlock) {
    const uint32_t sb = scales[blk];
    if (sb == uint32_t(MTO_E8M0_NAN)) {  // NaN scale: the whole block is NaN
      nan_block_avx512(out);
      continue;
    }
    const float s = mto_decode_e8m0(sb);
    switch (mode) {
      case DeqMode::Int8: {
        const __m512 vs = _mm512_set1_ps(s * 0.015625f);
        for (int j = 0; j < kMxBlock; j += 16) {
          const __m512 x = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(load16_avx512(codes + j)));
          _mm512_storeu_ps(out + j, _mm512_mul_ps(x, vs));
        }
        break;
      }
      case DeqMode::E5M2: {
        const __m512 vs = _mm512_set1_ps(s);
        for (int j = 0; j < kMxBlock; j += 16) {
          const __m256i x = _mm256_cvtepu8_epi16(load16_avx512(codes + j));
          _mm512_storeu_ps(out + j, _mm512_mul_ps(_mm512_cvtph_ps(_mm256_slli_epi16(x, 8)), vs));
        }
        break;
      }
      case DeqMode::E4M3: {
        // As float16 bits sign | magnitude << 7, the value / 2^8; the NaN magnitude 0x7F becomes
        // 1.875, not an E4M3 value, and is replaced by the signed NaN.
        const __m512 vs = _mm512_set1_ps(s);
        const __m512i sign = _mm512_set1_epi32(int(0x80000000u));
        const __m512i qnan = _mm512_set1_epi32(int(kNaNBits));
        for (int j = 0; j < kMxBlock; j += 16) {
          // Sign-extended to 16 bits and shifted by 7: bit 15 (and 14) is the sign, 13-7 the
          // magnitude; bit 14 is cleared.
          const __m256i x = _mm256_cvtepi8_epi16(load16_avx512(codes + j));
          const __m256i h = _mm256_and_si256(_mm256_slli_epi16(x, 7), _mm256_set1_epi16(-0x4080));
          const __m512 f = _mm512_cvtph_ps(h);
          const __m512 v = _mm512_mul_ps(_mm512_mul_ps(f, _mm512_set1_ps(256.0f)), vs);
          const __mmask16 is_nan =
              _mm512_cmp_ps_mask(_mm512_abs_ps(f), _mm512_set1_ps(1.875f), _CMP_EQ_OQ);
          const __m512 nan = _mm512_castsi512_ps(
              _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(f), sign), qnan));
          _mm512_storeu_ps(out + j, _mm512_mask_mov_ps(v, is_nan, nan));
        }
        break;
      }
      case DeqMode::E3M2:
      case DeqMode::E2M3: {
        const __m512 vs = _mm512_set1_ps(s);
        const __m512 t0 = _mm512_mul_ps(t6[0], vs), t1 = _mm512_mul_ps(t6[1], vs);
        const __m512 t2 = _mm512_mul_ps(t6[2], vs), t3 = _mm512_mul_ps(t6[3], vs);
        // 128-bit lane L takes group L of the 12 bytes: dword d = its 24 bits >> 6d.
        const __m512i shuf = _mm512_set4_epi32(int(0x80020100u), int(0x80020100u),
                                               int(0x80020100u), int(0x80020100u));
        const __m512i lane = _mm512_setr_epi32(0, 0, 0, 0, 0x03030303, 0x03030303, 0x03030303,
                                               0x03030303, 0x06060606, 0x06060606, 0x06060606,
                                               0x06060606, 0x09090909, 0x09090909, 0x09090909,
                                               0x09090909);
        // Byte offsets 3L + {0,1,2}; the 0x80 byte (zero) stays >= 0x80 after the add.
        const __m512i sel = _mm512_add_epi8(shuf, lane);
        const __m512i sh =
            _mm512_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18, 0, 6, 12, 18, 0, 6, 12, 18);
        const __m512i bit5 = _mm512_set1_epi32(32);
        for (int j = 0; j < kMxBlock; j += 16) {
          // Bytes 0-11 and 12-23 of the block, without reading past it.
          const __m128i x =
              j == 0 ? load16_avx512(codes) : _mm_srli_si128(load16_avx512(codes + 8), 4);
          const __m512i w = _mm512_shuffle_epi8(_mm512_broadcast_i32x4(x), sel);
          const __m512i idx = _mm512_srlv_epi32(w, sh);  // bits 0-4 pick, bit 5 the half
          const __m512 lo = _mm512_permutex2var_ps(t0, idx, t1);
          const __m512 hi = _mm512_permutex2var_ps(t2, idx, t3);
          _mm512_storeu_ps(out + j,
                           _mm512_mask_blend_ps(_mm512_test_epi32_mask(idx, bit5), lo, hi));
        }
        break;
      }
      case DeqMode::Lut4:
        nibbles32_avx512(codes, _mm512_mul_ps(_mm512_loadu_ps(lut), _mm512_set1_ps(s)), out);
        break;
      case DeqMode::Lut2: {
        // The 4 values four times: permutexvar's index bits 2-3 then do not matter.
        const __m512 t =
            _mm512_mul_ps(_mm512_broadcast_f32x4(_mm_loadu_ps(lut)), _mm512_set1_ps(s));
        const __m512i b =
            _mm512_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes)));
        const __m512i sh = _mm512_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6);
        const __m512i dup0 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
        const __m512i dup1 = _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
        const __m512i i0 = _mm512_srlv_epi32(_mm512_permutexvar_epi32(dup0, b), sh);
        const __m512i i1 = _mm512_srlv_epi32(_mm512_permutexvar_epi32(dup1, b), sh);
        _mm512_storeu_ps(out, _mm512_permutexvar_ps(i0, t));
        _mm512_storeu_ps(out + 16, _mm512_permutexvar_ps(i1, t));
        break;
      }
    }
  }
}

MTO_T_AVX512 void deq_affine_avx512(int bits, int group, const uint8_t* codes,
                                    const uint16_t* scales, const uint16_t* biases,
                                    int64_t ngroups, float* out) {
  const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int64_t g = 0; g < ngroups; ++g, out += group) {
    const __m512 vs = _mm512_set1_ps(_cvtsh_ss(scales[g]));
    const __m512 vb = _mm512_set1_ps(_cvtsh_ss(biases[g]));
    if (bits == 4) {
      __m512 t = _mm512_mul_ps(iota, vs);
      MTO_NO_CONTRACT(t);
      const __m512 p = t;
      t = _mm512_add_ps(t, vb);
      if (nan_group(scales[g], biases[g]))
        t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(p, p, _CMP_UNORD_Q), p);
      for (int j = 0; j < group; j += 32, codes += 16) nibbles32_avx512(codes, t, out + j);
    } else {
      const bool nan_in = nan_group(scales[g], biases[g]);
      for (int j = 0; j < group; j += 16, codes += 16) {
        const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(load16_avx512(codes)));
        __m512 p = _mm512_mul_ps(q, vs);
        MTO_NO_CONTRACT(p);
        __m512 r = _mm512_add_ps(p, vb);
        if (nan_in) r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(p, p, _CMP_UNORD_Q), p);
        _mm512_storeu_ps(out + j, r);
      }
    }
  }
}

// ---- AVX-512 + VBMI: E4M3 through byte tables ---------------------------------------------------
// Each E4M3 value is a bfloat16 (dot.h's e4m3_bf16_bytes): 64 codes (two blocks) are two
// 128-entry byte lookups of the magnitude (the bfloat16's low and high bytes), the sign joins the
// high byte, and two rounds of interleaving with zeros widen bytes to bfloat16 to float32. The
// interleaves work within 128-bit lanes, so one byte permute first puts code 16q + 4k + t at byte
// 16k + 4q + t, which makes every output vector come out in order. ~18 operations per 64 codes
// where the float16 route takes ~10 per 16 and a NaN fix-up. Same values and NaN bits as the
// portable table (lut[c] * s).
#define MTO_T_AVX512_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi,avx2,f16c")))

MTO_T_AVX512_VBMI void deq_mx_avx512_vbmi(DeqMode mode, const float* lut, const uint8_t* codes,
                                          const uint8_t* scales, int64_t nblocks, float* out) {
  if (mode != DeqMode::E4M3) return deq_mx_avx512(mode, lut, codes, scales, nblocks, out);
  const E4m3Bf16Bytes& tb = e4m3_bf16_bytes();
  const __m512i hi0 = _mm512_load_si512(tb.hi), hi1 = _mm512_load_si512(tb.hi + 64);
  const __m512i lo0 = _mm512_load_si512(tb.lo), lo1 = _mm512_load_si512(tb.lo + 64);
  // Byte 16k + 4q + t <- code 16q + 4k + t (k, q, t in 0..3): a 4 x 4 transpose of dwords.
  const __m512i order = _mm512_setr_epi32(
      0x03020100, 0x13121110, 0x23222120, 0x33323130, 0x07060504, 0x17161514, 0x27262524,
      0x37363534, 0x0B0A0908, 0x1B1A1918, 0x2B2A2928, 0x3B3A3938, 0x0F0E0D0C, 0x1F1E1D1C,
      0x2F2E2D2C, 0x3F3E3D3C);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i sign = _mm512_set1_epi8(int8_t(0x80));
  int64_t blk = 0;
  for (; blk + 2 <= nblocks; blk += 2, codes += 2 * kMxBlock, out += 2 * kMxBlock) {
    const uint32_t s0 = scales[blk], s1 = scales[blk + 1];
    const __m512i c = _mm512_permutexvar_epi8(order, _mm512_loadu_si512(codes));
    // vpermi2b reads index bits 0-6: the sign bit does not disturb the lookups.
    const __m512i lo = _mm512_permutex2var_epi8(lo0, c, lo1);
    const __m512i hi = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(hi0, c, hi1), c, sign,
                                                 0xF8);  // hi | (c & sign)
    const __m512i w0 = _mm512_unpacklo_epi8(lo, hi), w1 = _mm512_unpackhi_epi8(lo, hi);
    const __m512 v0 = _mm512_set1_ps(mto_decode_e8m0(s0)), v1 = _mm512_set1_ps(mto_decode_e8m0(s1));
    _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, w0)), v0));
    _mm512_storeu_ps(out + 16,
                     _mm512_mul_ps(_mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, w0)), v0));
    _mm512_storeu_ps(out + 32,
                     _mm512_mul_ps(_mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, w1)), v1));
    _mm512_storeu_ps(out + 48,
                     _mm512_mul_ps(_mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, w1)), v1));
    // A NaN scale makes its whole block NaN (rare: written over the products).
    if (s0 == uint32_t(MTO_E8M0_NAN)) nan_block_avx512(out);
    if (s1 == uint32_t(MTO_E8M0_NAN)) nan_block_avx512(out + kMxBlock);
  }
  if (blk < nblocks) deq_mx_avx512(mode, lut, codes, scales + blk, nblocks - blk, out);
}

constexpr CoreKernels kAvx2{"avx2", h2f_avx2, f2h_avx2, deq_mx_avx2, deq_affine_avx2};
constexpr CoreKernels kAvx512{"avx512", h2f_avx512, f2h_avx512, deq_mx_avx512, deq_affine_avx512};
constexpr CoreKernels kAvx512Vbmi{"avx512vbmi", h2f_avx512, f2h_avx512, deq_mx_avx512_vbmi,
                                  deq_affine_avx512};

}  // namespace

const CoreKernels* core_kernels_avx2() { return &kAvx2; }
const CoreKernels* core_kernels_avx512() { return &kAvx512; }
const CoreKernels* core_kernels_avx512_vbmi() { return &kAvx512Vbmi; }
#else
const CoreKernels* core_kernels_avx2() { return nullptr; }
const CoreKernels* core_kernels_avx512() { return nullptr; }
const CoreKernels* core_kernels_avx512_vbmi() { return nullptr; }
#endif

}  // namespace mto::kernels
