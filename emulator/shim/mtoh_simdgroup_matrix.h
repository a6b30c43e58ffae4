// simdgroup_matrix<T, Cols, Rows> and its load/store/multiply functions (MSL 2.3+, Apple7+).
//
// On the GPU a simdgroup_matrix is spread over the 32 lanes of a SIMD-group in a layout Apple does
// not document, and every operation is SIMD-group-wide. Here every lane holds the whole matrix and
// performs the whole operation on its copy: the values are the same, and no kernel can come to
// depend on a particular element-to-lane layout (thread_elements() is deliberately absent).
// What stays SIMD-group-wide is the rule that all lanes execute each operation: every operation
// is counted per lane (bridge.h count_simdgroup_matrix_op) and the scheduler reports lanes of one
// SIMD-group whose counts differ at a barrier, a SIMD-group function or the end of the kernel.
//
// A default-constructed matrix is filled with NaN (floating types), like the undefined contents of
// a real one, so reading it before a load or make_filled_simdgroup_matrix shows up in results.
//
// A store writes only the calling lane's share of the elements (element e by lane e % 32), as on
// the GPU, where each lane holds a few: a lane that reads what other lanes stored needs a
// simdgroup_barrier (or a threadgroup one) in between, and without it reads stale memory here,
// since lanes run one at a time. The stored values are part of the uniformity check too: lanes
// whose copies differ loaded threadgroup memory at different times (a missing barrier).
#pragma once
// A system header, so the C++17 it uses internally is allowed while kernels are held to C++14.
#pragma clang system_header
#include <cstring>
#include <limits>
#include <string>

#include "../runtime/bridge.h"
#include "mtoh_sync.h"
#include "mtoh_types.h"

namespace mtoh {
// The type of an element read through a pointer, without its address space or const (deduction
// of a by-value parameter drops both).
template <class U>
U value_of(U u);

// The arguments of a load or store, folded into one number for the uniformity check.
inline uint64_t matrix_args(unsigned long address, ulong elements_per_row, ulong2 origin, bool transpose) {
  uint64_t h = address;
  for (uint64_t v : {uint64_t(elements_per_row), uint64_t(origin.x), uint64_t(origin.y), uint64_t(transpose)})
    h = (h ^ v) * 0x100000001B3ull;
  return h;
}
// Every constructed matrix carries this mark: an operation on one without it works on memory that
// holds no matrix, an index past a thread array of them (array-bounds does not see that index: it
// only forms the address of the object assigned to, one past the end, which C++ allows).
constexpr uint32_t kMatrixAlive = 0x5A17C0DEu;
inline void check_matrix_alive(uint32_t mark, const char* what) {
  if (mark != kMatrixAlive)
    kernel_error("simdgroup_matrix_bounds",
                 (std::string(what) + " of a simdgroup_matrix that was never constructed (an index past its array?)").c_str());
}
// A matrix's bytes, folded into one number (FNV-1a).
inline uint64_t matrix_bits(const void* data, size_t bytes) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 0x100000001B3ull;
  return h;
}
}  // namespace mtoh

namespace metal {

template <class T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "MSL simdgroup_matrix is 8x8");
  T e[Rows][Cols];
  uint32_t alive = mtoh::kMatrixAlive;

  simdgroup_matrix(const simdgroup_matrix& o) {
    mtoh::check_matrix_alive(o.alive, "a copy");
    std::memcpy(e, o.e, sizeof e);
  }
  simdgroup_matrix& operator=(const simdgroup_matrix& o) {
    mtoh::check_matrix_alive(alive, "assignment");
    std::memcpy(e, o.e, sizeof e);
    return *this;
  }
  simdgroup_matrix() {
    T fill = T(0);
    if constexpr (mtoh::is_float_scalar<T>) fill = T(std::numeric_limits<float>::quiet_NaN());
    for (int r = 0; r < Rows; ++r)
      for (int c = 0; c < Cols; ++c) e[r][c] = fill;
  }
  // MSL: a diagonal matrix with `d` on the diagonal.
  explicit simdgroup_matrix(T d) {
    for (int r = 0; r < Rows; ++r)
      for (int c = 0; c < Cols; ++c) e[r][c] = r == c ? d : T(0);
  }
};

typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template <class T, int Cols, int Rows>
inline simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(const T value, MTOH_SITE_PARAMS) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof value);
  mtoh::count_simdgroup_matrix_op(MTOH_SITE("make_filled_simdgroup_matrix"), bits);
  simdgroup_matrix<T, Cols, Rows> m;
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c) m.e[r][c] = value;
  return m;
}

