// A user kernel written in MSL: a fused residual add + RMSNorm (h = x + r; y = h / rms(h) * gamma),
// one threadgroup per row, as a decoder layer would call it between its attention and its MLP.
// On a Mac the metal backend compiles it with Metal (written, never run on a Mac yet); every other
// backend runs the same source in the MSL-on-CPU emulator (clang 17+ needed on Linux), for testing.
//
//   npm run example:kernel
import { fileURLToPath } from 'node:url';

/** The kernel's description for dev.kernel(); `dtype` is the activations' dtype. */
export function rmsNormResidual(dtype = 'float32') {
  return {
    name: 'rms_norm_residual',
    templates: { T: dtype, THREADS: 256 },
    inputs: [{ name: 'x', dtype }, { name: 'r', dtype }, { name: 'gamma', dtype }],
    outputs: [{ name: 'h', dtype }, { name: 'y', dtype }],
    constants: [{ name: 'D', type: 'uint' }, { name: 'eps', type: 'float' }],
    threadgroup: [256],
    source: `
      // One row per threadgroup; each thread sums the squares of a strided part of the row.
      const uint row = threadgroup_position_in_grid.x, t = thread_position_in_threadgroup.x;
      device const T* xr = x + row * D;
      device const T* rr = r + row * D;
      device T* hr = h + row * D;
      float ss = 0.0f;
      for (uint i = t; i < D; i += THREADS) {
        const float v = float(xr[i]) + float(rr[i]);
        hr[i] = T(v);
        ss += v * v;
      }
      // Sum over the threadgroup: within each SIMD-group, then across them.
      threadgroup float partial[THREADS / 32];
      ss = simd_sum(ss);
      if (thread_index_in_simdgroup == 0) partial[simdgroup_index_in_threadgroup] = ss;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      float total = 0.0f;
      for (uint s = 0; s < THREADS / 32; ++s) total += partial[s];
      const float scale = rsqrt(total / float(D) + eps);
      for (uint i = t; i < D; i += THREADS) y[row * D + i] = T((float(xr[i]) + float(rr[i])) * scale * float(gamma[i]));
    `,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { open } = await import('metal-tensorops');
  const dev = await open();
  const [rows, D] = [4, 1000];
  const random = (n) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898) * 2);
  const x = dev.tensor(random(rows * D), [rows, D]);
  const r = dev.tensor(random(rows * D).reverse(), [rows, D]);
  const gamma = dev.tensor(new Float32Array(D).fill(1.5), [D]);
  const kernel = await dev.kernel(rmsNormResidual());
  const [h, y] = kernel(x, r, gamma, {
    grid: [rows * 256], shapes: { h: [rows, D], y: [rows, D] }, constants: { D, eps: 1e-6 },
  });
  // The same with the built-in ops, queued behind it.
  const h2 = dev.add(x, r);
  const y2 = dev.rmsNorm(h2, gamma, { eps: 1e-6 });
  const [a, b] = [await y.toFloat32(), await y2.toFloat32()];
  // Both compute in float32 and differ only in the order of the sum of squares: a few ulps.
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / (Math.abs(b[i]) + 1e-2));
  const matched = worst <= 1e-5;
  console.log(`${kernel.kernelName} on ${kernel.runsOn}: y[0][0..3] = ${Array.from(a.slice(0, 4), (v) => v.toFixed(4)).join(', ')}; ` +
    `${matched ? 'matches' : 'DOES NOT MATCH'} add + rmsNorm (largest relative difference ${worst.toExponential(2)}, allowed 1e-5)`);
  if (!matched) process.exitCode = 1;
  for (const t of [x, r, gamma, h, y, h2, y2]) t.dispose();
  await dev.close();
}
