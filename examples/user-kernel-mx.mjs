// A user kernel that multiplies by an MX-quantized weight as it is stored: y = x . w^T with w an
// mxfp4 (or mxfp8) QuantizedTensor declared a scale-plane input (tier 'tensorops-mx'), so the
// kernel receives it as ONE tensor, codes plus E8M0 scale plane, and matmul2d decodes and scales
// as it multiplies: no dequantization in the kernel, as our own qlinear_tensorops_mx does it.
// On a Mac this needs DeviceInfo.tier 'tensorops-mx' (macOS 27; untested on Metal so far); every
// other backend runs it in the MSL-on-CPU emulator (clang 17+ needed on Linux), for testing.
//
//   npm run example:kernel-mx
import { fileURLToPath } from 'node:url';

const [BM, BN] = [16, 32];

/** The kernel's description for dev.kernel(): x float16 [M, K], w [N, K] of `format`, y float32 [M, N]. */
export function mxLinear(format = 'mxfp4') {
  return {
    name: `mx_linear_${format}`,
    tier: 'tensorops-mx',
    inputs: [{ name: 'x', dtype: 'float16' }, { name: 'w', format, scalePlane: true }],
    outputs: [{ name: 'y', dtype: 'float32' }],
    constants: [{ name: 'M', type: 'int' }],
    templates: { BM, BN },
    threadgroup: [32, 1],
    source: `
      // w's extents are (K, N), innermost first. One SIMD-group per BM x BN tile of y.
      const int K = w.get_extent(0), N = w.get_extent(1);
      typedef tensor<device half, dextents<int32_t, 2>, tensor_inline> x_t;
      x_t tx((device half*)x, dextents<int32_t, 2>(K, M), array<int32_t, 2>{1, K});
      const int n0 = int(threadgroup_position_in_grid.x) * BN, m0 = int(threadgroup_position_in_grid.y) * BM;
      auto sx = tx.slice(0, m0);  // rows m0.. of x, all of K
      auto sw = w.slice(0, n0);   // rows n0.. of w, all of K: the right operand, transposed
      constexpr auto desc = matmul2d_descriptor(BM, BN, static_cast<int>(dynamic_extent), false, true, false,
                                                matmul2d_descriptor::mode::multiply_accumulate);
      matmul2d<desc, execution_simdgroup> mm;
      auto acc = mm.get_destination_cooperative_tensor<decltype(sx), decltype(sw), float>();
      for (int i = 0; i < acc.get_capacity(); ++i)
        if (acc.is_valid_element(i)) acc[i] = 0.0f;
      mm.run(sx, sw, acc);
      // Each element the thread holds, where get_multidimensional_index says ({column, row}).
      for (int i = 0; i < acc.get_capacity(); ++i) {
        if (!acc.is_valid_element(i)) continue;
        const auto idx = acc.get_multidimensional_index(i);
        const int m = m0 + int(idx[1]), n = n0 + int(idx[0]);
        if (m < M && n < N) y[ulong(m) * ulong(N) + ulong(n)] = acc[i];
      }
    `,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { open } = await import('metal-tensorops');
  const dev = await open();
  const [M, N, K] = [32, 64, 512];
  const random = (n, seed) => Float32Array.from({ length: n }, (_, i) => Math.sin((i + seed) * 12.9898) * 2);
  const x = dev.cast(dev.tensor(random(M * K, 1), [M, K]), 'float16');
  const w = dev.quantize(dev.tensor(random(N * K, 7), [N, K]), { format: 'mxfp4' });
  const kernel = await dev.kernel(mxLinear('mxfp4'));
  const [y] = kernel(x, w, { grid: [(N / BN) * 32, M / BM], shapes: { y: [M, N] }, constants: { M } });
  // The same with the built-in op on the same QuantizedTensor, queued behind it.
  const y2 = dev.linear(x, w, { outDtype: 'float32' });
  const [a, b] = [await y.toFloat32(), await y2.toFloat32()];
  // Both multiply the same decoded values in float32 and differ only in summation order.
  const largest = b.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  const matched = worst <= 1e-5 * largest;
  console.log(`${kernel.kernelName} on ${kernel.runsOn}: y[0][0..3] = ${Array.from(a.slice(0, 4), (v) => v.toFixed(4)).join(', ')}; ` +
    `${matched ? 'matches' : 'DOES NOT MATCH'} dev.linear (largest difference ${worst.toExponential(2)}, allowed ${(1e-5 * largest).toExponential(2)}: 1e-5 of max |y|)`);
  if (!matched) process.exitCode = 1;
  for (const t of [x, w, y, y2]) t.dispose();
  await dev.close();
}