// Element (r, c) of the matrix in memory is src[(origin.y + r) * elements_per_row + origin.x + c];
// with transpose_matrix the loaded matrix is the transpose of that one.
template <class T, int Cols, int Rows, class P>
inline void simdgroup_load(thread simdgroup_matrix<T, Cols, Rows>& d, P src,
                           ulong elements_per_row = Cols, ulong2 matrix_origin = ulong2(0),
                           bool transpose_matrix = false, MTOH_SITE_PARAMS) {
  static_assert(std::is_pointer<P>::value, "simdgroup_load: source must be a pointer");
  static_assert(std::is_same<decltype(mtoh::value_of(src[0])), T>::value,
                "simdgroup_load: source element type must be the matrix element type");
  mtoh::check_matrix_alive(d.alive, "simdgroup_load");
  mtoh::count_simdgroup_matrix_op(MTOH_SITE("simdgroup_load"),
                                  mtoh::matrix_args((unsigned long)src, elements_per_row, matrix_origin, transpose_matrix));
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c) {
      const ulong mr = transpose_matrix ? ulong(c) : ulong(r);
      const ulong mc = transpose_matrix ? ulong(r) : ulong(c);
      d.e[r][c] = src[(matrix_origin.y + mr) * elements_per_row + matrix_origin.x + mc];
    }
}

template <class T, int Cols, int Rows, class P>
inline void simdgroup_store(simdgroup_matrix<T, Cols, Rows> a, P dst,
                            ulong elements_per_row = Cols, ulong2 matrix_origin = ulong2(0),
                            bool transpose_matrix = false, MTOH_SITE_PARAMS) {
  static_assert(std::is_pointer<P>::value, "simdgroup_store: destination must be a pointer");
  static_assert(std::is_same<decltype(mtoh::value_of(dst[0])), T>::value,
                "simdgroup_store: destination element type must be the matrix element type");
  mtoh::count_simdgroup_matrix_op(MTOH_SITE("simdgroup_store"),
                                  mtoh::matrix_args((unsigned long)dst, elements_per_row, matrix_origin, transpose_matrix) ^
                                      mtoh::matrix_bits(a.e, sizeof a.e));
  const int lane = int(mtoh::current_ids().thread_index_in_simdgroup);
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c) {
      if ((r * Cols + c) % mtoh::kSimdWidth != lane) continue;
      const ulong mr = transpose_matrix ? ulong(c) : ulong(r);
      const ulong mc = transpose_matrix ? ulong(r) : ulong(c);
      dst[(matrix_origin.y + mr) * elements_per_row + matrix_origin.x + mc] = a.e[r][c];
    }
}

// d = a * b + c, accumulated in d's element type in k order.
template <class TD, class TA, class TB, class TC, int N>
inline void simdgroup_multiply_accumulate(thread simdgroup_matrix<TD, N, N>& d,
                                          simdgroup_matrix<TA, N, N> a,
                                          simdgroup_matrix<TB, N, N> b,
                                          simdgroup_matrix<TC, N, N> c, MTOH_SITE_PARAMS) {
  mtoh::check_matrix_alive(d.alive, "simdgroup_multiply_accumulate");
  mtoh::count_simdgroup_matrix_op(MTOH_SITE("simdgroup_multiply_accumulate"), 0);
  for (int r = 0; r < N; ++r)
    for (int col = 0; col < N; ++col) {
      TD acc = TD(c.e[r][col]);
      for (int k = 0; k < N; ++k) acc = TD(acc + TD(a.e[r][k]) * TD(b.e[k][col]));
      d.e[r][col] = acc;
    }
}

template <class TD, class TA, class TB, int N>
inline void simdgroup_multiply(thread simdgroup_matrix<TD, N, N>& d, simdgroup_matrix<TA, N, N> a,
                               simdgroup_matrix<TB, N, N> b, MTOH_SITE_PARAMS) {
  mtoh::check_matrix_alive(d.alive, "simdgroup_multiply");
  mtoh::count_simdgroup_matrix_op(MTOH_SITE("simdgroup_multiply"), 0);
  for (int r = 0; r < N; ++r)
    for (int col = 0; col < N; ++col) {
      TD acc = TD(0);
      for (int k = 0; k < N; ++k) acc = TD(acc + TD(a.e[r][k]) * TD(b.e[k][col]));
      d.e[r][col] = acc;
    }
}

}  // namespace metal
