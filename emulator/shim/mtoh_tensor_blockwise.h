// MSL 4.1 multi-plane tensors for the MSL-on-CPU harness: the format element types of the
// quantized TensorOps path and `tensor_blockwise` scale planes (the tensorops-mx tier).
//
// Modelled from what the sources say (docs/design/METAL.md, "Scale planes"; test/msl/README.md
// marks which rules are inferred):
//   - `tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>` as the last
//     template argument of `tensor<device metal_fp8_e4m3_format | metal_fp8_e5m2_format |
//     metal_fp4_e2m1_format, dextents<int, 2>, tensor_inline, ...>` (WWDC26 talk 330);
//     constructed from a pointer to the scales, `scales_t(ptr)`, and passed as the view's last
//     constructor argument: `w_t(data, dextents(K, N), array{1, K}, scales_t(scales))`.
//   - Scales ue8m0 only, block (32, 1) only (compile errors); a scaled left operand must not be
//     transposed, a scaled right operand must be, the destination carries no scales (compile
//     errors in matmul2d::run); operand pairs half (left) x fp4/fp8 (right), or the same fp8/fp4
//     format on both sides (compile error otherwise: fp8/fp4 x half is not in Apple's table).
//   - A scale-plane tensor's elements are read by matmul2d only: operator[], operator() and get
//     are compile errors (no declaration reads a format-typed element; docs/design/METAL.md,
//     "mxfp8 K/V as scale-plane tensors"). The harness's own at() is what matmul2d here uses.
//   - Strides count elements (the row stride of packed fp4 is K, not K / 2); dim 0 (the blocked,
//     innermost dimension) is a multiple of 32 (`tensorops_constraint`).
// Inferred (no primary source; README): element (x, y)'s scale is scale byte
// [y * (stride1 / 32) + x / 32] of the plane (the layout of our [N, K/32] planes, and of the
// published MXFP4 kernels that run on macOS 27); fp4 codes are packed low nibble first; E8M0 byte
// 0 is 2^-127 and 0xFF NaN as in OCP MX; row strides are multiples of 128 bytes (the rule for
// buffer-backed format tensors, assumed for inline views too); slices keep dim 0's offset on a
// block boundary. Element decoding here is written from the OCP definitions, independently of
// shaders/mx_formats.h, so the kernels' results are checked against an independent decode.
#pragma once
#pragma clang system_header
#include <cmath>

#include "mtoh_tensor.h"
#include "tensor_binding.h"

namespace mtoh {
struct BufferArg;  // launch.h: what a generated binder passes for a [[buffer(n)]] parameter
namespace tops {
// BufferArg's index, read where BufferArg is complete (the binder's translation unit).
template <class A>
inline int arg_index(const A& a) {
  return a.index;
}
}  // namespace tops
}  // namespace mtoh

// Defined by the macOS 27 toolchain when tensor_blockwise exists (a secondary source; README).
#define __HAVE_TENSOR_MULTIPLANE__ 1

namespace mtoh::tops {
// T without its address space and cv-qualifiers (value_of cannot take the empty format structs).
template <class T>
struct strip_space {
  using type = std::remove_cv_t<T>;
};
template <class T>
struct strip_space<device T> {
  using type = std::remove_cv_t<T>;
};
template <class T>
struct strip_space<const device T> {
  using type = std::remove_cv_t<T>;
};
template <class T>
using strip_space_t = typename strip_space<T>::type;
}  // namespace mtoh::tops

