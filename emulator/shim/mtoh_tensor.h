// <metal_tensor> for the MSL-on-CPU harness (MSL 4.0 translation units only): tensor views with
// extents and strides innermost-first, slice, execution scopes, and cooperative tensors whose
// element-to-thread order is scrambled with a seed.
//
// Documented behaviour modelled (Apple's MetalPerformancePrimitives headers; docs/design/METAL.md):
//   - `tensor<device T, dextents<int32_t, 2>, tensor_inline>(ptr, dextents(cols, rows),
//     array<int32_t, 2>{1, row_stride})`: extent(0) and stride(0) are the innermost dimension.
//   - `t.slice(x, y)` shifts the origin (innermost offset first) and keeps the remaining extents;
//     `t.slice<E0, E1>(x, y)` gives static extents (dynamic_extent keeps the remainder). A slice
//     that starts or ends outside its parent is reported (`tensor_slice`).
//   - A cooperative tensor divides a matrix among the threads of an execution scope "in an
//     implementation defined manner" and not every element a thread holds is valid. Here the
//     order is a seeded random permutation (MTOH_COOP_SEED, default below) with at least one
//     invalid slot per thread, so only kernels that use is_valid_element and
//     get_multidimensional_index get right answers. The reverse pass lays them out in row blocks
//     instead (each thread a run of consecutive row-major elements, its slots scrambled), so
//     that a row lies in one or two threads and a kernel that skips one of a thread's slots
//     loses it (::mtoh::coop_row_blocks). Touching an invalid element through
//     operator[], or asking is_valid_element about a slot outside [0, get_capacity()), is
//     reported (`tensorops_invalid_element`). Fresh elements are NaN.
//   - Row-reduction destinations hold, in each thread, the rows its destination elements touch
//     (scrambled too); map_iterator maps a destination element to that row's slot.
//
// Cross-thread operations (matmul2d with a cooperative input, reduce_rows, the left-input
// conversion) exchange data through the runtime: every thread of the scope publishes a pointer
// to its elements, waits at a barrier of the scope, reads, and waits again, so every thread of the
// scope must reach the call (a divergent call is reported like a divergent barrier).
#pragma once
#pragma clang system_header
// Standard headers the shim needs, included with MSL's address-space keywords (macros of
// mtoh_types.h) out of the way.
#pragma push_macro("device")
#pragma push_macro("constant")
#pragma push_macro("threadgroup")
#pragma push_macro("thread")
#pragma push_macro("kernel")
#undef device
#undef constant
#undef threadgroup
#undef thread
#undef kernel
#include <algorithm>
#include <cstdarg>
#include <cstdlib>
#include <utility>
#include <vector>
#pragma pop_macro("device")
#pragma pop_macro("constant")
#pragma pop_macro("threadgroup")
#pragma pop_macro("thread")
#pragma pop_macro("kernel")

#include "metal_stdlib"

#if !defined(__METAL_VERSION__) || __METAL_VERSION__ < 400
#error "<metal_tensor> needs MSL 4.0: the harness compiles files that include it with __METAL_VERSION__=400"
#endif

namespace metal {

constexpr size_t dynamic_extent = size_t(-1);
template <class T>
constexpr T dynamic_length_v = T(-1);

#ifndef MTOH_HAVE_METAL_ARRAY
#define MTOH_HAVE_METAL_ARRAY 1
template <class T, size_t N>
struct array {
  T v[N];
  constexpr T& operator[](size_t i) { return v[i]; }
  constexpr const T& operator[](size_t i) const { return v[i]; }
  static constexpr size_t size() { return N; }
};
#endif

template <class I, size_t... E>
struct extents {
  static_assert(sizeof...(E) >= 1, "extents: rank >= 1");
  using index_type = I;
  static constexpr size_t R = sizeof...(E);
  static constexpr size_t static_exts[R] = {E...};
  static constexpr size_t dynamic_count() {
    size_t n = 0;
    for (size_t e : static_exts) n += e == dynamic_extent ? 1 : 0;
    return n;
  }
  I e[R];
  constexpr extents() : e{} {
    for (size_t r = 0; r < R; ++r) e[r] = static_exts[r] == dynamic_extent ? I(0) : I(static_exts[r]);
  }
  // All extents, or only the dynamic ones (in order), as in std::extents.
  template <class... A, class = std::enable_if_t<(sizeof...(A) >= 1)>>
  constexpr extents(A... a) : e{} {
    static_assert(sizeof...(A) == R || sizeof...(A) == dynamic_count(), "extents: wrong number of values");
    const I in[] = {I(a)...};
    size_t j = 0;
    for (size_t r = 0; r < R; ++r) {
      if (sizeof...(A) == R) e[r] = in[r];
      else e[r] = static_exts[r] == dynamic_extent ? in[j++] : I(static_exts[r]);
    }
  }
  static constexpr size_t rank() { return R; }
  static constexpr size_t static_extent(size_t r) { return static_exts[r]; }
  constexpr I extent(size_t r) const { return e[r]; }
};

}  // namespace metal

