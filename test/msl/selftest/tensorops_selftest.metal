// Kernels that test the harness's TensorOps shim (MSL 4.0: <metal_tensor>, MetalPerformancePrimitives):
// known answers for tensor views, slices, matmul2d on tensors and cooperative tensors, reduce_rows,
// map_iterator and the left-input reuse both ways; and misuse the shim must report.
// Driver cases: test/msl/driver/tensorops_cases.cc.
#include <metal_stdlib>

#if __METAL_VERSION__ >= 400
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>

using namespace metal;
using namespace mpp::tensor_ops;

struct TopsShape {
  int M, N, K, reserved;
};

typedef tensor<device const float, dextents<int32_t, 2>, tensor_inline> tops_in_t;
typedef tensor<device float, dextents<int32_t, 2>, tensor_inline> tops_out_t;

// C[M, N] = A[M, K] @ W[N, K]^T on device tensors, a 16 x 32 tile per threadgroup of two
// SIMD-groups, edge tiles in M and N clipped by the slices' extents.
[[kernel]] void tops_matmul_device(device const float* a [[buffer(0)]], device const float* w [[buffer(1)]],
                                   device float* c [[buffer(2)]], constant TopsShape& s [[buffer(3)]],
                                   uint2 tg [[threadgroup_position_in_grid]]) {
  tops_in_t A(a, dextents<int32_t, 2>(s.K, s.M));
  tops_in_t W(w, dextents<int32_t, 2>(s.K, s.N));
  tops_out_t C(c, dextents<int32_t, 2>(s.N, s.M), array<int32_t, 2>{1, s.N});
  matmul2d<matmul2d_descriptor(16, 32, static_cast<int>(dynamic_extent), false, true), execution_simdgroups<2>> mm;
  auto mA = A.slice(0, int(tg.y) * 16);
  auto mW = W.slice(0, int(tg.x) * 32);
  auto mC = C.slice(int(tg.x) * 32, int(tg.y) * 16);
  mm.run(mA, mW, mC);
}

// P = exp(S - rowmax(S)) for S [32, 16], and rowmax: reduce_rows(max, identity -inf) and map_iterator.
[[kernel]] void tops_row_softmax(device const float* s [[buffer(0)]], device float* p [[buffer(1)]],
                                 device float* rmax [[buffer(2)]]) {
  matmul2d<matmul2d_descriptor(32, 16, static_cast<int>(dynamic_extent)), execution_simdgroups<4>> mm;
  tops_in_t S(s, dextents<int32_t, 2>(16, 32));
  auto cS = mm.get_destination_cooperative_tensor<tops_in_t, tops_in_t, float>();
  cS.load(S);
  auto cM = mm.get_row_reduction_destination_cooperative_tensor<tops_in_t, tops_in_t, float>();
  reduce_rows(cS, cM, reduction_operation::max, -INFINITY);
  for (int i = 0; i < cS.get_capacity(); ++i) {
    if (!cS.is_valid_element(i)) continue;
    auto it = cS.get_iterator(i);
    auto row = cM.map_iterator(it);
    cS[i] = exp(cS[i] - *row);
  }
  cS.store(tops_out_t(p, dextents<int32_t, 2>(16, 32)));
  cM.store(tensor<device float, dextents<int32_t, 1>, tensor_inline>(rmax, dextents<int32_t, 1>(32)));
}

// O[16, 16] = (A[16, 32] @ B1[32, 32]) @ B2[32, 16] in one SIMD-group: the first product's
// cooperative destination becomes the second's left input when is_compatible_as_left_input says
// so, and goes through threadgroup memory otherwise. path[0] says which way it went.
[[kernel]] void tops_left_input(device const float* a [[buffer(0)]], device const float* b1 [[buffer(1)]],
                                device const float* b2 [[buffer(2)]], device float* o [[buffer(3)]],
                                device int* path [[buffer(4)]], ushort lane [[thread_index_in_simdgroup]]) {
  tops_in_t A(a, dextents<int32_t, 2>(32, 16));
  tops_in_t B1(b1, dextents<int32_t, 2>(32, 32));
  tops_in_t B2(b2, dextents<int32_t, 2>(16, 32));
  matmul2d<matmul2d_descriptor(16, 32, static_cast<int>(dynamic_extent)), execution_simdgroup> mm1;
  matmul2d<matmul2d_descriptor(16, 16, 32), execution_simdgroup> mm2;
  auto c1 = mm1.get_destination_cooperative_tensor<tops_in_t, tops_in_t, float>();
  mm1.run(A, B1, c1);
  auto c2 = mm2.get_destination_cooperative_tensor<tops_in_t, tops_in_t, float>();
  threadgroup float stage[16][32];
  const bool direct = mm2.is_compatible_as_left_input<float, float, float>(c1);
  if (direct) {
    auto left = mm2.get_left_input_cooperative_tensor<float, float, float>(c1);
    mm2.run(left, B2, c2);
  } else {
    tensor<threadgroup float, dextents<int32_t, 2>, tensor_inline> t(&stage[0][0], dextents<int32_t, 2>(32, 16));
    c1.store(t);
    simdgroup_barrier(mem_flags::mem_threadgroup);
    mm2.run(t, B2, c2);
  }
  c2.store(tops_out_t(o, dextents<int32_t, 2>(16, 16)));
  if (lane == 0) path[0] = direct ? 1 : 0;
}

