// <MetalPerformancePrimitives/MetalPerformancePrimitives.h> for the MSL-on-CPU harness: the
// mpp::tensor_ops subset kernels use, written from the documented behaviour (Apple's header
// comments, docs/design/METAL.md), not from Apple's implementation.
//
//   matmul2d_descriptor(m, n, k = dynamic, transpose_left, transpose_right, relaxed_precision, mode)
//   matmul2d<desc, execution_simdgroups<N> | execution_simdgroup>::run(left, right, destination)
//     left  m x k: tensor extents (k, m), or (m, k) with transpose_left; or a cooperative tensor
//     right k x n: tensor extents (n, k), or (k, n) with transpose_right
//     destination m x n: tensor extents (n, m), or a cooperative tensor
//   Every element inside the operands' extents is computed (float accumulation); with
//   mode::multiply_accumulate it is added to the destination (with mode::multiply too under
//   MTOH_MULTIPLY_ACCUMULATES=1: the header's "C = A*B + C" reading). Cooperative-destination elements
//   outside the operands' extents are undefined (NaN here). Tensor destinations are written only
//   inside their extents.
//
// Enforced (reported as `tensorops_constraint` / `tensorops_scope`, or compile errors):
//   - at least one of m, n a multiple of 16 (compile error, as Metal's: llama.cpp #21048);
//   - execution_simdgroups<N> runs in a threadgroup of exactly N x 32 threads;
//   - cooperative inputs need execution_simdgroup;
//   - dynamic K: the left and right operands' K extents must agree (clamp the last K tile);
//   - a static K must be a multiple of 32 (macOS 26.1 truncates others: ggml 33c9ea5e) and fit
//     the operands;
//   - reduce_rows without an explicit identity (compile error: the default is the sum identity
//     0 whatever the operation);
//   - get_left_input_cooperative_tensor(src) when is_compatible_as_left_input says no
//     (MTOH_COOP_LEFT_COMPATIBLE=0 makes it say no);
//   - either of them below MSL 4.1 (compile error: the macOS 26 headers do not have them).
// Each run() is counted like a simdgroup_matrix operation (site and operands), so lanes of one
// SIMD-group that run different matmuls, or skip one, are reported as divergence.
#pragma once
#pragma clang system_header
#include "mtoh_tensor.h"
#include "mtoh_tensor_blockwise.h"

namespace mpp::tensor_ops {

enum class reduction_operation { sum, max, min };

struct matmul2d_descriptor {
  enum class mode { multiply, multiply_accumulate };
  int m, n, k;
  bool transpose_left, transpose_right;
  bool relaxed_precision;
  mode matmul_mode;
  constexpr matmul2d_descriptor(int m_, int n_, int k_ = static_cast<int>(metal::dynamic_extent), bool tl = false,
                                bool tr = false, bool relaxed = false, mode md = mode::multiply)
      : m(m_), n(n_), k(k_), transpose_left(tl), transpose_right(tr), relaxed_precision(relaxed), matmul_mode(md) {}
};

template <class T>
struct reduction_operation_identity {
  static constexpr T sum_identity = T(0);
  static constexpr T max_identity = std::numeric_limits<T>::lowest();
  static constexpr T min_identity = std::numeric_limits<T>::max();
};

}  // namespace mpp::tensor_ops

namespace mtoh::tops {

using mpp::tensor_ops::matmul2d_descriptor;
using mpp::tensor_ops::reduction_operation;

template <class T>
inline float to_f(T v) {
  return float(v);
}

template <class T>
inline T reduce_op(reduction_operation op, T a, T b) {
  if constexpr (is_float_scalar<T>) {
    if (std::isnan(float(a)) || std::isnan(float(b))) return T(std::numeric_limits<float>::quiet_NaN());
  }
  switch (op) {
    case reduction_operation::sum: return T(a + b);
    case reduction_operation::max: return a < b ? b : a;
    case reduction_operation::min: return b < a ? b : a;
  }
  return a;
}

// Logical (row, col) -> tensor (x, y) for each operand role.
template <class TT>
inline float tensor_get(const TT& t, int x, int y) {
  return float(t.at(x, y));
}

}  // namespace mtoh::tops

