// Quantized linear y[M, N] = x[M, K] @ w[N, K]^T (+ bias[N]) for the tensorops-mx tier (MSL 4.1,
// macOS 27): the MX formats whose element type Metal knows -- mxfp8 (metal_fp8_e4m3_format),
// mxfp8_e5m2 (metal_fp8_e5m2_format), mxfp4 (metal_fp4_e2m1_format) -- with float16 x, the only
// activation type they take (docs/design/METAL.md). Any other format, dtype or row size runs
// the tensorops kernels instead (native/core/dispatch_plan.cc says why in fallback_reason).
//
// No dequantization in the kernel: the weight is ONE tensor argument bound by the host, the
// MTLTensor with an E8M0 scale plane it made over w's codes and scales (`tensor_blockwise` scale
// plane, block 32 x 1, native/metal/qtensor.mm; bound through the Metal 4 argument table with its
// gpuResourceID, WWDC26 talk 330), the activations a plain half view in device memory, and one
// matmul2d per BM x BN tile of y over the whole K decodes and scales as it multiplies. The weights
// are the right operand as stored, [N, K] with the blocks along K, which is the transposed form a
// scaled right operand requires (our reading of the 27-era header; docs/design/METAL.md). The
// tensor's layout (K columns by N rows, innermost first, fp4 element 2i in the low nibble of byte
// i, scales [N, K/32]) is the host's (dispatch_plan.h TensorSlot); the harness models the binding
// as a handle with planes (test/msl/README.md). The destination is a cooperative tensor (float
// accumulation, zeroed first): the epilogue adds the bias and writes each element the thread holds
// where get_multidimensional_index says, inside y only, rounded once to the output dtype Out
// (float32, float16 or bfloat16). Shapes and slots: qlinear_params.h.
#include <metal_stdlib>

#include "mx_formats.h"
#include "qlinear_params.h"

#if __METAL_VERSION__ >= 400
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
#endif

#if defined(__HAVE_TENSOR_MULTIPLANE__)
using namespace metal;
using namespace mpp::tensor_ops;

// Metal's element type for an MX format.
template <int FMT>
struct mto_metal_format;
template <>
struct mto_metal_format<MTO_FORMAT_MXFP8_E4M3> {
  typedef metal_fp8_e4m3_format type;
};
template <>
struct mto_metal_format<MTO_FORMAT_MXFP8_E5M2> {
  typedef metal_fp8_e5m2_format type;
};
template <>
struct mto_metal_format<MTO_FORMAT_MXFP4> {
  typedef metal_fp4_e2m1_format type;
};

// The weight argument: codes of Metal's type for FMT with their E8M0 scale plane, from the host,
// at the weight's slot (QLINEAR_BUFFER_W_CODES: the other kernels bind the codes buffer there).
template <int FMT>
using mto_mx_weight = tensor<device typename mto_metal_format<FMT>::type, dextents<int32_t, 2>, tensor_handle,
                             tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>>;

template <typename Out, int FMT>
[[kernel]] void qlinear_tensorops_mx_gemm(
    device const half* x [[buffer(QLINEAR_BUFFER_X)]],
    mto_mx_weight<FMT> tw [[buffer(QLINEAR_BUFFER_W_CODES)]],
    device const float* bias [[buffer(QLINEAR_BUFFER_BIAS)]],
    device Out* y [[buffer(QLINEAR_BUFFER_Y)]],
    constant QLinearParams& p [[buffer(QLINEAR_BUFFER_PARAMS)]],
    uint2 group [[threadgroup_position_in_grid]]) {
  constexpr int BM = QLINEAR_MX_BM, BN = QLINEAR_MX_BN;
  // Element type without const (reported to fail Apple's static_assert): the view through a cast.
  typedef tensor<device half, dextents<int32_t, 2>, tensor_inline> x_t;

  const int M = p.M, N = p.N, K = p.K;
  // Innermost first: x is M rows of K halves; the weight tensor is N rows of K codes.
  x_t tx((device half*)x, dextents<int32_t, 2>(K, M), array<int32_t, 2>{1, K});

  const int m0 = int(group.y) * BM, n0 = int(group.x) * BN;
  auto sx = tx.slice(0, m0);  // rows m0.. of x, all of K
  auto sw = tw.slice(0, n0);  // weight rows n0.., all of K
  // Zeros, then multiply_accumulate: correct whether mode::multiply overwrites the destination or
  // (as the header's C = A*B + C comment reads) adds to it (matmul_tensorops.metal says more).
  constexpr auto desc = matmul2d_descriptor(BM, BN, static_cast<int>(dynamic_extent), false, true, false,
                                            matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_simdgroups<QLINEAR_MX_SIMDGROUPS>> mm;
  auto acc = mm.get_destination_cooperative_tensor<decltype(sx), decltype(sw), float>();
  for (int i = 0; i < acc.get_capacity(); ++i)
    if (acc.is_valid_element(i)) acc[i] = 0.0f;
  mm.run(sx, sw, acc);

  // Each thread stores the elements it holds, wherever the layout put them; elements past M or N
  // (undefined in an edge tile) are skipped.
  for (int i = 0; i < acc.get_capacity(); ++i) {
    if (!acc.is_valid_element(i)) continue;
    const auto idx = acc.get_multidimensional_index(i);  // {column (n), row (m)}
    const int my = m0 + int(idx[1]), ny = n0 + int(idx[0]);
    if (my < M && ny < N) y[ulong(my) * ulong(N) + ulong(ny)] = Out(acc[i] + (p.has_bias ? bias[ny] : 0.0f));
  }
}

// Host names: qlinear_tensorops_mx_gemm_<format>_f16 (x is float16), then "_of16" / "_obf16" for
// a float16 / bfloat16 y, as in qlinear.metal.
#define MTO_QLINEAR_MX_OUT(Out, oname)                                                                  \
  MTO_KERNEL_INSTANCE("qlinear_tensorops_mx_gemm_mxfp8_f16" oname, qlinear_tensorops_mx_gemm, Out,      \
                      MTO_FORMAT_MXFP8_E4M3)                                                            \
  MTO_KERNEL_INSTANCE("qlinear_tensorops_mx_gemm_mxfp8_e5m2_f16" oname, qlinear_tensorops_mx_gemm, Out, \
                      MTO_FORMAT_MXFP8_E5M2)                                                            \
  MTO_KERNEL_INSTANCE("qlinear_tensorops_mx_gemm_mxfp4_f16" oname, qlinear_tensorops_mx_gemm, Out,      \
                      MTO_FORMAT_MXFP4)

MTO_QLINEAR_MX_OUT(float, "")
MTO_QLINEAR_MX_OUT(half, "_of16")
MTO_QLINEAR_MX_OUT(bfloat, "_obf16")

#endif  // __HAVE_TENSOR_MULTIPLANE__
