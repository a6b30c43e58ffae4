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
// Every TensorOps API the tensorops tier's libraries use (attention_tensorops, qlinear_tensorops,
// matmul_tensorops; test/shader-embed.test.ts checks the list against them), at their MSL
// version, so that a macOS whose headers lack one fails here, with the compiler's message, rather
// than in a library later: tensor_inline views over device and threadgroup memory with strides,
// slice, matmul2d over execution_simdgroups<4> (half and bfloat operands in device and in
// threadgroup memory, dynamic K, a transposed right operand) and over execution_simdgroup (static K), cooperative destinations zeroed and
// accumulated into (mode::multiply_accumulate), row-reduction destinations, reduce_rows with its
// identity (max and sum), get_iterator + map_iterator, get_multidimensional_index, and a
// cooperative tensor stored to threadgroup memory. Threadgroup: 4 SIMD-groups of 32. Extents are
// innermost first: (columns, rows); (8, 8) descriptors do not compile (llama.cpp #21048).
inline constexpr const char* kProbeTensorOps = R"msl(
#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

typedef tensor<threadgroup float, dextents<int32_t, 2>, tensor_inline> probe_tg_t;

// Each valid element of `ct` at out[row * ld + column].
template <typename CT>
void probe_store(thread CT& ct, device float* out, int ld) {
  for (int i = 0; i < ct.get_capacity(); ++i) {
    if (!ct.is_valid_element(i)) continue;
    const auto idx = ct.get_multidimensional_index(i);
    out[idx[1] * ld + idx[0]] = ct[i];
  }
}

template <typename CT>
void probe_zero(thread CT& ct) {
  for (int i = 0; i < ct.get_capacity(); ++i)
    if (ct.is_valid_element(i)) ct[i] = 0.0f;
}