namespace mtoh::tops {
// Cooperative left inputs (is_compatible_as_left_input, get_left_input_cooperative_tensor) are
// missing from the macOS 26.0 and 26.1 MetalPerformancePrimitives headers and present in 27.0's
// (docs/design/VERIFY.md): the harness offers them to MSL 4.1 translation units only, so a
// library compiled at MSL 4.0 (macOS 26) that calls them fails to build here as it would there.
template <class T>
struct left_input_api : std::integral_constant<bool, (__METAL_VERSION__ >= 410)> {};
}  // namespace mtoh::tops
#define MTOH_LEFT_INPUT_API_MESSAGE                                                                 \
  "cooperative left inputs are not in the macOS 26 MetalPerformancePrimitives headers: only an MSL " \
  "4.1 library may use them (scripts/embed-shaders.mjs compiles a file that does at 4.1)"

namespace mpp::tensor_ops {

template <matmul2d_descriptor D, class Scope, class... Args>
class matmul2d {
  static_assert(mtoh::tops::is_scope<Scope>::value,
                "matmul2d: the scope must be execution_simdgroups<N> or execution_simdgroup");
  static_assert(D.m > 0 && D.n > 0, "matmul2d: m and n must be positive");
  static_assert(D.m % 16 == 0 || D.n % 16 == 0, "At least one of M or N must be a multiple of 16");
  static_assert(D.k == static_cast<int>(metal::dynamic_extent) || D.k > 0, "matmul2d: k must be positive or dynamic");
  using ST = mtoh::tops::scope_traits<Scope>;
  static constexpr bool kDynamicK = D.k == static_cast<int>(metal::dynamic_extent);

 public:
  static constexpr matmul2d_descriptor descriptor = D;
  using scope = Scope;

  template <class L, class R, class E, class Coord = int, class... C>
  using cooperative_tensor_destination_t =
      metal::cooperative_tensor<E, metal::dextents<Coord, 2>, mtoh::tops::dest_layout<D.m, D.n, Scope>>;
  template <class L, class R, class E, class Coord = int, class... C>
  using cooperative_tensor_row_reduction_destination_t =
      metal::cooperative_tensor<E, metal::dextents<Coord, 1>, mtoh::tops::row_layout<D.m, D.n, Scope>>;
  template <class LE, class RE, class E, class Coord = int, class... C>
  using cooperative_tensor_left_input_t =
      metal::cooperative_tensor<LE, metal::dextents<Coord, 2>, mtoh::tops::left_layout<D.m, (D.k > 0 ? D.k : 1), Scope>>;

  template <class L, class R, class E, class Coord = int, class... C>
  cooperative_tensor_destination_t<L, R, E, Coord> get_destination_cooperative_tensor() const {
    ST::check("get_destination_cooperative_tensor");
    return {};
  }
  template <class L, class R, class E, class Coord = int, class... C>
  cooperative_tensor_row_reduction_destination_t<L, R, E, Coord> get_row_reduction_destination_cooperative_tensor() const {
    ST::check("get_row_reduction_destination_cooperative_tensor");
    return {};
  }
  template <class LE, class RE, class E, class Coord = int, class... C>
  cooperative_tensor_left_input_t<LE, RE, E, Coord> get_left_input_cooperative_tensor() const {
    static_assert(mtoh::tops::left_input_api<LE>::value, MTOH_LEFT_INPUT_API_MESSAGE);
    static_assert(!kDynamicK, "a cooperative left input needs a static k in the descriptor");
    ST::check("get_left_input_cooperative_tensor");
    return {};
  }

  // True when `src` (a destination of some matmul over the same scope) can become this op's
  // left input without moving data: same m x k shape, and the harness says so.
  template <class LE, class RE, class E, class SE, class SExt, class SL>
  bool is_compatible_as_left_input(const metal::cooperative_tensor<SE, SExt, SL>&) const {
    static_assert(mtoh::tops::left_input_api<LE>::value, MTOH_LEFT_INPUT_API_MESSAGE);
    return compatible<SL>() && mtoh::tops::left_input_compatible();
  }
  template <class LE, class RE, class E, class Coord = int, class SE, class SExt, class SL>
  cooperative_tensor_left_input_t<LE, RE, E, Coord> get_left_input_cooperative_tensor(
      const metal::cooperative_tensor<SE, SExt, SL>& src) const {
    static_assert(mtoh::tops::left_input_api<LE>::value, MTOH_LEFT_INPUT_API_MESSAGE);
    static_assert(!kDynamicK, "a cooperative left input needs a static k in the descriptor");
    ST::check("get_left_input_cooperative_tensor");
    if (!(compatible<SL>() && mtoh::tops::left_input_compatible())) {
      mtoh::tops::fail("tensorops_constraint",
                       "get_left_input_cooperative_tensor(src): src is not compatible as the left input (check "
                       "is_compatible_as_left_input and go through threadgroup memory otherwise)");
    }
    cooperative_tensor_left_input_t<LE, RE, E, Coord> out;
    // Same layout table (left_layout == dest layout when compatible): a per-thread copy.
    for (int i = 0; i < out.get_capacity(); ++i)
      if (out.is_valid_element(i)) out.v_[i] = LE(src.v_[i]);
    return out;
  }