namespace mtoh::tops {
template <size_t>
constexpr size_t dyn = metal::dynamic_extent;
template <class I, class Seq>
struct dext;
template <class I, size_t... Is>
struct dext<I, std::index_sequence<Is...>> {
  using type = metal::extents<I, dyn<Is>...>;
};
}  // namespace mtoh::tops

namespace metal {

template <class I, size_t R>
using dextents = typename mtoh::tops::dext<I, std::make_index_sequence<R>>::type;

struct tensor_inline {};
struct tensor_handle {};
struct tensor_offset {};

// Execution scopes of tensor operations.
struct execution_thread {};
struct execution_simdgroup {};
template <int N>
struct execution_simdgroups {
  static_assert(N >= 1, "execution_simdgroups<N>: N >= 1");
};

}  // namespace metal

template <class T>
using __remove_addrspace_t = T;

namespace mtoh::tops {

template <class I, size_t R, size_t... SE>
struct slice_ext {
  static_assert(sizeof...(SE) == R, "slice<...>: one static extent per dimension");
  using type = metal::extents<I, SE...>;
};
template <class I, size_t R>
struct slice_ext<I, R> {
  using type = metal::dextents<I, R>;
};

inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0x100000001B3ull;
}

[[noreturn]] inline void fail(const char* kind, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
inline void fail(const char* kind, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ::mtoh::kernel_error(kind, msg);
}

}  // namespace mtoh::tops

namespace metal {

// A view of memory: ET is the element type with its address space (`device half`).
template <class ET, class Ext, class Desc = tensor_inline, class... Tags>
struct tensor {
  using element_type = ET;
  using value_type = decltype(::mtoh::value_of(*static_cast<ET*>(nullptr)));
  using extents_type = Ext;
  using index_type = typename Ext::index_type;
  static constexpr size_t R = Ext::R;

  ET* p_ = nullptr;
  Ext ext_;
  index_type st_[R];

  tensor() = default;
  tensor(ET* data, Ext e) : p_(data), ext_(e) {
    st_[0] = 1;
    for (size_t r = 1; r < R; ++r) st_[r] = index_type(st_[r - 1] * ext_.extent(r - 1));
    check_extents();
  }
  template <class J>
  tensor(ET* data, Ext e, array<J, R> strides) : p_(data), ext_(e) {
    for (size_t r = 0; r < R; ++r) st_[r] = index_type(strides[r]);
    if (st_[0] != 1) {
      mtoh::tops::fail("tensorops_constraint", "tensor view: strides[0] must be 1 (innermost dimension contiguous), got %d",
                       int(st_[0]));
    }
    check_extents();
  }
  // A view has extents greater than 0, as MTLTensorDescriptor's dimensions must: a kernel clamps
  // a row origin past its matrix rather than make an empty (or negative) view.
  void check_extents() const {
    for (size_t r = 0; r < R; ++r)
      if (ext_.extent(r) <= 0)
        mtoh::tops::fail("tensorops_constraint", "tensor view: extent %ld of dimension %zu (innermost first) is not greater than 0",
                         long(ext_.extent(r)), r);
  }