namespace metal {

// Storage-only element types: a kernel never reads them directly, only through TensorOps.
struct metal_fp8_e4m3_format {};
struct metal_fp8_e5m2_format {};
struct metal_fp4_e2m1_format {};
struct metal_fp8_ue8m0_format {};

struct tensor_plane_scales {};

template <class Plane, class ScaleET, size_t B0, size_t B1>
struct tensor_blockwise {
  using scale_type = mtoh::tops::strip_space_t<ScaleET>;
  static_assert(std::is_same<Plane, tensor_plane_scales>::value, "tensor_blockwise: only tensor_plane_scales planes exist");
  static_assert(std::is_same<scale_type, metal_fp8_ue8m0_format>::value, "tensor_blockwise: scales must be metal_fp8_ue8m0_format");
  static_assert(B0 == 32 && B1 == 1, "tensor_blockwise: the block must be (32, 1)");
  using data_handle_type = ScaleET*;
  data_handle_type p_ = nullptr;
  tensor_blockwise() = default;
  explicit tensor_blockwise(data_handle_type p) : p_(p) {}
};

}  // namespace metal

namespace mtoh::tops {

template <class T>
struct format_traits {
  static constexpr int bits = 0;  // not a format type
};
template <>
struct format_traits<metal::metal_fp8_e4m3_format> {
  static constexpr int metal_type = 142;  // raw MTLTensorDataType
  static constexpr int bits = 8, ebits = 4, mbits = 3, bias = 7;
};
template <>
struct format_traits<metal::metal_fp8_e5m2_format> {
  static constexpr int metal_type = 141;  // raw MTLTensorDataType
  static constexpr int bits = 8, ebits = 5, mbits = 2, bias = 15;
};
template <>
struct format_traits<metal::metal_fp4_e2m1_format> {
  static constexpr int metal_type = 148;  // raw MTLTensorDataType
  static constexpr int bits = 4, ebits = 2, mbits = 1, bias = 1;
};
template <class T>
constexpr bool is_format_type = format_traits<T>::bits != 0;

// false, but only once a template using it is instantiated (a static_assert in a member that
// must not be called).
template <class... T>
struct dependent_false : std::false_type {};

// OCP minifloat decode: E4M3 has no infinities (S.1111.111 is NaN), E5M2 is IEEE-like, E2M1 has
// neither.
template <class F>
inline float decode_format(unsigned code) {
  using FT = format_traits<F>;
  const unsigned m = code & ((1u << FT::mbits) - 1);
  const unsigned e = (code >> FT::mbits) & ((1u << FT::ebits) - 1);
  const bool neg = (code >> (FT::ebits + FT::mbits)) & 1u;
  float v;
  if (FT::ebits == 4 && e == 15 && m == 7) return std::numeric_limits<float>::quiet_NaN();
  if (FT::ebits == 5 && e == 31) {
    v = m == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(float(m), 1 - FT::bias - FT::mbits);
  } else {
    v = std::ldexp(float(m + (1u << FT::mbits)), int(e) - FT::bias - FT::mbits);
  }
  return neg ? -v : v;
}

constexpr int kMetalTypeUE8M0 = 145;  // MTLTensorDataTypeMetalFloat8UE8M0

inline const char* metal_type_name(int t) {
  switch (t) {
    case 141: return "MetalFloat8E5M2";
    case 142: return "MetalFloat8E4M3";
    case 145: return "MetalFloat8UE8M0";
    case 148: return "MetalFloat4E2M1";
    case 0: return "none";
    default: return "another data type";
  }
}

inline float decode_ue8m0(unsigned b) {
  return b == 0xFFu ? std::numeric_limits<float>::quiet_NaN() : std::ldexp(1.0f, int(b) - 127);
}

template <class T>
struct blockwise_traits : std::false_type {};
template <class ET, class Ext, class Desc, class P, class S, size_t B0, size_t B1>
struct blockwise_traits<metal::tensor<ET, Ext, Desc, metal::tensor_blockwise<P, S, B0, B1>>> : std::true_type {};
template <class T>
constexpr bool is_scaled = blockwise_traits<T>::value;

template <class T, class = void>
struct operand_element {
  using type = void;  // cooperative tensors: element_type below
};
template <class T>
struct operand_element<T, std::void_t<typename T::value_type>> {
  using type = typename T::value_type;
};

// matmul2d on format-typed and scaled operands (docs/design/METAL.md "matmul2d", "Scale planes").
template <class L, class R, class Dst, bool TransposeLeft, bool TransposeRight>
constexpr bool check_scaled_operands() {
  using LE = typename operand_element<L>::type;
  using RE = typename operand_element<R>::type;
  static_assert(!is_scaled<L> || !TransposeLeft, "matmul2d: a scaled left operand must not be transposed");
  static_assert(!is_scaled<R> || TransposeRight, "matmul2d: a scaled right operand must be transposed (transpose_right)");
  static_assert(!is_scaled<Dst>, "matmul2d: the destination cannot carry scales");
  constexpr bool lf = is_format_type<LE>, rf = is_format_type<RE>;
  // Apple's table of data type combinations (MPPTensorOpsMatMul2d.h, macOS 27.0 SDK) lists half x
  // fp4/fp8 and the same fp4/fp8 format on both sides; no fp4/fp8 x half row, no float or bfloat
  // with either.
  static_assert(!(lf && std::is_same<RE, half>::value),
                "matmul2d: a fp8/fp4 left operand pairs with the same format on the right, never half (Apple's "
                "table has half x fp8/fp4, not fp8/fp4 x half)");
  static_assert(!(lf || rf) || std::is_same<LE, RE>::value || (rf && std::is_same<LE, half>::value) ||
                    (lf && std::is_same<RE, half>::value),  // reported above
                "matmul2d: a fp8/fp4 operand pairs with half or with the same format");
  return true;
}

}  // namespace mtoh::tops