  template <class L, class R, class Dst>
  void run(L& left, R& right, Dst& dest, MTOH_SITE_PARAMS) const {
    using namespace mtoh::tops;
    using LT = std::remove_const_t<L>;
    using RT = std::remove_const_t<R>;
    using DT = std::remove_const_t<Dst>;
    static_assert(is_tensor<LT>::value || is_coop<LT>::value, "matmul2d::run: left must be a tensor or cooperative tensor");
    static_assert(is_tensor<RT>::value, "matmul2d::run: the harness supports tensor right operands only");
    static_assert(is_tensor<DT>::value || is_coop<DT>::value, "matmul2d::run: destination must be a tensor or cooperative tensor");
    static_assert(!is_coop<LT>::value || std::is_same<Scope, metal::execution_simdgroup>::value,
                  "matmul2d: cooperative-tensor inputs need execution_simdgroup");
    static_assert(check_scaled_operands<LT, RT, DT, D.transpose_left, D.transpose_right>(), "scaled operands");
    ST::check("matmul2d::run");
    const ::mtoh::Site site = MTOH_SITE("matmul2d::run");

    uint64_t fp = mix(mix(0, uint64_t(D.m) << 32 | uint64_t(D.n)), uint64_t(uint32_t(D.k)));
    if constexpr (is_tensor<LT>::value) fp = mix(fp, left.fingerprint());
    fp = mix(fp, right.fingerprint());
    if constexpr (is_tensor<DT>::value) fp = mix(fp, dest.fingerprint());
    ::mtoh::count_simdgroup_matrix_op(site, fp);

    // Operand shapes.
    int Ml, Kl;
    if constexpr (is_tensor<LT>::value) {
      Ml = int(left.get_extent(D.transpose_left ? 0 : 1));
      Kl = int(left.get_extent(D.transpose_left ? 1 : 0));
    } else {
      static_assert(LT::layout::rows == D.m && LT::layout::cols == D.k,
                    "matmul2d::run: the cooperative left input must be m x k of this descriptor");
      Ml = D.m;
      Kl = D.k;
    }
    const int Nr = int(right.get_extent(D.transpose_right ? 1 : 0));
    const int Kr = int(right.get_extent(D.transpose_right ? 0 : 1));
    int K;
    if (kDynamicK) {
      if (Kl != Kr) {
        fail("tensorops_constraint",
             "matmul2d::run at %s:%d: dynamic K, but the left operand has K = %d and the right K = %d (clamp "
             "both to the same tile)",
             mtoh_file, mtoh_line, Kl, Kr);
      }
      K = Kl;
    } else {
      if (D.k % 32 != 0) {
        fail("tensorops_constraint",
             "matmul2d::run at %s:%d: static K = %d is not a multiple of 32 (macOS 26.1 truncates it); use "
             "dynamic_extent and clamp the last K tile",
             mtoh_file, mtoh_line, D.k);
      }
      if (Kl < D.k || Kr < D.k) {
        fail("tensorops_constraint", "matmul2d::run at %s:%d: static K = %d but the operands have K = %d and %d",
             mtoh_file, mtoh_line, D.k, Kl, Kr);
      }
      K = D.k;
    }
    const int Mt = std::min(D.m, Ml), Nt = std::min(D.n, Nr);

    // A cooperative left input is spread over the SIMD-group: gather it.
    float lbuf[is_coop<LT>::value ? D.m * (D.k > 0 ? D.k : 1) : 1];
    auto body = [&] {
      auto A = [&](int m, int k) -> float {
        if constexpr (is_tensor<LT>::value) {
          return D.transpose_left ? tensor_get(left, m, k) : tensor_get(left, k, m);
        } else {
          return lbuf[m * D.k + k];
        }
      };
      auto B = [&](int k, int n) -> float {
        return D.transpose_right ? tensor_get(right, k, n) : tensor_get(right, n, k);
      };
      auto dot = [&](int m, int n) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A(m, k) * B(k, n);
        return acc;
      };
      const bool acc_mode = D.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate || multiply_accumulates();
      if constexpr (is_coop<DT>::value) {
        static_assert(DT::layout::rank == 2 && DT::layout::rows == D.m && DT::layout::cols == D.n,
                      "matmul2d::run: the destination must be this op's destination cooperative tensor");
        using E = typename DT::element_type;
        for (int i = 0; i < dest.get_capacity(); ++i) {
          if (!dest.is_valid_element(i)) continue;
          const auto idx = dest.get_multidimensional_index(i);
          const int n = idx[0], m = idx[1];
          if (m >= Mt || n >= Nt) {
            dest.v_[i] = undefined_value<E>();
            continue;
          }
          const float s = dot(m, n);
          dest.v_[i] = acc_mode ? E(float(dest.v_[i]) + s) : E(s);
        }
      } else {
        using V = typename DT::value_type;
        const int Md = std::min(Mt, int(dest.get_extent(1))), Nd = std::min(Nt, int(dest.get_extent(0)));
        // The threads of the scope share the elements (a seeded assignment).
        const int me = ST::index();
        const uint64_t salt = coop_seed();
        for (int m = 0; m < Md; ++m)
          for (int n = 0; n < Nd; ++n) {
            if (int(mix(salt, uint64_t(m * D.n + n)) % uint64_t(ST::threads)) != me) continue;
            const float s = dot(m, n);
            auto& d = dest.at(n, m);
            d = acc_mode ? V(float(d) + s) : V(s);
          }
      }
    };
    if constexpr (is_coop<LT>::value) {
      exchange<Scope>(left.v_, site, [&](const void* const* lanes) {
        const Table& t = LT::layout::table();
        for (int th = 0; th < t.threads; ++th) {
          const auto* vals = static_cast<const typename LT::element_type*>(lanes[th]);
          for (int i = 0; i < t.cap; ++i) {
            const int e = t.slot[size_t(th * t.cap + i)];
            if (e >= 0) lbuf[e] = float(vals[i]);
          }
        }
      });
    }
    body();
  }