  Ext extents() const { return ext_; }
  index_type get_extent(size_t r) const { return ext_.extent(r); }
  index_type get_stride(size_t r) const { return st_[r]; }
  array<index_type, R> strides() const {
    array<index_type, R> s;
    for (size_t r = 0; r < R; ++r) s[r] = st_[r];
    return s;
  }
  ET* data() const { return p_; }

  // Harness access: element (x, y), innermost index first.
  ET& at(index_type x, index_type y = 0) const {
    return p_[long(x) * long(st_[0]) + (R > 1 ? long(y) * long(st_[R > 1 ? 1 : 0]) : 0)];
  }
  uint64_t fingerprint() const {
    uint64_t h = mtoh::tops::mix(0, uint64_t((unsigned long)p_));
    for (size_t r = 0; r < R; ++r) h = mtoh::tops::mix(mtoh::tops::mix(h, uint64_t(ext_.extent(r))), uint64_t(st_[r]));
    return h;
  }

  template <size_t... SE, class... O>
  auto slice(O... offsets) const {
    static_assert(sizeof...(O) == R, "slice: one offset per dimension (innermost first)");
    using NE = typename mtoh::tops::slice_ext<index_type, R, SE...>::type;
    const long off[R] = {long(offsets)...};
    NE ne;
    long elem = 0;
    for (size_t r = 0; r < R; ++r) {
      const long parent = long(ext_.extent(r));
      const long want = NE::static_extent(r) == dynamic_extent ? parent - off[r] : long(NE::static_extent(r));
      if (off[r] < 0 || off[r] > parent || off[r] + want > parent) {
        mtoh::tops::fail("tensor_slice",
                         "slice of dimension %zu (innermost first): offset %ld with extent %ld lies outside the "
                         "parent's extent %ld",
                         r, off[r], want, parent);
      }
      ne.e[r] = index_type(want);
      elem += off[r] * long(st_[r]);
    }
    array<index_type, R> s;
    for (size_t r = 0; r < R; ++r) s[r] = st_[r];
    return tensor<ET, NE, Desc, Tags...>(p_ + elem, ne, s);
  }
};

template <class P, class Ext, class J, size_t R>
tensor(P*, Ext, array<J, R>) -> tensor<P, Ext, tensor_inline>;
template <class P, class Ext>
tensor(P*, Ext) -> tensor<P, Ext, tensor_inline>;

}  // namespace metal

namespace mtoh::tops {

template <class T>
struct is_tensor : std::false_type {};
template <class ET, class Ext, class D, class... Tg>
struct is_tensor<metal::tensor<ET, Ext, D, Tg...>> : std::true_type {};

// ---- Scopes.

template <class Scope>
struct scope_traits;
template <int N>
struct scope_traits<metal::execution_simdgroups<N>> {
  static constexpr int threads = N * 32;
  static void check(const char* what) {
    const ThreadIds& id = current_ids();
    const uint32_t total = id.threads_per_threadgroup[0] * id.threads_per_threadgroup[1] * id.threads_per_threadgroup[2];
    if (id.simdgroups_per_threadgroup != uint32_t(N) || total != uint32_t(N * 32)) {
      fail("tensorops_scope",
           "%s with execution_simdgroups<%d> needs a threadgroup of %d x 32 = %d threads; this one has %u threads "
           "(%u SIMD-groups)",
           what, N, N, N * 32, total, id.simdgroups_per_threadgroup);
    }
  }
  static int index() { return int(current_ids().thread_index_in_threadgroup); }
  static int base() { return 0; }
  static void sync(const Site& s) { ::mtoh::threadgroup_barrier(s); }
};
template <>
struct scope_traits<metal::execution_simdgroup> {
  static constexpr int threads = 32;
  static void check(const char* what) {
    const ThreadIds& id = current_ids();
    const uint32_t total = id.threads_per_threadgroup[0] * id.threads_per_threadgroup[1] * id.threads_per_threadgroup[2];
    if (total % 32 != 0) {
      fail("tensorops_scope", "%s with execution_simdgroup needs whole SIMD-groups; the threadgroup has %u threads", what,
           total);
    }
  }
  static int index() { return int(current_ids().thread_index_in_simdgroup); }
  static int base() { return int(current_ids().simdgroup_index_in_threadgroup) * 32; }
  static void sync(const Site& s) { ::mtoh::simdgroup_barrier(s); }
};
template <class S>
struct is_scope : std::false_type {};
template <int N>
struct is_scope<metal::execution_simdgroups<N>> : std::true_type {};
template <>
struct is_scope<metal::execution_simdgroup> : std::true_type {};

// ---- Harness controls (environment of the driver process).

inline uint64_t coop_seed() {
  static const uint64_t seed = [] {
    const char* s = ::getenv("MTOH_COOP_SEED");
    return s && *s ? uint64_t(std::strtoull(s, nullptr, 0)) : uint64_t(0x5EEDC0DEull);
  }();
  return seed;
}
// What is_compatible_as_left_input answers (when the shapes allow reuse at all): MTOH_COOP_LEFT_COMPATIBLE=0
// makes it answer false, so kernels must take their threadgroup-memory fallback.
inline bool left_input_compatible() {
  static const bool yes = [] {
    const char* s = ::getenv("MTOH_COOP_LEFT_COMPATIBLE");
    return !(s && s[0] == '0');
  }();
  return yes;
}
// How mode::multiply treats its destination. Apple's header reads both ways: its comment says the
// operation is C = A*B + C, the mode's name says C = A*B. MTOH_MULTIPLY_ACCUMULATES=1 takes the
// first reading (mode::multiply adds to the destination, as multiply_accumulate does); by default
// the second. Kernels zero their destination and use multiply_accumulate, right under both.
inline bool multiply_accumulates() {
  static const bool yes = [] {
    const char* s = ::getenv("MTOH_MULTIPLY_ACCUMULATES");
    return s && s[0] == '1';
  }();
  return yes;
}

}  // namespace mtoh::tops