namespace metal {

// A 2-D view of format-typed codes with a scale plane. Reading element (x, y) (innermost first)
// decodes the code and multiplies by its block's scale, which is what matmul2d consumes.
template <class ET, class Ext, class Desc, class P, class S, size_t B0, size_t B1>
struct tensor<ET, Ext, Desc, tensor_blockwise<P, S, B0, B1>> {
  using scales_type = tensor_blockwise<P, S, B0, B1>;
  using element_type = ET;
  using value_type = mtoh::tops::strip_space_t<ET>;
  using extents_type = Ext;
  using index_type = typename Ext::index_type;
  using data_handle_type = ET*;
  static constexpr size_t R = Ext::R;
  static_assert(R == 2, "the harness models rank-2 scaled tensors only");
  static_assert(mtoh::tops::is_format_type<value_type>,
                "scaled tensors: the data must be metal_fp8_e4m3_format, metal_fp8_e5m2_format or metal_fp4_e2m1_format "
                "(others are not modelled)");
  static constexpr int kBits = mtoh::tops::format_traits<value_type>::bits;

  ET* p_ = nullptr;  // the parent's origin: codes are addressed in elements from here
  Ext ext_;
  index_type st_[2] = {1, 0};
  index_type ox_ = 0, oy_ = 0;  // this view's origin inside the parent (elements)
  scales_type scales_;

  tensor() = default;
  template <class J>
  tensor(ET* data, Ext e, array<J, 2> strides, scales_type scales) : p_(data), ext_(e), scales_(scales) {
    static_assert(!std::is_same<Desc, tensor_handle>::value,
                  "a tensor_handle tensor comes from the host (a kernel argument bound to an MTLTensor); views "
                  "over pointers are tensor_inline");
    st_[0] = index_type(strides[0]);
    st_[1] = index_type(strides[1]);
    check_layout();
  }

  // A host-bound kernel argument: `tensor<ET, dextents<int, 2>, tensor_handle,
  // tensor_blockwise<...>> w [[buffer(n)]]` is built from the MTLTensor bound at n
  // (tensor_binding.h), never from a pointer: the generated binder passes the launch's
  // BufferArg for n, and this converting constructor (a non-template, so it wins over
  // BufferArg's conversion templates) takes the tensor bound there instead.
  tensor(const ::mtoh::BufferArg& a) : tensor(mtoh_bind(::mtoh::bound_tensor(mtoh::tops::arg_index(a)))) {}

