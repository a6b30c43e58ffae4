// What the int8-activation kernels (x86/dot_q8_avx2.cc, x86/dot_q8_avx512.cc,
// x86/gemm_q8_avx512.cc, arm/dot_q8_neon.cc) share: which weights they take, a 4-bit table's
// offset, and the prepared row of x the x86 decode kernels read (its rounding set by how many
// blocks a step reads and how many scales a vector holds; NEON lays its row out without rounding).
#pragma once
#include "dot.h"

#include <algorithm>
#include <cstdint>

namespace mto::kernels::q8 {

inline bool is_nibbles(DotCodes k) { return k == DotCodes::Lut4 || k == DotCodes::Uint4; }
inline bool is_affine(DotCodes k) { return k == DotCodes::Uint4 || k == DotCodes::Uint8; }
inline int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// affine4/affine8/mxint8, and 4-bit tables whose values are small integers (|v| <= max_table)
// times a power of two.
inline bool supported(const DotWeights& w, int max_table) {
  switch (w.kind) {
    case DotCodes::Uint4:
    case DotCodes::Uint8:
    case DotCodes::Int8: return true;
    case DotCodes::Lut4: {
      int8_t q[16];
      float unit;
      if (!dot_int8_table(w, q, &unit)) return false;
      for (int8_t v : q)
        if (v < -max_table || v > max_table) return false;
      return true;
    }
    default: return false;
  }
}

// A 4-bit table's offset max |v| (its values are looked up as v + offset, unsigned).
inline int table_offset(const int8_t (&q)[16]) {
  int o = 0;
  for (int8_t v : q) o = std::max(o, v < 0 ? -int(v) : int(v));
  return o;
}

// One prepared row of x, in 4-byte words: int8 codes for the blocks rounded up to kStepBlocks
// (zeros past the end), their scales d rounded up to kLanes, then for affine weights the sums of
// the quantized x over each group (d times the sum of the codes), for 4-bit tables the sum of the
// codes of each block, rounded up to kLanes.
template <int kStepBlocks, int kLanes>
struct Layout {
  int64_t blocks, code_words, d_words, sum_words;
  explicit Layout(const DotWeights& w)
      : blocks(w.K / 32),
        code_words(round_up(w.K / 32, kStepBlocks) * 8),
        d_words(round_up(w.K / 32, kLanes)),
        sum_words(is_affine(w.kind) ? round_up(w.K / w.group, kLanes) : w.kind == DotCodes::Lut4 ? d_words : 0) {}
  int64_t words() const { return code_words + d_words + sum_words; }
};

// Where the kernels read one prepared row of x.
struct Row {
  const int8_t* q;
  const float* d;
  const float* sums;
};

template <class L>
Row row_of(const L& l, const float* xp, int m) {
  const float* base = xp + m * l.words();
  return {reinterpret_cast<const int8_t*>(base), base + l.code_words, base + l.code_words + l.d_words};
}

}  // namespace mto::kernels::q8
