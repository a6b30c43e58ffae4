// A user kernel written in MSL over a quantized KV cache: attention of float32 or float16 queries
// against mxfp8 K and V, the kernel a user writes to try a variant of decode attention (another
// score function, another cache format) before asking the library for it. One query row per
// threadgroup of one SIMD-group (32 threads): each thread holds D/32 elements of the row, the
// scores are simd_sum reductions, and the softmax is online (FlashAttention's running max and
// sum), so no [Lq, Lk] matrix is ever written. K and V are decoded in the kernel with
// mto_quantized_at, the library's own decode (docs/design/API.md "User kernels").
// On a Mac the metal backend compiles it (never run on a Mac yet); elsewhere the MSL-on-CPU
// emulator runs it (clang 17+ needed on Linux), for testing.
//
//   npm run example:kernel-attention
import { fileURLToPath } from 'node:url';

/**
 * The kernel's description for dev.kernel(): q [B, Hq, Lq, D] of `dtype`, k and v [B, Hkv, Lk, D]
 * mxfp8 QuantizedTensors, o [B, Hq, Lq, D] of `dtype`; D (the head size) a multiple of 32.
 * Constants at each call: Hq, Hkv, Lq, Lk, scale, causal (bottom-right aligned, as dev.attention).
 */
export function quantizedKvAttention(dtype = 'float32', headDim = 64) {
  return {
    name: 'attention_mxfp8_kv',
    templates: { T: dtype, D: headDim },
    inputs: [{ name: 'q', dtype }, { name: 'k', format: 'mxfp8' }, { name: 'v', format: 'mxfp8' }],
    outputs: [{ name: 'o', dtype }],
    constants: [
      { name: 'Hq', type: 'uint' }, { name: 'Hkv', type: 'uint' }, { name: 'Lq', type: 'uint' }, { name: 'Lk', type: 'uint' },
      { name: 'scale', type: 'float' }, { name: 'causal', type: 'bool' },
    ],
    threadgroup: [32],
    source: `
      constexpr uint PER_LANE = D / 32;
      const uint row = threadgroup_position_in_grid.x;  // the query row: (b, h, i) flattened
      const uint lane = thread_index_in_simdgroup;
      const uint i = row % Lq, h = (row / Lq) % Hq, b = row / (Lq * Hq);
      const uint kv0 = (b * Hkv + h / (Hq / Hkv)) * Lk;  // the first key row of this query head's KV head
      // Keys this row sees: all, or (causal) j <= i + Lk - Lq.
      const int last = causal ? int(i) + int(Lk) - int(Lq) : int(Lk) - 1;
      const uint seen = uint(clamp(last + 1, 0, int(Lk)));

      float qs[PER_LANE], acc[PER_LANE];
      for (uint e = 0; e < PER_LANE; ++e) {
        qs[e] = float(q[row * D + lane + 32 * e]);
        acc[e] = 0.0f;
      }
      float m = -INFINITY, l = 0.0f;  // running max of the scores and sum of exp(score - m)
      for (uint j = 0; j < seen; ++j) {
        float part = 0.0f;
        for (uint e = 0; e < PER_LANE; ++e) part += qs[e] * mto_quantized_at<k_format>(k, k_scales, k_shape, kv0 + j, lane + 32 * e);
        const float s = simd_sum(part) * scale;
        const float m_new = max(m, s);
        const float correction = exp(m - m_new);  // rescales what was summed under the old max (0 at the first key)
        const float p = exp(s - m_new);
        l = l * correction + p;
        for (uint e = 0; e < PER_LANE; ++e) {
          acc[e] = acc[e] * correction + p * mto_quantized_at<v_format>(v, v_scales, v_shape, kv0 + j, lane + 32 * e);
        }
        m = m_new;
      }
      // A row that sees no key is zeros, as dev.attention's.
      for (uint e = 0; e < PER_LANE; ++e) o[row * D + lane + 32 * e] = T(l > 0.0f ? acc[e] / l : 0.0f);
    `,
  };
}

/** The call's options for q [B, Hq, Lq, D] and k [B, Hkv, Lk, D]. */
export function attentionCall(qShape, kShape, causal = false) {
  const [B, Hq, Lq, D] = qShape;
  const [, Hkv, Lk] = kShape;
  return {
    grid: [B * Hq * Lq * 32],
    shapes: { o: qShape },
    constants: { Hq, Hkv, Lq, Lk, scale: 1 / Math.sqrt(D), causal },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { open } = await import('metal-tensorops');
  const dev = await open();
  const [B, Hq, Hkv, Lq, Lk, D] = [1, 8, 2, 4, 100, 64];
  const random = (n, seed) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898 + seed) * 2);
  const q = dev.tensor(random(B * Hq * Lq * D, 1), [B, Hq, Lq, D]);
  // A quantized KV cache: mxfp8 K and V, as dev.quantize makes them.
  const k = dev.quantize(dev.tensor(random(B * Hkv * Lk * D, 2), [B, Hkv, Lk, D]), { format: 'mxfp8' });
  const v = dev.quantize(dev.tensor(random(B * Hkv * Lk * D, 3), [B, Hkv, Lk, D]), { format: 'mxfp8' });
  const kernel = await dev.kernel(quantizedKvAttention('float32', D));
  const [o] = kernel(q, k, v, attentionCall(q.shape, k.shape, true));
  // The same with the built-in op, queued behind it.
  const o2 = dev.attention(q, k, v, { causal: true });
  const [a, b] = [await o.toFloat32(), await o2.toFloat32()];
  // Both decode K and V to the same float32 values and differ only in the order of their float32
  // sums and exp's last ulp: a few ulps of the values' scale.
  const vs = v.dequantize('float32');
  const scale = (await vs.toFloat32()).reduce((m, x) => Math.max(m, Math.abs(x)), 0);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  const matched = worst <= 1e-5 * scale;
  console.log(`${kernel.kernelName} on ${kernel.runsOn}: o[0][0][0][0..3] = ${Array.from(a.slice(0, 4), (x) => x.toFixed(4)).join(', ')}; ` +
    `${matched ? 'matches' : 'DOES NOT MATCH'} dev.attention (largest difference ${worst.toExponential(2)}, allowed ${(1e-5 * scale).toExponential(2)}: 1e-5 of max |v|)`);
  if (!matched) process.exitCode = 1;
  for (const t of [q, k, v, vs, o, o2]) t.dispose();
  await dev.close();
}