  // The tensor's descriptor must be what the kernel declares: rank 2, ET's data type, a scale
  // plane of S's type with block factors (B0, B1), and planes that hold every element and scale
  // of its extents (a binding error otherwise, as a GPU would read garbage or fault).
  static tensor mtoh_bind(const ::mtoh::TensorBinding& b) {
    static_assert(std::is_same<Desc, tensor_handle>::value,
                  "a tensor kernel argument is a tensor_handle (the host binds an MTLTensor); tensor_inline views "
                  "are built in the kernel");
    using namespace mtoh::tops;
    constexpr int want = format_traits<value_type>::metal_type;
    if (b.rank != 2) fail("binding", "tensor argument: the kernel declares rank 2, the bound tensor has rank %d", b.rank);
    if (b.data_type != want) {
      fail("binding", "tensor argument: the kernel declares %s elements, the bound tensor holds %s (%d)",
           metal_type_name(want), metal_type_name(b.data_type), b.data_type);
    }
    if (b.scale_type != kMetalTypeUE8M0) {
      fail("binding", "tensor argument: the kernel declares a %s scale plane, the bound tensor has %s", metal_type_name(kMetalTypeUE8M0),
           b.scale_type == 0 ? "no scale plane" : metal_type_name(b.scale_type));
    }
    if (b.block[0] != long(B0) || b.block[1] != long(B1)) {
      fail("binding", "tensor argument: the kernel declares scale blocks of (%zu, %zu), the bound tensor's are (%ld, %ld)", B0, B1,
           long(b.block[0]), long(b.block[1]));
    }
    tensor t;
    t.p_ = (ET*)b.data;  // C-style: into the device address space
    t.ext_ = Ext(index_type(b.dims[0]), index_type(b.dims[1]));
    t.st_[0] = index_type(b.strides[0]);
    t.st_[1] = index_type(b.strides[1]);
    t.scales_ = scales_type((typename scales_type::data_handle_type)b.scales);
    t.check_layout();
    // Every element and every scale of the extents inside its plane.
    const long rows = long(b.dims[1]), cols = long(b.dims[0]);
    const long data_need = rows == 0 ? 0 : ((rows - 1) * long(t.st_[1]) + cols) * kBits / 8;
    const long scale_need = rows == 0 ? 0 : (rows - 1) * long(t.st_[1] / 32) + (cols + 31) / 32;
    if (long(b.data_bytes) < data_need) {
      fail("binding", "tensor argument: %ld x %ld elements with row stride %ld need %ld bytes of data plane, %zu are bound",
           rows, cols, long(t.st_[1]), data_need, b.data_bytes);
    }
    if (long(b.scale_bytes) < scale_need) {
      fail("binding", "tensor argument: %ld x %ld elements need %ld bytes of scale plane, %zu are bound", rows, cols,
           scale_need, b.scale_bytes);
    }
    return t;
  }

  // The rules for format tensors (the constructor's and a bound tensor's).
  void check_layout() const {
    if (st_[0] != 1) mtoh::tops::fail("tensorops_constraint", "scaled tensor view: strides[0] must be 1, got %d", int(st_[0]));
    if (ext_.extent(0) % 32 != 0 || st_[1] % 32 != 0) {
      mtoh::tops::fail("tensorops_constraint",
                       "scaled tensor view: extent(0) = %d and stride(1) = %d must be multiples of the 32-element block",
                       int(ext_.extent(0)), int(st_[1]));
    }
    if ((long(st_[1]) * kBits / 8) % 128 != 0) {
      mtoh::tops::fail("tensorops_constraint",
                       "scaled tensor view: a row stride of %d elements is %ld bytes, not a multiple of 128 (inferred rule)",
                       int(st_[1]), long(st_[1]) * kBits / 8);
    }
  }