// A 16 x 16 tile of a[16, 32] b[16, 32]^T over the threadgroup, operands of type T in device memory.
template <typename T>
void probe_device_tile(device T* a, device T* b, device float* out) {
  typedef tensor<device T, dextents<int32_t, 2>, tensor_inline> view_t;
  view_t ta(a, dextents<int32_t, 2>(32, 16), array<int32_t, 2>{1, 32});
  view_t tb(b, dextents<int32_t, 2>(32, 16), array<int32_t, 2>{1, 32});
  auto sa = ta.slice(0, 0);
  auto sb = tb.slice(0, 0);
  constexpr auto desc = matmul2d_descriptor(16, 16, static_cast<int>(dynamic_extent), false, true, false,
                                            matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_simdgroups<4>> mm;
  auto acc = mm.get_destination_cooperative_tensor<decltype(sa), decltype(sb), float>();
  probe_zero(acc);
  mm.run(sa, sb, acc);
  probe_store(acc, out, 16);
}

// The same tile from 16-bit operands staged in threadgroup memory, as qlinear_tensorops stages an
// exact weight: a float tile's storage viewed as T, rows of 36.
template <typename T>
void probe_threadgroup_tile(device T* src, threadgroup float* storage, ushort tid, device float* out) {
  threadgroup T* t = (threadgroup T*)storage;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (int i = tid; i < 32 * 36; i += 128) t[i] = src[i % 1024];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  typedef tensor<threadgroup T, dextents<int32_t, 2>, tensor_inline> tile_t;
  tile_t ta(t, dextents<int32_t, 2>(32, 16), array<int32_t, 2>{1, 36});
  tile_t tb(t + 16 * 36, dextents<int32_t, 2>(32, 16), array<int32_t, 2>{1, 36});
  constexpr auto desc = matmul2d_descriptor(16, 16, static_cast<int>(dynamic_extent), false, true, false,
                                            matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_simdgroups<4>> mm;
  auto acc = mm.get_destination_cooperative_tensor<tile_t, tile_t, float>();
  probe_zero(acc);
  mm.run(ta, tb, acc);
  probe_store(acc, out, 16);
}

kernel void probe(device half* h [[buffer(0)]],
                  device bfloat* bf [[buffer(1)]],
                  device float* out [[buffer(2)]],
                  ushort tid [[thread_index_in_threadgroup]],
                  ushort sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float stage[(16 + 32 + 32) * 36];
  threadgroup float ps[4][16 * 36];
  probe_device_tile(h, h + 512, out);
  probe_device_tile(bf, bf + 512, out + 256);
  probe_threadgroup_tile(h, &stage[0], tid, out + 2624);
  probe_threadgroup_tile(bf, &stage[0], tid, out + 2880);
  threadgroup_barrier(mem_flags::mem_threadgroup);

  // One SIMD-group's 16 rows of attention: S = Q K^T, row max and sum, P = exp2(S - max), O = P V.
  for (int i = tid; i < (16 + 32 + 32) * 36; i += 128) stage[i] = float(h[i % 1024]);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  probe_tg_t tq(&stage[0], dextents<int32_t, 2>(32, 16), array<int32_t, 2>{1, 36});
  probe_tg_t tk(&stage[16 * 36], dextents<int32_t, 2>(32, 32), array<int32_t, 2>{1, 36});
  probe_tg_t tv(&stage[48 * 36], dextents<int32_t, 2>(32, 32), array<int32_t, 2>{1, 36});
  probe_tg_t tp(&ps[sg][0], dextents<int32_t, 2>(32, 16), array<int32_t, 2>{1, 36});
  constexpr auto qk_desc = matmul2d_descriptor(16, 32, static_cast<int>(dynamic_extent), false, true, false,
                                               matmul2d_descriptor::mode::multiply_accumulate);
  constexpr auto pv_desc = matmul2d_descriptor(16, 32, 32, false, false, false,
                                               matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<qk_desc, execution_simdgroup> qk;
  matmul2d<pv_desc, execution_simdgroup> pv;
  auto cS = qk.get_destination_cooperative_tensor<probe_tg_t, probe_tg_t, float>();
  auto cM = qk.get_row_reduction_destination_cooperative_tensor<probe_tg_t, probe_tg_t, float>();
  auto cL = qk.get_row_reduction_destination_cooperative_tensor<probe_tg_t, probe_tg_t, float>();
  auto cO = pv.get_destination_cooperative_tensor<probe_tg_t, probe_tg_t, float>();
  probe_zero(cS);
  probe_zero(cO);
  qk.run(tq, tk, cS);
  reduce_rows(cS, cM, reduction_operation::max, -INFINITY);
  for (int i = 0; i < cS.get_capacity(); ++i) {
    if (!cS.is_valid_element(i)) continue;
    auto it = cS.get_iterator(i);
    cS[i] = exp2(cS[i] - *cM.map_iterator(it));
  }
  reduce_rows(cS, cL, reduction_operation::sum, 0.0f);
  cS.store(tp);
  simdgroup_barrier(mem_flags::mem_threadgroup);
  pv.run(tp, tv, cO);
  probe_store(cO, out + 512 + sg * 512, 32);
  for (int i = 0; i < cL.get_capacity(); ++i)
    if (cL.is_valid_element(i)) out[2560 + sg * 16 + cL.get_multidimensional_index(i)[0]] = cL[i];
}
)msl";

// msl-source: probe_tensorops_mx std=metal4.1
// What the tensorops-mx tier's libraries use beyond the tensorops probe (which this tier needs
// too: core/tiers.cc), at MSL 4.1: half x (fp8 E4M3, fp8 E5M2, fp4 E2M1 with an E8M0 scale plane
// of blocks (32, 1)) through tensor_inline views as qlinear_tensorops_mx builds them (the scaled
// right operand transposed, the destination without scales), the same weight as a host-bound
// tensor_handle argument (qlinear_tensorops_mx's), and a cooperative destination fed
// to the next matmul2d as its left input (is_compatible_as_left_input /
// get_left_input_cooperative_tensor, attention_tensorops_mx). From docs/design/METAL.md's
// secondary facts about the macOS 27 headers; unverified until a macOS 27 machine compiles it. If
// it is wrong the tier drops to tensorops with the compiler's message in fallbackReason.
// Threadgroup: 4 SIMD-groups of 32.
inline constexpr const char* kProbeTensorOpsMx = R"msl(
#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

typedef tensor<threadgroup float, dextents<int32_t, 2>, tensor_inline> probe_tg_t;

template <typename CT>
void probe_store(thread CT& ct, device float* out, int ld) {
  for (int i = 0; i < ct.get_capacity(); ++i) {
    if (!ct.is_valid_element(i)) continue;
    const auto idx = ct.get_multidimensional_index(i);
    out[idx[1] * ld + idx[0]] = ct[i];
  }
}

template <typename CT>
void probe_zero(thread CT& ct) {
  for (int i = 0; i < ct.get_capacity(); ++i)
    if (ct.is_valid_element(i)) ct[i] = 0.0f;
}

// x[16, 256] (half) times tw[16, 256]^T, a scaled weight tensor (inline view or host-bound).
template <typename W>
void probe_times(device half* x, W tw, device float* out) {
  typedef tensor<device half, dextents<int32_t, 2>, tensor_inline> x_t;
  x_t tx(x, dextents<int32_t, 2>(256, 16), array<int32_t, 2>{1, 256});
  auto sx = tx.slice(0, 0);
  auto sw = tw.slice(0, 0);
  constexpr auto desc = matmul2d_descriptor(16, 16, static_cast<int>(dynamic_extent), false, true, false,
                                            matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_simdgroups<4>> mm;
  auto acc = mm.get_destination_cooperative_tensor<decltype(sx), decltype(sw), float>();
  probe_zero(acc);
  mm.run(sx, sw, acc);
  probe_store(acc, out, 16);
}

// The same with w in format F over its codes and [16, 8] scale plane, as an inline view.
template <typename F>
void probe_scaled(device half* x, device uchar* codes, device uchar* scales, device float* out) {
  typedef tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1> scales_t;
  typedef tensor<device F, dextents<int32_t, 2>, tensor_inline, scales_t> w_t;
  w_t tw((typename w_t::data_handle_type)codes, dextents<int32_t, 2>(256, 16), array<int32_t, 2>{1, 256},
         scales_t((typename scales_t::data_handle_type)scales));
  probe_times(x, tw, out);
}

// The weight as qlinear_tensorops_mx takes it: a host-bound MTLTensor with its scale plane.
typedef tensor<device metal_fp8_e4m3_format, dextents<int32_t, 2>, tensor_handle,
               tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>> probe_handle_t;

kernel void probe(device half* x [[buffer(0)]],
                  device uchar* codes [[buffer(1)]],
                  device uchar* scales [[buffer(2)]],
                  device float* out [[buffer(3)]],
                  probe_handle_t th [[buffer(4)]],
                  ushort tid [[thread_index_in_threadgroup]],
                  ushort sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float stage[(16 + 32 + 32) * 36];
  probe_scaled<metal_fp8_e4m3_format>(x, codes, scales, out);
  probe_scaled<metal_fp8_e5m2_format>(x, codes, scales, out + 256);
  probe_scaled<metal_fp4_e2m1_format>(x, codes, scales, out + 512);
  probe_times(x, th, out + 2816);

  // P = Q K^T straight into P V as a cooperative left input, where the layouts allow.
  for (int i = tid; i < (16 + 32 + 32) * 36; i += 128) stage[i] = float(x[i % 4096]);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  probe_tg_t tq(&stage[0], dextents<int32_t, 2>(32, 16), array<int32_t, 2>{1, 36});
  probe_tg_t tk(&stage[16 * 36], dextents<int32_t, 2>(32, 32), array<int32_t, 2>{1, 36});
  probe_tg_t tv(&stage[48 * 36], dextents<int32_t, 2>(32, 32), array<int32_t, 2>{1, 36});
  constexpr auto qk_desc = matmul2d_descriptor(16, 32, static_cast<int>(dynamic_extent), false, true, false,
                                               matmul2d_descriptor::mode::multiply_accumulate);
  constexpr auto pv_desc = matmul2d_descriptor(16, 32, 32, false, false, false,
                                               matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<qk_desc, execution_simdgroup> qk;
  matmul2d<pv_desc, execution_simdgroup> pv;
  auto cS = qk.get_destination_cooperative_tensor<probe_tg_t, probe_tg_t, float>();
  auto cO = pv.get_destination_cooperative_tensor<probe_tg_t, probe_tg_t, float>();
  probe_zero(cS);
  probe_zero(cO);
  qk.run(tq, tk, cS);
  if (pv.is_compatible_as_left_input<float, float, float>(cS)) {
    auto cP = pv.get_left_input_cooperative_tensor<float, float, float>(cS);
    pv.run(cP, tv, cO);
  }
  probe_store(cO, out + 768 + sg * 512, 32);
}
)msl";

// The probe kernel's function name in every source above.
inline constexpr const char* kProbeFunction = "probe";

}  // namespace mto::metal
