// Dense matmul y[batch, M, N] = a[batch, M, K] @ b[K, N] (or b[batch, K, N]) for the tensorops
// tier (MSL 4.0, TensorOps): a and b float32, float16 or bfloat16 (T, one dtype for both: mixed
// bfloat x half operands are refused by macOS 26.2+, llama.cpp #17986), y of type Out = T (the
// operands' dtype, as matmul defines it). Compiled only at MSL 4.0 (docs/design/METAL.md).
//
// Dense operands need no staging: each threadgroup views its rows of a and its columns of b in
// device memory, and one matmul2d over the threadgroup's SIMD-groups adds the BM x BN tile over
// the whole K into a float cooperative destination it zeroed first. K is dynamic (read from the
// views), so any K works (a static K that is not a multiple of 32 is truncated on macOS 26.1; ggml
// 33c9ea5e). The destination is float, not a view of y, because matmul2d's accumulation into a
// half or bfloat tensor is undocumented: each thread rounds the elements it holds to Out once, at
// the coordinates get_multidimensional_index gives, and stores those inside y (the views run from
// the tile's origin to the matrix's end; elements past them are undefined in an edge tile). Shapes
// and slots: matmul_params.h; plans: native/core/dispatch_plan.cc.
#include <metal_stdlib>

#include "matmul_params.h"

#if __METAL_VERSION__ >= 400
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>

using namespace metal;
using namespace mpp::tensor_ops;

template <typename T, typename Out, int BM, int BN>
[[kernel]] void matmul_tensorops_gemm(
    device const T* a [[buffer(MATMUL_BUFFER_A)]],
    device const T* b [[buffer(MATMUL_BUFFER_B)]],
    device Out* y [[buffer(MATMUL_BUFFER_Y)]],
    constant MatmulKernelParams& p [[buffer(MATMUL_BUFFER_PARAMS)]],
    uint3 group [[threadgroup_position_in_grid]]) {
  const int M = p.M, N = p.N, K = p.K;
  const ulong batch = group.z;
  // Element types without const: reported to fail a static_assert in Apple's headers (a
  // secondary source), so the read-only operands are viewed through a cast.
  typedef tensor<device T, dextents<int32_t, 2>, tensor_inline> operand_t;
  // Extents and strides innermost first: a is M rows of K, b K rows of N.
  operand_t ta((device T*)a + batch * ulong(M) * ulong(K), dextents<int32_t, 2>(K, M), array<int32_t, 2>{1, K});
  operand_t tb((device T*)b + (p.b_batched ? batch * ulong(K) * ulong(N) : 0ul), dextents<int32_t, 2>(N, K),
               array<int32_t, 2>{1, N});
  device Out* yb = y + batch * ulong(M) * ulong(N);

  const int m0 = int(group.y) * BM, n0 = int(group.x) * BN;
  auto sa = ta.slice(0, m0);  // rows m0.. of a, all of K
  auto sb = tb.slice(n0, 0);  // columns n0.. of b, all of K
  // Zeros, then multiply_accumulate: a fresh cooperative destination holds undefined values, and
  // Apple's header reads both ways (its comment says C = A*B + C whatever the mode; mode::multiply
  // says C = A*B), so only this order is right under either reading (MLX's NAX GEMM does the same).
  constexpr auto desc = matmul2d_descriptor(BM, BN, static_cast<int>(dynamic_extent), false, false, false,
                                            matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_simdgroups<MATMUL_TOPS_SIMDGROUPS>> mm;
  auto acc = mm.template get_destination_cooperative_tensor<decltype(sa), decltype(sb), float>();
  for (int i = 0; i < acc.get_capacity(); ++i)
    if (acc.is_valid_element(i)) acc[i] = 0.0f;
  mm.run(sa, sb, acc);

  for (int i = 0; i < acc.get_capacity(); ++i) {
    if (!acc.is_valid_element(i)) continue;
    const auto idx = acc.get_multidimensional_index(i);  // {column (n), row (m)}
    const int my = m0 + int(idx[1]), ny = n0 + int(idx[0]);
    if (my < M && ny < N) yb[ulong(my) * ulong(N) + ulong(ny)] = Out(acc[i]);
  }
}

// Host names: matmul_tensorops_gemm_<dtype> (BM x BN tiles) and _<dtype>_t64 (MATMUL_TOPS_BIG).
#define MTO_MATMUL_TOPS(T, tname)                                                                            \
  MTO_KERNEL_INSTANCE("matmul_tensorops_gemm_" tname, matmul_tensorops_gemm, T, T, MATMUL_TOPS_BM, MATMUL_TOPS_BN) \
  MTO_KERNEL_INSTANCE("matmul_tensorops_gemm_" tname "_t64", matmul_tensorops_gemm, T, T, MATMUL_TOPS_BIG,       \
                      MATMUL_TOPS_BIG)
MTO_MATMUL_TOPS(float, "f32")
MTO_MATMUL_TOPS(half, "f16")
MTO_MATMUL_TOPS(bfloat, "bf16")

#endif  // __METAL_VERSION__ >= 400