 private:
  template <class SL>
  static constexpr bool compatible() {
    return D.k > 0 && SL::rank == 2 && SL::rows == D.m && SL::cols == D.k &&
           std::is_same<typename SL::scope, Scope>::value &&
           std::is_same<SL, mtoh::tops::dest_layout<SL::rows, SL::cols, typename SL::scope>>::value;
  }
};

// dst[row] = identity (op) src[row, 0] (op) src[row, 1] ... for every row the calling thread holds.
template <class E, class SExt, class DExt, class SL, class DL>
void reduce_rows(metal::cooperative_tensor<E, SExt, SL>& src, metal::cooperative_tensor<E, DExt, DL>& dst,
                 reduction_operation op, E identity, MTOH_SITE_PARAMS) {
  using namespace mtoh::tops;
  static_assert(SL::rank == 2 && DL::rank == 1 && SL::rows == DL::rows && SL::cols == DL::cols &&
                    std::is_same<typename SL::scope, typename DL::scope>::value,
                "reduce_rows: dst must be the row-reduction destination of src's matmul");
  using Scope = typename SL::scope;
  scope_traits<Scope>::check("reduce_rows");
  const ::mtoh::Site site = MTOH_SITE("reduce_rows");
  E rows[SL::rows];
  exchange<Scope>(src.v_, site, [&](const void* const* lanes) {
    const Table& t = SL::table();
    E dense[SL::rows * SL::cols];
    for (int th = 0; th < t.threads; ++th) {
      const E* vals = static_cast<const E*>(lanes[th]);
      for (int i = 0; i < t.cap; ++i) {
        const int e = t.slot[size_t(th * t.cap + i)];
        if (e >= 0) dense[e] = vals[i];
      }
    }
    for (int r = 0; r < SL::rows; ++r) {
      E acc = identity;
      for (int c = 0; c < SL::cols; ++c) acc = reduce_op(op, acc, dense[r * SL::cols + c]);
      rows[r] = acc;
    }
  });
  for (int i = 0; i < dst.get_capacity(); ++i)
    if (dst.is_valid_element(i)) dst.v_[i] = rows[dst.element_of(i)];
}

template <class T>
struct mtoh_dependent_false : std::false_type {};

// Without the identity: a compile error here (docs/design/METAL.md: "always pass the identity").
template <class E, class SExt, class DExt, class SL, class DL>
void reduce_rows(metal::cooperative_tensor<E, SExt, SL>&, metal::cooperative_tensor<E, DExt, DL>&,
                 reduction_operation = reduction_operation::sum) {
  static_assert(mtoh_dependent_false<E>::value,
                "reduce_rows: pass the identity explicitly (its default is the sum identity 0 whatever the "
                "operation, wrong for max/min)");
}

}  // namespace mpp::tensor_ops
