// Kernels that test the harness itself (driver/selftest_cases.cc): each shim feature on inputs
// with known answers, and one kernel per misuse the harness must report. Not product kernels.
#include <metal_stdlib>

using namespace metal;

// Every SIMD-group function on lane-dependent values; 12 results per thread.
[[kernel]] void simd_functions(device float* out [[buffer(0)]],
                               ushort lane [[thread_index_in_simdgroup]],
                               ushort simd [[simdgroup_index_in_threadgroup]]) {
  const float v = float(lane) + 1.0f;  // 1 .. 32
  device float* o = out + (uint(simd) * 32 + lane) * 12;
  o[0] = simd_sum(v);
  o[1] = simd_max(v);
  o[2] = simd_min(v);
  o[3] = simd_prefix_exclusive_sum(v);
  o[4] = simd_shuffle(v, ushort(31 - lane));
  o[5] = simd_shuffle_xor(v, ushort(1));
  o[6] = simd_shuffle_down(v, ushort(3));
  o[7] = simd_shuffle_up(v, ushort(3));
  o[8] = simd_broadcast(v, ushort(7));
  o[9] = float(simd_sum(uint(lane)));
  o[10] = simd_sum(float4(v, 2.0f * v, 0.0f, 1.0f)).y;
  o[11] = (simd_any(lane == 5) && simd_all(lane < 32) && !simd_all(lane < 31)) ? 1.0f : 0.0f;
}

// A tree reduction through threadgroup memory: out[group] = sum of the grid positions.
[[kernel]] void threadgroup_sum(device uint* out [[buffer(0)]],
                                ushort tid [[thread_index_in_threadgroup]],
                                uint group [[threadgroup_position_in_grid]],
                                uint gid [[thread_position_in_grid]]) {
  threadgroup uint partial[128];
  partial[tid] = gid;
  for (ushort stride = 64; stride > 0; stride /= 2) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid < stride) partial[tid] += partial[tid + stride];
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) out[group] = partial[0];
}

// simdgroup_matrix: c = a * b^T + I, b transposed on its load from threadgroup memory.
[[kernel]] void matrix_ops(device const float* a [[buffer(0)]],
                           device const float* b [[buffer(1)]],
                           device float* c [[buffer(2)]],
                           ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup float staged[64];
  staged[lane] = b[lane];
  staged[lane + 32] = b[lane + 32];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_float8x8 ma, mb;
  simdgroup_float8x8 mc = simdgroup_float8x8(1.0f);
  simdgroup_load(ma, a, 8);
  simdgroup_load(mb, staged, 8, ulong2(0, 0), true);
  simdgroup_multiply_accumulate(mc, ma, mb, mc);
  simdgroup_store(mc, c, 8);
}

// Vector constructors, swizzles, as_type, half literals and a few math functions.
[[kernel]] void vectors(device float* out [[buffer(0)]]) {
  const float4 a = float4(1.0f, 2.0f, 3.0f, 4.0f);
  const float2 b = a.zw + a.xy;                    // (4, 6)
  const float4 c = float4(b, a.x, float(0.5h));    // (4, 6, 1, 0.5)
  const uint4 bits = as_type<uint4>(c);
  out[0] = dot(a, c);                              // 21
  out[1] = float(bits.w == 0x3F000000u);           // 1
  out[2] = float(1.5h) * 2.0f;                     // 3
  out[3] = float4(2.0f).y + float(int3(7).z);      // 9
  out[4] = clamp(-3.0f, 0.0f, 1.0f) + max(2.0f, 5.0f) + fma(2.0f, 3.0f, 1.0f);  // 12
}

// ---- Misuse the harness must report.

// SIMD-group functions at different call sites in one SIMD-group.
[[kernel]] void misuse_divergent_simd(device float* out [[buffer(0)]],
                                      ushort lane [[thread_index_in_simdgroup]]) {
  float v = float(lane);
  if (lane < 16) v = simd_sum(v);
  else v = simd_max(v);
  out[lane] = v;
}