#include "mtoh_coop_layout.h"

namespace mtoh::tops {

// Publishes `mine`, waits for the scope, calls use(pointers of the scope's threads in scope
// order), waits again (so nobody changes its elements while others read them).
template <class Scope, class F>
void exchange(const void* mine, const Site& site, F use) {
  const void** table = threadgroup_pointer_slots();
  table[current_ids().thread_index_in_threadgroup] = mine;
  scope_traits<Scope>::sync(site);
  use(&table[scope_traits<Scope>::base()]);
  scope_traits<Scope>::sync(site);
}

template <class T>
T undefined_value() {
  if constexpr (is_float_scalar<T>) return T(std::numeric_limits<float>::quiet_NaN());
  else return T(0x5A);
}

}  // namespace mtoh::tops

namespace metal {

template <class E, class Ext, class Layout>
struct cooperative_tensor;

template <class CT>
struct cooperative_tensor_iterator {
  CT* t;
  int i;
  auto& operator*() const { return (*t)[i]; }
  cooperative_tensor_iterator& operator++() {
    i = t->next_valid(i + 1);
    return *this;
  }
  bool operator==(const cooperative_tensor_iterator& o) const { return t == o.t && i == o.i; }
  bool operator!=(const cooperative_tensor_iterator& o) const { return !(*this == o); }
  int get_index() const { return i; }
};

template <class E, class Ext, class Layout>
struct cooperative_tensor {
  using element_type = E;
  using value_type = E;
  using extents_type = Ext;
  using layout = Layout;
  using iterator = cooperative_tensor_iterator<cooperative_tensor>;
  static constexpr int rank = Layout::rank;

  E v_[Layout::max_cap];
  int owner_;  // this thread's index in the scope

  cooperative_tensor() : owner_(mtoh::tops::scope_traits<typename Layout::scope>::index()) {
    for (auto& x : v_) x = mtoh::tops::undefined_value<E>();
  }

