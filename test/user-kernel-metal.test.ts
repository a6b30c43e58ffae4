// dev.kernel() compiled and run by Metal: runs only where open() picks the metal backend (a Mac;
// skipped, and counted as skipped, everywhere else). Nothing here has run yet: it is what the
// macOS workflow checks the first time it runs on a Mac, with the same references as the
// emulator's suite (test/user-kernel.test.ts): the worked examples against the built-in ops, a
// dequantizing kernel against dequantize bit for bit, and a compile error at the user's line.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { open, type Device, type Format } from '../lib/index';
import { rmsNormResidual } from '../examples/user-kernel.mjs';
import { attentionCall, quantizedKvAttention } from '../examples/user-kernel-attention.mjs';
import { mxLinear } from '../examples/user-kernel-mx.mjs';

const random = (n: number, seed: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898 + seed) * 2);

describe('user kernels on the metal backend', () => {
  let dev: Device | undefined;
  beforeAll(async () => {
    const d = await open();
    if (d.info.backend === 'metal') dev = d;
    else await d.close();
  });
  afterAll(() => dev?.close());

  it('runs the fused residual + RMSNorm example: equal to add + rmsNorm', async (ctx) => {
    if (!dev) return ctx.skip();
    const k = await dev.kernel(rmsNormResidual('float32'));
    expect(k.runsOn).toBe('metal');
    const [rows, D] = [5, 777];
    const x = dev.tensor(random(rows * D, 1), [rows, D]);
    const r = dev.tensor(random(rows * D, 2), [rows, D]);
    const g = dev.tensor(random(D, 3), [D]);
    const [, y] = k(x, r, g, { grid: [rows * 256], shapes: { h: [rows, D], y: [rows, D] }, constants: { D, eps: 1e-5 } });
    const [got, want] = [await y.toFloat32(), await dev.rmsNorm(dev.add(x, r), g, { eps: 1e-5 }).toFloat32()];
    for (let i = 0; i < got.length; i++) expect(Math.abs(got[i] - want[i])).toBeLessThanOrEqual(1e-5 * (Math.abs(want[i]) + 1e-2));
  });

  it('runs the quantized-K/V attention example: equal to dev.attention with the same mxfp8 K and V', async (ctx) => {
    if (!dev) return ctx.skip();
    const k = await dev.kernel(quantizedKvAttention('float32', 64));
    const [B, Hq, Hkv, Lq, Lk, D] = [2, 4, 2, 3, 37, 64];
    const vs = random(B * Hkv * Lk * D, 6);
    const q = dev.tensor(random(B * Hq * Lq * D, 4), [B, Hq, Lq, D]);
    const kq = dev.quantize(dev.tensor(random(B * Hkv * Lk * D, 5), [B, Hkv, Lk, D]), { format: 'mxfp8' });
    const vq = dev.quantize(dev.tensor(vs, [B, Hkv, Lk, D]), { format: 'mxfp8' });
    const [o] = k(q, kq, vq, attentionCall(q.shape, kq.shape, true));
    const [got, want] = [await o.toFloat32(), await dev.attention(q, kq, vq, { causal: true }).toFloat32()];
    const vmax = vs.reduce((a, x) => Math.max(a, Math.abs(x)), 0);
    for (let i = 0; i < got.length; i++) expect(Math.abs(got[i] - want[i])).toBeLessThanOrEqual(1e-5 * vmax);
  });

  it('decodes every quantized format as dequantize does, bit for bit', async (ctx) => {
    if (!dev) return ctx.skip();
    for (const [format, shape, blockSize] of [['mxfp8', [3, 96]], ['mxfp4', [5, 160]], ['mxint8', [3, 32]], ['mxint4', [7, 64]],
      ['mxint2', [3, 96]], ['affine4', [5, 192], 64], ['affine8', [3, 96], 32]] as [Format, number[], number?][]) {
      const affine = format.startsWith('affine');
      const k = await dev.kernel({
        name: `dequant_${format}`, inputs: [{ name: 'w', format }], outputs: [{ name: 'o', dtype: 'float32' }],
        source: `const uint i = thread_position_in_grid.x;\nif (i < w_shape.rows * w_shape.cols) o[i] = mto_quantized_at<w_format>(w, w_scales, ${affine ? 'w_biases, ' : ''}w_shape, i / w_shape.cols, i % w_shape.cols);`,
      });
      const n = shape[0] * shape[1];
      const w = dev.quantize(dev.tensor(random(n, 7), shape), { format, blockSize });
      const [o] = k(w, { grid: [Math.ceil(n / 64) * 64], threadgroup: [64], shapes: { o: [n] } });
      const got = new Uint32Array((await o.toFloat32()).buffer);
      const want = new Uint32Array((await w.dequantize('float32').toFloat32()).buffer);
      expect(Array.from(got), format).toEqual(Array.from(want));
    }
  });

  // tensorops-mx only (macOS 27): the weight bound as the MTLTensor with its scale plane.
  it('runs the scale-plane matmul example (mxfp8 and mxfp4 weights): equal to dev.linear', async (ctx) => {
    if (!dev || dev.info.tier !== 'tensorops-mx') return ctx.skip();
    const [M, N, K] = [32, 64, 512];
    const x = dev.cast(dev.tensor(random(M * K, 8), [M, K]), 'float16');
    for (const format of ['mxfp8', 'mxfp4'] as const) {
      const k = await dev.kernel(mxLinear(format));
      const w = dev.quantize(dev.tensor(random(N * K, 9), [N, K]), { format });
      const [y] = k(x, w, { grid: [(N / 32) * 32, M / 16], shapes: { y: [M, N] }, constants: { M } });
      const [got, want] = [await y.toFloat32(), await dev.linear(x, w, { outDtype: 'float32' }).toFloat32()];
      const largest = want.reduce((a, v) => Math.max(a, Math.abs(v)), 0);
      for (let i = 0; i < got.length; i++) expect(Math.abs(got[i] - want[i]), format).toBeLessThanOrEqual(1e-5 * largest);
    }
  });

  it("rejects a source Metal does not compile with E_KERNEL at the user's line", async (ctx) => {
    if (!dev) return ctx.skip();
    const err = await dev.kernel({
      name: 'typo', outputs: [{ name: 'o', dtype: 'float32', shape: [1] }], source: 'const uint i = 0;\no[i] = undefined_value;',
    }).then(() => null, (e: { code: string; message: string }) => e);
    expect(err?.code).toBe('E_KERNEL');
    expect(err?.message).toMatch(/typo\.metal:2:\d+: error: use of undeclared identifier 'undefined_value'/);
  });
});
