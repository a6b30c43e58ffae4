// Element offsets of a strided iteration (elementwise broadcasting, layout copies): the flat
// index of an element of an iteration shape (innermost dimension last, row-major order) turned
// into its offset in an operand with the given element strides. Shared by shaders/elementwise.metal
// and shaders/copy.metal; the shapes come from core/ops.h (Broadcast, CopyPart) through the plans.
#ifndef MTO_SHADERS_ND_INDEX_H
#define MTO_SHADERS_ND_INDEX_H

#include "kernel_abi.h"

// Offsets of flat element `e` in two operands at once (one division chain for both).
inline void mto_nd_offsets2(uint e, int rank, constant const mto_i32* dims, constant const mto_i32* a_strides,
                            constant const mto_i32* b_strides, thread uint& a, thread uint& b) {
  uint oa = 0, ob = 0;
  for (int k = rank - 1; k >= 0; --k) {
    const uint d = uint(dims[k]);
    const uint i = e % d;
    e /= d;
    oa += i * uint(a_strides[k]);
    ob += i * uint(b_strides[k]);
  }
  a = oa;
  b = ob;
}

#endif  // MTO_SHADERS_ND_INDEX_H
