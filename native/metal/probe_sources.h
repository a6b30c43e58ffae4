// The tiny kernel each metal tier must compile (and make a pipeline of) before open() uses it,
// as llama.cpp probes its tensor path at init (ggml-metal-device.m). Each source is marked with
// its MSL version so `node scripts/check-metal.mjs --extract-msl DIR` can write it out for the
// macOS workflow to compile offline with `xcrun metal -std=...`.
#pragma once

namespace mto::metal {

// msl-source: probe_simdgroup std=metal3.1
// simdgroup_matrix (family Apple7) and bfloat (MSL 3.1), the two things the simdgroup kernels need.
inline constexpr const char* kProbeSimdgroup = R"msl(
#include <metal_stdlib>
using namespace metal;

kernel void probe(device const half* a [[buffer(0)]],
                  device const half* b [[buffer(1)]],
                  device const bfloat* scale [[buffer(2)]],
                  device float* c [[buffer(3)]]) {
  simdgroup_half8x8 ma;
  simdgroup_half8x8 mb;
  simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(float(scale[0]));
  simdgroup_load(ma, a, 8);
  simdgroup_load(mb, b, 8);
  simdgroup_multiply_accumulate(acc, ma, mb, acc);
  simdgroup_store(acc, c, 8);
}
)msl";

// msl-source: probe_tensorops std=metal4.0
// One 16x16 tile of matmul2d over tensor_inline views of plain buffers (how our kernels bind
// data on macOS 26), four simdgroups, K dynamic. 16x16 because an (8, 8) descriptor does not
// compile ("At least one of M or N must be a multiple of 16", llama.cpp #21048). Extents are
// innermost first: (columns, rows).
inline constexpr const char* kProbeTensorOps = R"msl(
#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

kernel void probe(device half* a [[buffer(0)]],
                  device half* b [[buffer(1)]],
                  device float* c [[buffer(2)]]) {
  tensor<device half, dextents<int32_t, 2>, tensor_inline> ta(a, dextents<int32_t, 2>(16, 16));
  tensor<device half, dextents<int32_t, 2>, tensor_inline> tb(b, dextents<int32_t, 2>(16, 16));
  tensor<device float, dextents<int32_t, 2>, tensor_inline> tc(c, dextents<int32_t, 2>(16, 16));
  matmul2d<matmul2d_descriptor(16, 16, dynamic_length_v<int>), execution_simdgroups<4>> op;
  op.run(ta, tb, tc);
}
)msl";

// msl-source: probe_tensorops_mx std=metal4.1
// half x (FP8 E4M3 with an E8M0 scale plane, blocks of (32, 1)). From docs/design/METAL.md's
// secondary facts about the macOS 27 headers (a scaled right operand must be transposed; the
// destination has no scales); unverified until a macOS 27 machine compiles it. If it is wrong
// the tier drops to tensorops with the compiler's message in fallbackReason.
inline constexpr const char* kProbeTensorOpsMx = R"msl(
#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

using scaled_fp8 = tensor<device metal_fp8_e4m3_format, dextents<int32_t, 2>, tensor_handle,
                          tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>>;

kernel void probe(tensor<device half, dextents<int32_t, 2>> a [[buffer(0)]],
                  scaled_fp8 b [[buffer(1)]],
                  device float* c [[buffer(2)]]) {
  tensor<device float, dextents<int32_t, 2>, tensor_inline> tc(c, dextents<int32_t, 2>(16, 16));
  matmul2d<matmul2d_descriptor(16, 16, 32, false, true), execution_simdgroups<4>> op;
  op.run(a, b, tc);
}
)msl";

// The probe kernel's function name in every source above.
inline constexpr const char* kProbeFunction = "probe";

}  // namespace mto::metal