  int get_capacity() const { return Layout::table().cap; }
  int element_of(int i) const {
    const mtoh::tops::Table& t = Layout::table();
    return i >= 0 && i < t.cap ? t.slot[size_t(owner_ * t.cap + i)] : -1;
  }
  // Slots are numbered [0, get_capacity()); asking about one outside is a kernel bug (a loop bound
  // one past the capacity) the GPU gives no defined answer to, so it is reported, not answered.
  bool is_valid_element(int i) const {
    if (i < 0 || i >= get_capacity()) {
      mtoh::tops::fail("tensorops_invalid_element", "is_valid_element(%d) of thread %d outside the capacity %d", i,
                       owner_, get_capacity());
    }
    return element_of(i) >= 0;
  }
  E& operator[](int i) {
    if (!is_valid_element(i)) {
      mtoh::tops::fail("tensorops_invalid_element",
                       "cooperative tensor element %d of thread %d is not valid (capacity %d): guard accesses with "
                       "is_valid_element",
                       i, owner_, get_capacity());
    }
    return v_[i];
  }
  const E& operator[](int i) const { return const_cast<cooperative_tensor&>(*this)[i]; }
  // Innermost first: {column, row} for a matrix, {row} for a row reduction.
  array<int, size_t(Layout::rank)> get_multidimensional_index(int i) const {
    const int e = element_of(i);
    if (e < 0) mtoh::tops::fail("tensorops_invalid_element", "get_multidimensional_index(%d) of an invalid element", i);
    array<int, size_t(Layout::rank)> idx;
    if constexpr (Layout::rank == 2) {
      idx[0] = e % Layout::cols;
      idx[1] = e / Layout::cols;
    } else {
      idx[0] = e;
    }
    return idx;
  }

  int next_valid(int i) const {
    while (i < get_capacity() && !is_valid_element(i)) ++i;
    return i;
  }
  iterator begin() { return iterator{this, next_valid(0)}; }
  iterator end() { return iterator{this, get_capacity()}; }
  iterator get_iterator(int i) { return iterator{this, i}; }

  // The slot of this thread's row-reduction tensor that holds the row of destination element `it`.
  template <class It>
  iterator map_iterator(const It& it) {
    static_assert(Layout::rank == 1, "map_iterator maps into a row-reduction cooperative tensor");
    using Src = std::remove_pointer_t<decltype(it.t)>;
    static_assert(Src::rank == 2 && Src::layout::rows == Layout::rows && Src::layout::cols == Layout::cols,
                  "map_iterator: the iterator must belong to the destination this reduction was made for");
    const int row = it.t->get_multidimensional_index(it.i)[1];
    for (int i = 0; i < get_capacity(); ++i)
      if (element_of(i) == row) return iterator{this, i};
    mtoh::tops::fail("tensorops_constraint", "map_iterator: row %d is not held by this thread's reduction tensor", row);
  }

  // Elements inside the tensor's extents are read; the others keep undefined values.
  template <class TT>
  void load(const TT& t) {
    static_assert(mtoh::tops::is_tensor<TT>::value, "load: from a tensor view");
    static_assert(TT::R == size_t(Layout::rank), "load: rank mismatch");
    for (int i = 0; i < get_capacity(); ++i) {
      if (!is_valid_element(i)) continue;
      const auto idx = get_multidimensional_index(i);
      const int y = Layout::rank == 2 ? idx[Layout::rank == 2 ? 1 : 0] : 0;
      if (idx[0] < int(t.get_extent(0)) && (Layout::rank == 1 || y < int(t.get_extent(TT::R - 1))))
        v_[i] = E(t.at(idx[0], y));
    }
  }
  // Stores the valid elements inside the tensor's extents.
  template <class TT>
  void store(const TT& t) const {
    static_assert(mtoh::tops::is_tensor<TT>::value, "store: to a tensor view");
    static_assert(TT::R == size_t(Layout::rank), "store: rank mismatch");
    using V = typename TT::value_type;
    for (int i = 0; i < get_capacity(); ++i) {
      if (!is_valid_element(i)) continue;
      const auto idx = get_multidimensional_index(i);
      const int y = Layout::rank == 2 ? idx[Layout::rank == 2 ? 1 : 0] : 0;
      if (idx[0] < int(t.get_extent(0)) && (Layout::rank == 1 || y < int(t.get_extent(TT::R - 1))))
        t.at(idx[0], y) = V(v_[i]);
    }
  }
};

}  // namespace metal

namespace mtoh::tops {
template <class T>
struct is_coop : std::false_type {};
template <class E, class Ext, class L>
struct is_coop<metal::cooperative_tensor<E, Ext, L>> : std::true_type {};
}  // namespace mtoh::tops