// ---- Misuse the shim must report.

// Writes every slot of a cooperative tensor, valid or not.
[[kernel]] void tops_misuse_invalid_element(device float* o [[buffer(0)]]) {
  matmul2d<matmul2d_descriptor(16, 16), execution_simdgroup> mm;
  auto c = mm.get_destination_cooperative_tensor<tops_in_t, tops_in_t, float>();
  for (int i = 0; i < c.get_capacity(); ++i) c[i] = 0.0f;
  c.store(tops_out_t(o, dextents<int32_t, 2>(16, 16)));
}

// Asks is_valid_element about the slot one past the capacity (a loop bound written `<=`).
[[kernel]] void tops_misuse_past_capacity(device float* o [[buffer(0)]]) {
  matmul2d<matmul2d_descriptor(16, 16), execution_simdgroup> mm;
  auto c = mm.get_destination_cooperative_tensor<tops_in_t, tops_in_t, float>();
  for (int i = 0; i <= c.get_capacity(); ++i)
    if (c.is_valid_element(i)) c[i] = 0.0f;
  c.store(tops_out_t(o, dextents<int32_t, 2>(16, 16)));
}

// Dynamic K with operands whose K extents disagree (an unclamped K tail).
[[kernel]] void tops_misuse_k_mismatch(device const float* a [[buffer(0)]], device float* o [[buffer(1)]]) {
  tops_in_t A(a, dextents<int32_t, 2>(32, 16));
  tops_in_t B(a, dextents<int32_t, 2>(16, 16));  // (n = 16, k = 16) against the left's k = 32
  tops_out_t C(o, dextents<int32_t, 2>(16, 16));
  matmul2d<matmul2d_descriptor(16, 16), execution_simdgroup> mm;
  mm.run(A, B, C);
}

// A static K that is not a multiple of 32 (truncated on macOS 26.1): use dynamic K for tails.
[[kernel]] void tops_misuse_static_k(device const float* a [[buffer(0)]], device float* o [[buffer(1)]]) {
  tops_in_t A(a, dextents<int32_t, 2>(48, 16));
  tops_in_t B(a, dextents<int32_t, 2>(48, 16));
  tops_out_t C(o, dextents<int32_t, 2>(16, 16));
  matmul2d<matmul2d_descriptor(16, 16, 48, false, true), execution_simdgroup> mm;
  mm.run(A, B, C);
}

// A static slice that runs past its parent.
[[kernel]] void tops_misuse_slice(device const float* a [[buffer(0)]], device float* o [[buffer(1)]]) {
  tops_in_t A(a, dextents<int32_t, 2>(32, 16));
  auto part = A.slice<32, 16>(0, 8);
  o[0] = part.get_extent(1);
}

// matmul2d run by half of a SIMD-group.
[[kernel]] void tops_misuse_divergent_run(device const float* a [[buffer(0)]], device float* o [[buffer(1)]],
                                          ushort lane [[thread_index_in_simdgroup]]) {
  tops_in_t A(a, dextents<int32_t, 2>(32, 16));
  tops_in_t B(a, dextents<int32_t, 2>(32, 16));
  tops_out_t C(o, dextents<int32_t, 2>(16, 16));
  matmul2d<matmul2d_descriptor(16, 16, static_cast<int>(dynamic_extent), false, true), execution_simdgroup> mm;
  mm.run(A, B, C);
  if (lane < 16) mm.run(A, B, C);
}

#endif  // __METAL_VERSION__ >= 400
