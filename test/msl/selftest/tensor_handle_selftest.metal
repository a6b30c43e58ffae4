// Host-bound tensor arguments in the harness (MSL 4.1, driver: driver/tensor_handle_cases.cc): a
// kernel parameter `tensor<device F, dextents<int32_t, 2>, tensor_handle, tensor_blockwise<...>>`
// at [[buffer(n)]] is built from the tensor the host bound there (an MTLTensor with an E8M0 scale
// plane: launch.h TensorBinding), never from a pointer; what the host binds must be what the
// kernel declares, and a tensor where a pointer is declared (or the other way round) is a
// binding error.
#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>

#if defined(__HAVE_TENSOR_MULTIPLANE__)
using namespace metal;
using namespace mpp::tensor_ops;

typedef tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1> th_scales_t;
typedef tensor<device metal_fp8_e4m3_format, dextents<int32_t, 2>, tensor_handle, th_scales_t> th_weight_t;
typedef tensor<device metal_fp8_e4m3_format, dextents<int32_t, 2>, tensor_inline, th_scales_t> th_view_t;

// y[16, 32] = x[16, 128] @ w[32, 128]^T twice, w once as the host-bound tensor and once as an
// inline view the kernel builds over the same two planes (bound again as buffers): y[0..512) from
// the tensor, y[512..1024) from the view.
kernel void th_matmul(device half* x [[buffer(0)]], th_weight_t w [[buffer(1)]],
                      device uchar* codes [[buffer(2)]], device uchar* scales [[buffer(3)]],
                      device float* y [[buffer(4)]]) {
  tensor<device half, dextents<int32_t, 2>, tensor_inline> tx(x, dextents<int32_t, 2>(128, 16),
                                                               array<int32_t, 2>{1, 128});
  th_view_t tv((device metal_fp8_e4m3_format*)codes, dextents<int32_t, 2>(128, 32), array<int32_t, 2>{1, 128},
               th_scales_t((device metal_fp8_ue8m0_format*)scales));
  constexpr auto desc = matmul2d_descriptor(16, 32, static_cast<int>(dynamic_extent), false, true, false,
                                            matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_simdgroups<1>> mm;
  auto a = mm.get_destination_cooperative_tensor<decltype(tx), decltype(w), float>();
  auto b = mm.get_destination_cooperative_tensor<decltype(tx), decltype(tv), float>();
  for (int i = 0; i < a.get_capacity(); ++i)
    if (a.is_valid_element(i)) a[i] = 0.0f;
  for (int i = 0; i < b.get_capacity(); ++i)
    if (b.is_valid_element(i)) b[i] = 0.0f;
  mm.run(tx, w, a);
  mm.run(tx, tv, b);
  for (int i = 0; i < a.get_capacity(); ++i) {
    if (!a.is_valid_element(i)) continue;
    const auto idx = a.get_multidimensional_index(i);  // {n, m}
    y[int(idx[1]) * 32 + int(idx[0])] = a[i];
  }
  for (int i = 0; i < b.get_capacity(); ++i) {
    if (!b.is_valid_element(i)) continue;
    const auto idx = b.get_multidimensional_index(i);
    y[512 + int(idx[1]) * 32 + int(idx[0])] = b[i];
  }
}

// Takes the tensor and reports its extents: what a binding that does not match the declaration
// must never reach.
kernel void th_take(th_weight_t w [[buffer(0)]], device int* y [[buffer(1)]],
                    uint tid [[thread_index_in_threadgroup]]) {
  if (tid == 0) {
    y[0] = int(w.get_extent(0));
    y[1] = int(w.get_extent(1));
  }
}

// Reads its argument as a pointer: binding a tensor there is wrong.
kernel void th_pointer(device const uchar* w [[buffer(0)]], device int* y [[buffer(1)]],
                       uint tid [[thread_index_in_threadgroup]]) {
  if (tid == 0) y[0] = int(w[0]);
}
#endif  // __HAVE_TENSOR_MULTIPLANE__