// A simdgroup_matrix operation executed by one lane only.
[[kernel]] void misuse_divergent_matrix(device float* out [[buffer(0)]],
                                        ushort lane [[thread_index_in_simdgroup]]) {
  const simdgroup_float8x8 m = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);
  if (lane == 0) simdgroup_store(m, out, 8);
}

// 36000 bytes of threadgroup memory: more than Apple GPUs have.
[[kernel]] void misuse_threadgroup_limit(device float* out [[buffer(0)]],
                                         ushort tid [[thread_index_in_threadgroup]]) {
  threadgroup float big[9000];
  big[tid] = 1.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = big[0];
}

// A shuffle from a lane that has returned.
[[kernel]] void misuse_inactive_lane(device float* out [[buffer(0)]],
                                     ushort lane [[thread_index_in_simdgroup]]) {
  if (lane >= 16) return;
  out[lane] = simd_shuffle(float(lane), ushort(lane + 16));
}

// A shuffle delta that differs between lanes (MSL requires it uniform).
[[kernel]] void misuse_nonuniform_delta(device float* out [[buffer(0)]],
                                        ushort lane [[thread_index_in_simdgroup]]) {
  out[lane] = simd_shuffle_down(float(lane), ushort(lane & 1));
}

// Thread 0 reads x[-1]: invisible when the buffer ends at its guard page (the byte before it is
// readable slack), reported when it starts at one.
[[kernel]] void misuse_underflow(device const float* x [[buffer(0)]],
                                 device float* out [[buffer(1)]],
                                 uint gid [[thread_position_in_grid]]) {
  const float before = x[int(gid) - 1];
  out[gid] = x[gid] + (before - before) * 0.0f;
}

// Declares a 16-byte constant argument; the test binds 8 bytes.
[[kernel]] void misuse_params_size(constant uint4& p [[buffer(0)]], device uint* out [[buffer(1)]]) {
  out[0] = p.x + p.w;
}

// Thread 127 writes one element past the end of a threadgroup array.
[[kernel]] void misuse_threadgroup_overrun(device uint* out [[buffer(0)]],
                                           ushort tid [[thread_index_in_threadgroup]]) {
  threadgroup uint slots[128];
  slots[tid + 1] = tid;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = slots[tid];
}

// Every lane loads its own matrix (a lane-dependent pointer): undefined on the GPU.
[[kernel]] void misuse_matrix_pointer(device const float* a [[buffer(0)]],
                                      device float* out [[buffer(1)]],
                                      ushort lane [[thread_index_in_simdgroup]]) {
  simdgroup_float8x8 m;
  simdgroup_load(m, a + (lane & 1), 8);
  simdgroup_store(m, out, 8);
}

// Declares at most 32 threads per threadgroup; the test launches 64, which Metal refuses.
[[max_total_threads_per_threadgroup(16 * 2)]] [[kernel]] void misuse_thread_limit(
    device uint* out [[buffer(0)]], ushort tid [[thread_index_in_threadgroup]]) {
  out[tid] = tid;
}

// An index one past an array of matrices (array-bounds allows forming that address).
[[kernel]] void misuse_matrix_past_array(device float* out [[buffer(0)]], constant uint& n [[buffer(1)]]) {
  simdgroup_float8x8 m[2];
  for (uint t = 0; t <= n; ++t) m[t] = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);
  simdgroup_store(m[0], out, 8);
}

// Lanes write threadgroup memory that the SIMD-group then loads as a matrix, with no
// simdgroup_barrier in between: lanes that load early read what others have not written yet.
[[kernel]] void misuse_missing_simd_barrier(device float* out [[buffer(0)]],
                                            ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup float tile[64];
  tile[lane] = float(lane);
  tile[lane + 32] = float(lane + 32);
  simdgroup_float8x8 m;
  simdgroup_load(m, tile, 8);
  simdgroup_store(m, out, 8);
}