  index_type get_extent(size_t r) const { return ext_.extent(r); }
  index_type get_stride(size_t r) const { return st_[r]; }
  uint64_t fingerprint() const {
    uint64_t h = mtoh::tops::mix(0, uint64_t((unsigned long)p_));
    h = mtoh::tops::mix(h, uint64_t((unsigned long)scales_.p_));
    for (size_t r = 0; r < 2; ++r) h = mtoh::tops::mix(mtoh::tops::mix(h, uint64_t(ext_.extent(r))), uint64_t(st_[r]));
    return mtoh::tops::mix(mtoh::tops::mix(h, uint64_t(ox_)), uint64_t(oy_));
  }

  // Element reads in a kernel: none. Format-typed elements have no value type a shader can hold,
  // and no declaration we have reads one: a scale-plane tensor is an operand of matmul2d only.
  template <class I>
  float operator[](I) const {
    static_assert(mtoh::tops::dependent_false<I>::value,
                  "scale-plane tensor: elements are read by matmul2d only (no operator[] on a fp8/fp4 tensor "
                  "with a tensor_blockwise plane)");
    return 0;
  }
  template <class... I>
  float operator()(I...) const {
    static_assert(mtoh::tops::dependent_false<I...>::value,
                  "scale-plane tensor: elements are read by matmul2d only (no operator() on a fp8/fp4 tensor "
                  "with a tensor_blockwise plane)");
    return 0;
  }
  template <class... I>
  float get(I...) const {
    static_assert(mtoh::tops::dependent_false<I...>::value,
                  "scale-plane tensor: elements are read by matmul2d only (no get on a fp8/fp4 tensor with a "
                  "tensor_blockwise plane)");
    return 0;
  }

  // The harness's matmul2d reads through this (never a kernel): the dequantized value of element
  // (x, y) of this view.
  float at(index_type x, index_type y) const {
    const long gx = long(ox_) + long(x), gy = long(oy_) + long(y);
    const long e = gy * long(st_[1]) + gx;  // element index from the parent's origin
    const auto* bytes = reinterpret_cast<const unsigned char device*>(p_);
    unsigned code;
    if (kBits == 8) code = bytes[e];
    else code = (bytes[e / 2] >> (4 * (e % 2))) & 0xFu;
    const auto* sb = reinterpret_cast<const unsigned char device*>(scales_.p_);
    const float s = mtoh::tops::decode_ue8m0(sb[gy * long(st_[1] / 32) + gx / 32]);
    return mtoh::tops::decode_format<value_type>(code) * s;
  }

  template <size_t... SE, class... O>
  auto slice(O... offsets) const {
    static_assert(sizeof...(O) == 2, "slice: one offset per dimension (innermost first)");
    using NE = typename mtoh::tops::slice_ext<index_type, 2, SE...>::type;
    const long off[2] = {long(offsets)...};
    if (off[0] % 32 != 0) {
      mtoh::tops::fail("tensor_slice", "slice of a scaled tensor: dimension 0 offset %ld is not on a 32-element block (inferred rule)",
                       off[0]);
    }
    NE ne;
    for (size_t r = 0; r < 2; ++r) {
      const long parent = long(ext_.extent(r));
      const long want = NE::static_extent(r) == dynamic_extent ? parent - off[r] : long(NE::static_extent(r));
      if (off[r] < 0 || off[r] > parent || off[r] + want > parent) {
        mtoh::tops::fail("tensor_slice",
                         "slice of dimension %zu (innermost first): offset %ld with extent %ld lies outside the "
                         "parent's extent %ld",
                         r, off[r], want, parent);
      }
      ne.e[r] = index_type(want);
    }
    tensor<ET, NE, Desc, scales_type> out;
    out.p_ = p_;
    out.ext_ = ne;
    out.st_[0] = st_[0];
    out.st_[1] = st_[1];
    out.ox_ = index_type(ox_ + off[0]);
    out.oy_ = index_type(oy_ + off[1]);
    out.scales_ = scales_;
    return out;
  }
};

}  // namespace metal
