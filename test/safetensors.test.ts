// safetensors loading: files written here (dense, MLX-quantized by a float64 MLX reference, FP8
// with block scales, sharded), values read back through the device against float64 references.
// Damaged files: safetensors-bad-files.test.ts.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  QuantizedTensor, Tensor, inspectSafetensors, loadSafetensors, writeSafetensors, type Device, type SafetensorsWriteTensor,
} from '../lib/index';
import { numberToBf16, numberToBf16Fast, numberToF16, f16ToNumber } from '../lib/loaders/safetensors/convert';
import { randn, rng } from './helpers/compare';
import { disposeAll, safetensorsFixtures, uniform } from './helpers/safetensors-fixtures';
import {
  FP4_VALUES, bf16Bits, e4m3, f16Bits, mlxAffineQuantize, packMlx, roundBf16, roundF16, scaleBytes, type ScaleDType,
} from './helpers/mlx-quant';

const fx = safetensorsFixtures();
const { newDir, write, expectFormatError } = fx;
const dispose = disposeAll;
let dev: Device;
beforeAll(() => { dev = fx.dev(); });
async function values(t: Tensor | QuantizedTensor | undefined): Promise<Float32Array> {
  expect(t).toBeDefined();
  if (t instanceof QuantizedTensor) {
    const d = t.dequantize('float32');
    try { return await d.toFloat32(); } finally { d.dispose(); }
  }
  return (t as Tensor).toFloat32();
}
function expectExact(got: Float32Array, want: ArrayLike<number>, what: string): void {
  expect(got.length, what).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const w = Math.fround(want[i]);
    if (!(Object.is(got[i], w) || (got[i] === 0 && w === 0) || (Number.isNaN(got[i]) && Number.isNaN(w)))) {
      expect.fail(`${what}[${i}]: got ${got[i]}, want ${w} (${want[i]})`);
    }
  }
}

describe('number conversions', () => {
  it('float16 and bfloat16 rounding agree with the float64-bit references', () => {
    const r = rng(7);
    for (let i = 0; i < 20000; i++) {
      const x = (r() - 0.5) * 2 ** Math.floor(r() * 80 - 40);
      expect(numberToBf16(x), `bf16 ${x}`).toBe(bf16Bits(roundBf16(x)));
      expect(numberToBf16Fast(x), `bf16 fast ${x}`).toBe(numberToBf16(x));
      if (Math.abs(x) < 65504) expect(numberToF16(x), `f16 ${x}`).toBe(f16Bits(roundF16(x)));
      expect(f16ToNumber(numberToF16(x))).toBe(roundF16(x));
    }
    // Ties, and the edges of the ranges.
    for (const x of [1 + 2 ** -8, 1 + 3 * 2 ** -8, 65504, 65519.99, 65520, 2 ** -24, 2 ** -25, 1.5 * 2 ** -25, 3e38, 3.4e38, -0]) {
      expect(numberToBf16Fast(x), `bf16 ${x}`).toBe(numberToBf16(x));
      expect(numberToBf16(x), `bf16 ${x}`).toBe(bf16Bits(roundBf16(x)));
      expect(numberToF16(x), `f16 ${x}`).toBe(f16Bits(roundF16(x)));
    }
  });
});

describe('dense tensors', () => {
  it('F32, F16, BF16, I32, I64, BOOL, F64 and a scalar, with __metadata__ and config.json', async () => {
    const f32 = Float32Array.from(uniform(24, 1));
    const f16 = Uint16Array.from(uniform(24, 2), (v) => f16Bits(roundF16(v)));
    const bf16 = Uint16Array.from(uniform(24, 3), (v) => bf16Bits(roundBf16(v)));
    const i32 = Int32Array.from([1, -2, 2 ** 31 - 1, -(2 ** 31)]);
    const i64 = BigInt64Array.from([0n, -5n, 2147483647n]);
    const bool = Uint8Array.from([1, 0, 1]);
    const f64 = Float64Array.from([Math.PI, 1 / 3, 0.5]);
    const d = write([
      { name: 'a', dtype: 'F32', shape: [2, 3, 4], data: f32 },
      { name: 'b', dtype: 'F16', shape: [4, 6], data: f16 },
      { name: 'c', dtype: 'BF16', shape: [24], data: bf16 },
      { name: 'ids', dtype: 'I32', shape: [4], data: i32 },
      { name: 'pos', dtype: 'I64', shape: [3], data: i64 },
      { name: 'mask', dtype: 'BOOL', shape: [3], data: bool },
      { name: 'f64', dtype: 'F64', shape: [3], data: f64 },
      { name: 'scalar', dtype: 'F32', shape: [], data: Float32Array.from([2.5]) },
      { name: 'empty', dtype: 'F32', shape: [0, 4], data: new Float32Array(0) },
    ], { model_type: 'llama', hidden_size: 8 }, { format: 'pt' });
    const progress: number[] = [];
    const m = await loadSafetensors(dev, d, { onProgress: (p) => progress.push(p.tensorsLoaded) });
    expect(m.config).toEqual({ model_type: 'llama', hidden_size: 8 });
    expect(m.metadata).toEqual({ format: 'pt' });
    expect(progress).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(m.report.skipped.map((s) => s.name)).toEqual(['empty']);
    const a = m.tensors.get('a') as Tensor;
    expect([a.dtype, a.shape]).toEqual(['float32', [2, 3, 4]]);
    expectExact(await a.toFloat32(), f32, 'a');
    expect(Array.from((await (m.tensors.get('b') as Tensor).data()) as Uint16Array)).toEqual(Array.from(f16));
    expect((m.tensors.get('c') as Tensor).dtype).toBe('bfloat16');
    expect(Array.from((await (m.tensors.get('c') as Tensor).data()) as Uint16Array)).toEqual(Array.from(bf16));
    expect(Array.from((await (m.tensors.get('ids') as Tensor).data()) as Int32Array)).toEqual(Array.from(i32));
    expect(Array.from((await (m.tensors.get('pos') as Tensor).data()) as Int32Array)).toEqual([0, -5, 2147483647]);
    expect((m.tensors.get('mask') as Tensor).dtype).toBe('bool');
    expectExact(await values(m.tensors.get('f64')), f64, 'f64');
    const f64Report = m.report.conversions.find((c) => c.name === 'f64')!;
    expect(f64Report.exact).toBe(false);
    expect(f64Report.maxRelError).toBeLessThanOrEqual(2 ** -24);
    expect((m.tensors.get('scalar') as Tensor).shape).toEqual([]);
    expect(Array.from(await values(m.tensors.get('scalar')))).toEqual([2.5]);
    expect(m.report.conversions.filter((c) => c.name !== 'f64').every((c) => c.exact)).toBe(true);
    dispose(m);
  });

  it('a filter reads only what it keeps; integer types with no dtype here are E_FORMAT unless left out', async () => {
    const d = write([
      { name: 'keep', dtype: 'F32', shape: [2], data: Float32Array.from([1, 2]) },
      { name: 'u8', dtype: 'U8', shape: [2], data: Uint8Array.from([1, 2]) },
    ]);
    await expectFormatError(d, /'u8' is U8.*options\.filter/);
    const m = await loadSafetensors(dev, d, { filter: (n) => n !== 'u8' });
    expect([...m.tensors.keys()]).toEqual(['keep']);
    expect(m.report.bytesRead).toBe(8);
    dispose(m);
  });

  it('inspectSafetensors: the table, metadata and config without reading data', async () => {
    const d = write([
      { name: 'x', dtype: 'BF16', shape: [2, 3], data: new Uint16Array(6) },
      { name: 'y', dtype: 'F8_E4M3', shape: [4], data: new Uint8Array(4) },
    ], { a: 1 }, { k: 'v' });
    const info = await inspectSafetensors(d);
    expect(info.config).toEqual({ a: 1 });
    expect(info.metadata).toEqual({ k: 'v' });
    expect(info.tensors.map((t) => [t.name, t.dtype, t.shape, t.bytes])).toEqual([['x', 'BF16', [2, 3], 12], ['y', 'F8_E4M3', [4], 4]]);
  });

  it('a file path, and options checked', async () => {
    const d = write([{ name: 'x', dtype: 'F32', shape: [1], data: Float32Array.from([1]) }]);
    const m = await loadSafetensors(dev, join(d, 'model.safetensors'));
    expect([...m.tensors.keys()]).toEqual(['x']);
    expect(m.config).toBeNull();
    dispose(m);
    await expect(loadSafetensors(dev, d, { fp8: 'int8' } as never)).rejects.toMatchObject({ code: 'E_ARG' });
    await expect(loadSafetensors(dev, d, { bogus: 1 } as never)).rejects.toMatchObject({ code: 'E_ARG' });
    await expect(loadSafetensors(dev, join(d, 'nope'))).rejects.toMatchObject({ code: 'E_LOAD' });
  });
});

describe('MLX quantized layers', () => {
  const cases: { bits: number; gs: number; dt: ScaleDType; format: string }[] = [
    { bits: 4, gs: 64, dt: 'F16', format: 'affine4' },
    { bits: 4, gs: 32, dt: 'BF16', format: 'affine4' },
    { bits: 8, gs: 128, dt: 'BF16', format: 'affine8' },
    { bits: 8, gs: 64, dt: 'F32', format: 'affine8' },
    { bits: 2, gs: 64, dt: 'F16', format: 'affine4' },
    { bits: 3, gs: 32, dt: 'BF16', format: 'affine4' },
    { bits: 5, gs: 64, dt: 'F16', format: 'affine8' },
    { bits: 6, gs: 128, dt: 'BF16', format: 'affine8' },
  ];
  for (const { bits, gs, dt, format } of cases) {
    it(`affine ${bits}-bit group ${gs}, ${dt} scales -> ${format}, values equal MLX's`, async () => {
      const N = 6, K = 256;
      const w = uniform(N * K, bits * 100 + gs, -0.3, 0.5);
      const q = mlxAffineQuantize(w, K, bits, gs, dt);
      // Float32 scales and biases round to float16 (the report says by how much); the others carry over.
      const s16 = q.scales.map(roundF16), b16 = q.biases.map(roundF16);
      const want = q.values.map((_, i) => s16[(i / gs) | 0] * q.codes[i] + b16[(i / gs) | 0]);
      const d = write([
        { name: 'layer.weight', dtype: 'U32', shape: [N, (K * bits) / 32], data: q.packed },
        { name: 'layer.scales', dtype: dt, shape: [N, K / gs], data: scaleBytes(q.scales, dt) },
        { name: 'layer.biases', dtype: dt, shape: [N, K / gs], data: scaleBytes(q.biases, dt) },
        { name: 'norm.weight', dtype: 'F32', shape: [K], data: new Float32Array(K).fill(1) },
      ], { quantization: { group_size: gs, bits } });
      const m = await loadSafetensors(dev, d);
      expect([...m.tensors.keys()].sort()).toEqual(['layer.weight', 'norm.weight']);
      const t = m.tensors.get('layer.weight') as QuantizedTensor;
      expect([t.format, t.blockSize, t.shape]).toEqual([format, gs, [N, K]]);
      expectExact(await values(t), want, 'dequantized');
      const c = m.report.conversions.find((r) => r.name === 'layer.weight')!;
      expect(c.exact).toBe(dt !== 'F32');
      let maxAbs = 0;
      for (let i = 0; i < want.length; i++) maxAbs = Math.max(maxAbs, Math.abs(want[i] - q.values[i]));
      expect(c.maxAbsError).toBe(maxAbs);
      if (dt === 'F32') {
        console.log(`MLX affine ${bits}-bit, float32 scales -> float16: max abs error ${c.maxAbsError.toExponential(2)} ` +
          `(max |value| ${c.maxAbsValue!.toFixed(3)}; a quantization step ${(q.scales[0]).toExponential(2)})`);
      }
      expect(c.source).toBe(`mlx affine ${bits}-bit group ${gs}, ${dt} scales`);
      dispose(m);
    });
  }

  it('bits and group size from per-layer config entries, or from the shapes when unambiguous', async () => {
    const K = 128;
    const a = mlxAffineQuantize(uniform(2 * K, 11), K, 8, 32, 'F16');
    const b = mlxAffineQuantize(uniform(2 * K, 12), K, 5, 64, 'F16');
    const c = mlxAffineQuantize(uniform(2 * K, 13), K, 4, 64, 'F16');
    const layer = (name: string, q: typeof a, bits: number, gs: number): SafetensorsWriteTensor[] => [
      { name: `${name}.weight`, dtype: 'U32', shape: [2, (K * bits) / 32], data: q.packed },
      { name: `${name}.scales`, dtype: 'F16', shape: [2, K / gs], data: scaleBytes(q.scales, 'F16') },
      { name: `${name}.biases`, dtype: 'F16', shape: [2, K / gs], data: scaleBytes(q.biases, 'F16') },
    ];
    // 8-bit group 32 and 4-bit group 64 have the same shapes: config.json's override decides.
    const d = write([...layer('a', a, 8, 32), ...layer('b', b, 5, 64), ...layer('c', c, 4, 64)],
      { quantization: { group_size: 64, bits: 4, a: { group_size: 32, bits: 8 }, b: { bits: 5 } } });
    const m = await loadSafetensors(dev, d);
    expectExact(await values(m.tensors.get('a.weight')), a.values, 'a');
    expectExact(await values(m.tensors.get('b.weight')), b.values, 'b');
    expectExact(await values(m.tensors.get('c.weight')), c.values, 'c');
    dispose(m);
    // No config: 5-bit group 64 is the only fit of b's shapes; a's fits are ambiguous.
    const d2 = write(layer('b', b, 5, 64));
    const m2 = await loadSafetensors(dev, d2);
    expectExact(await values(m2.tensors.get('b.weight')), b.values, 'b inferred');
    dispose(m2);
    await expectFormatError(write(layer('a', a, 8, 32)), /fit .*8-bit group 32.*config\.json's quantization must say/);
  });

  it('measured: bfloat16 scales and biases of normally distributed weights, by weight size', async () => {
    const K = 4096, N = 64, lines: string[] = [];
    for (const sigma of [0.02, 2e-3, 2e-4, 2e-5]) {
      const w = randn(N * K, 7, sigma);
      const q = mlxAffineQuantize(w, K, 4, 64, 'BF16');
      const d = write([
        { name: 'l.weight', dtype: 'U32', shape: [N, K / 8], data: q.packed },
        { name: 'l.scales', dtype: 'BF16', shape: [N, K / 64], data: scaleBytes(q.scales, 'BF16') },
        { name: 'l.biases', dtype: 'BF16', shape: [N, K / 64], data: scaleBytes(q.biases, 'BF16') },
      ], { quantization: { group_size: 64, bits: 4 } });
      const m = await loadSafetensors(dev, d);
      const c = m.report.conversions[0];
      let groups = 0;
      for (let g = 0; g < q.scales.length; g++) if (roundF16(q.scales[g]) !== q.scales[g] || roundF16(q.biases[g]) !== q.biases[g]) groups++;
      lines.push(`  sigma ${sigma}: ${groups} of ${q.scales.length} groups inexact; max abs error ${c.maxAbsError.toExponential(2)} ` +
        `= ${(c.maxAbsError / Math.abs(q.scales.reduce((a, v) => Math.max(a, Math.abs(v)), 0))).toFixed(3)} of the largest step`);
      if (sigma >= 2e-3) expect(c.exact).toBe(true);
      dispose(m);
    }
    console.log(`MLX affine 4-bit group 64, BF16 scales/biases -> float16:\n${lines.join('\n')}`);
  });

  it('bfloat16 scales and biases outside float16\'s normal range: converted, error measured and reported', async () => {
    const K = 64;
    const w = uniform(2 * K, 21, 0, 1e-4);  // tiny weights: scales and biases in float16's subnormals
    const q = mlxAffineQuantize(w, K, 4, 64, 'BF16');
    const d = write([
      { name: 'l.weight', dtype: 'U32', shape: [2, K / 8], data: q.packed },
      { name: 'l.scales', dtype: 'BF16', shape: [2, 1], data: scaleBytes(q.scales, 'BF16') },
      { name: 'l.biases', dtype: 'BF16', shape: [2, 1], data: scaleBytes(q.biases, 'BF16') },
    ], { quantization: { group_size: 64, bits: 4 } });
    const m = await loadSafetensors(dev, d);
    const c = m.report.conversions[0];
    expect(c.exact).toBe(false);
    const got = await values(m.tensors.get('l.weight'));
    let maxAbs = 0;
    for (let i = 0; i < got.length; i++) maxAbs = Math.max(maxAbs, Math.abs(got[i] - q.values[i]));
    // The report's error is the parameters' (float64); the device adds at most float32 rounding.
    expect(Math.abs(c.maxAbsError - maxAbs)).toBeLessThanOrEqual(maxAbs * 2 ** -20 + 1e-12);
    expect(c.maxAbsError).toBeGreaterThan(0);
    expect(c.maxAbsError).toBeLessThan(2 ** -24 * 16);  // half a float16 subnormal step times the largest code, plus the bias's
    dispose(m);
  });

  it('a scale past float16\'s range makes the layer dense float32', async () => {
    const K = 32;
    const w = uniform(K, 22, -1e6, 1e6);
    const q = mlxAffineQuantize(w, K, 4, 32, 'BF16');
    const d = write([
      { name: 'l.weight', dtype: 'U32', shape: [1, K / 8], data: q.packed },
      { name: 'l.scales', dtype: 'BF16', shape: [1, 1], data: scaleBytes(q.scales, 'BF16') },
      { name: 'l.biases', dtype: 'BF16', shape: [1, 1], data: scaleBytes(q.biases, 'BF16') },
    ], { quantization: { group_size: 32, bits: 4 } });
    const m = await loadSafetensors(dev, d);
    const t = m.tensors.get('l.weight') as Tensor;
    expect(t).toBeInstanceOf(Tensor);
    expect(t.dtype).toBe('float32');
    expectExact(await t.toFloat32(), q.values, 'dense');
    expect(m.report.conversions[0].target).toBe('float32');
    dispose(m);
  });

  it('mxfp4 and mxfp8 modes (uint8 E8M0 scales) keep their bytes; nvfp4 becomes exact bfloat16', async () => {
    const r = rng(31), N = 3, K = 64;
    const codes4 = Uint8Array.from({ length: N * K }, () => Math.floor(r() * 16));
    const codes8 = Uint8Array.from({ length: N * K }, () => { let c; do c = Math.floor(r() * 256); while ((c & 0x7f) === 0x7f); return c; });
    const e8 = Uint8Array.from({ length: (N * K) / 32 }, () => 110 + Math.floor(r() * 30));
    const e4 = Uint8Array.from({ length: (N * K) / 16 }, () => 0x20 + Math.floor(r() * 0x40));
    const d = write([
      { name: 'a.weight', dtype: 'U32', shape: [N, K / 8], data: packMlx(codes4, 4) },
      { name: 'a.scales', dtype: 'U8', shape: [N, K / 32], data: e8 },
      { name: 'b.weight', dtype: 'U32', shape: [N, K / 4], data: packMlx(codes8, 8) },
      { name: 'b.scales', dtype: 'U8', shape: [N, K / 32], data: e8 },
      { name: 'c.weight', dtype: 'U32', shape: [N, K / 8], data: packMlx(codes4, 4) },
      { name: 'c.scales', dtype: 'U8', shape: [N, K / 16], data: e4 },
    ]);
    const m = await loadSafetensors(dev, d);
    const want = (codes: Uint8Array, dec: (c: number) => number, scale: (i: number) => number) =>
      Array.from(codes, (c, i) => dec(c) * scale(i));
    const a = m.tensors.get('a.weight') as QuantizedTensor;
    expect([a.format, a.shape]).toEqual(['mxfp4', [N, K]]);
    expectExact(await values(a), want(codes4, (c) => FP4_VALUES[c], (i) => 2 ** (e8[i >> 5] - 127)), 'mxfp4');
    const b = m.tensors.get('b.weight') as QuantizedTensor;
    expect([b.format, b.shape]).toEqual(['mxfp8', [N, K]]);
    expectExact(await values(b), want(codes8, e4m3, (i) => 2 ** (e8[i >> 5] - 127)), 'mxfp8');
    const c = m.tensors.get('c.weight') as Tensor;
    expect([c.dtype, c.shape]).toEqual(['bfloat16', [N, K]]);
    expectExact(await values(c), want(codes4, (x) => FP4_VALUES[x], (i) => e4m3(e4[i >> 4])), 'nvfp4');
    expect(m.report.conversions.every((x) => x.exact)).toBe(true);
    dispose(m);
  });

  it('a mixed model: mxfp4 experts by default, an affine 8-bit layer by its own entry', async () => {
    const K = 64, r = rng(33);
    const codes4 = Uint8Array.from({ length: 2 * K }, () => Math.floor(r() * 16));
    const e8 = Uint8Array.from({ length: (2 * K) / 32 }, () => 120 + Math.floor(r() * 10));
    const a = mlxAffineQuantize(uniform(2 * K, 34), K, 8, 64, 'BF16');
    const d = write([
      { name: 'experts.weight', dtype: 'U32', shape: [2, K / 8], data: packMlx(codes4, 4) },
      { name: 'experts.scales', dtype: 'U8', shape: [2, K / 32], data: e8 },
      { name: 'attn.weight', dtype: 'U32', shape: [2, K / 4], data: a.packed },
      { name: 'attn.scales', dtype: 'BF16', shape: [2, 1], data: scaleBytes(a.scales, 'BF16') },
      { name: 'attn.biases', dtype: 'BF16', shape: [2, 1], data: scaleBytes(a.biases, 'BF16') },
    ], { quantization: { group_size: 32, bits: 4, mode: 'mxfp4', attn: { group_size: 64, bits: 8 } } });
    const m = await loadSafetensors(dev, d);
    expect((m.tensors.get('experts.weight') as QuantizedTensor).format).toBe('mxfp4');
    expectExact(await values(m.tensors.get('experts.weight')), Array.from(codes4, (c, i) => FP4_VALUES[c] * 2 ** (e8[i >> 5] - 127)), 'experts');
    expect((m.tensors.get('attn.weight') as QuantizedTensor).format).toBe('affine8');
    expectExact(await values(m.tensors.get('attn.weight')), a.values, 'attn');
    dispose(m);
  });

  it("gpt-oss's _blocks/_scales -> mxfp4", async () => {
    const r = rng(41), E = 2, N = 3, G = 2;
    const blocks = Uint8Array.from({ length: E * N * G * 16 }, () => Math.floor(r() * 256));
    const scales = Uint8Array.from({ length: E * N * G }, () => 120 + Math.floor(r() * 10));
    const d = write([
      { name: 'experts.down_proj_blocks', dtype: 'U8', shape: [E, N, G, 16], data: blocks },
      { name: 'experts.down_proj_scales', dtype: 'U8', shape: [E, N, G], data: scales },
    ]);
    const m = await loadSafetensors(dev, d);
    const t = m.tensors.get('experts.down_proj') as QuantizedTensor;
    expect([t.format, t.shape]).toEqual(['mxfp4', [E, N, G * 32]]);
    const want = Array.from({ length: E * N * G * 32 }, (_, i) => FP4_VALUES[(blocks[i >> 1] >> ((i & 1) * 4)) & 15] * 2 ** (scales[i >> 5] - 127));
    expectExact(await values(t), want, 'gpt-oss');
    dispose(m);
  });
});

describe('FP8 weights', () => {
  const fp8Codes = (n: number, seed: number) => {
    const r = rng(seed);
    return Uint8Array.from({ length: n }, () => { let c; do c = Math.floor(r() * 256); while ((c & 0x7f) === 0x7f); return c; });
  };

  it('128x128 float32 block scales (DeepSeek/Qwen FP8): bfloat16 by default, float32 or re-quantized mxfp8 on request', async () => {
    const N = 200, K = 160;  // neither a multiple of 128: partial blocks at the edges
    const codes = fp8Codes(N * K, 51);
    const sv = Float32Array.from(uniform(2 * 2, 52, 1e-4, 3e-3));
    const d = write([
      { name: 'proj.weight', dtype: 'F8_E4M3', shape: [N, K], data: codes },
      { name: 'proj.weight_scale_inv', dtype: 'F32', shape: [2, 2], data: sv },
    ], { quantization_config: { quant_method: 'fp8', weight_block_size: [128, 128] } });
    const want = Array.from(codes, (c, i) => e4m3(c) * sv[Math.floor(i / K / 128) * 2 + Math.floor((i % K) / 128)]);
    const results: Record<string, number> = {};
    const ofMax: Record<string, number> = {};
    for (const fp8 of ['bfloat16', 'float32', 'mxfp8'] as const) {
      const m = await loadSafetensors(dev, d, fp8 === 'bfloat16' ? undefined : { fp8 });
      const t = m.tensors.get('proj.weight')!;
      const c = m.report.conversions[0];
      expect(c.target).toBe(fp8 === 'mxfp8' ? 'mxfp8' : fp8);
      expect(c.source).toContain('128x128 block F32 scales');
      const got = await values(t);
      let rel = 0;
      for (let i = 0; i < got.length; i++) if (want[i] !== 0) rel = Math.max(rel, Math.abs(got[i] - want[i]) / Math.abs(want[i]));
      results[fp8] = rel;
      ofMax[fp8] = c.maxAbsError / c.maxAbsValue!;
      expect(c.maxAbsValue).toBe(Math.max(...want.map(Math.abs)));
      expect(Math.abs(rel - c.maxRelError)).toBeLessThanOrEqual(c.maxRelError * 1e-6);
      if (fp8 === 'bfloat16') expectExact(got, want.map(roundBf16), 'bfloat16');
      if (fp8 === 'float32') expectExact(got, want, 'float32');
      dispose(m);
    }
    const fmt = (k: string) => `${k} ${results[k].toExponential(2)} (max abs error / max |value| ${ofMax[k].toExponential(2)})`;
    console.log(`FP8 128x128 float32 scales, max relative error: ${['bfloat16', 'float32', 'mxfp8'].map(fmt).join(', ')}`);
    expect(results.bfloat16).toBeLessThanOrEqual(2 ** -8);
    expect(results.float32).toBeLessThanOrEqual(2 ** -24);
    expect(ofMax.mxfp8).toBeLessThanOrEqual(2 ** -4);  // half a step at the top of each 32-block's E8M0 range
  });

  it('power-of-two scales (F32 or F8_E8M0) keep the codes as mxfp8, exactly; unscaled FP8 too', async () => {
    const N = 130, K = 256;
    const codes = fp8Codes(N * K, 61);
    const e8 = Uint8Array.from([120, 125, 127, 130]);
    const pow2 = Float32Array.from(e8, (b) => 2 ** (b - 127));
    const d = write([
      { name: 'a.weight', dtype: 'F8_E4M3', shape: [N, K], data: codes },
      { name: 'a.weight_scale_inv', dtype: 'F32', shape: [2, 2], data: pow2 },
      { name: 'b.weight', dtype: 'F8_E4M3', shape: [N, K], data: codes },
      { name: 'b.weight_scale_inv', dtype: 'F8_E8M0', shape: [2, 2], data: e8 },
      { name: 'c.weight', dtype: 'F8_E4M3', shape: [N, K], data: codes },
      { name: 'c.weight_scale', dtype: 'F32', shape: [], data: Float32Array.from([0.25]) },
      { name: 'd.weight', dtype: 'F8_E4M3', shape: [4, 24], data: codes.subarray(0, 96) },
    ]);
    const m = await loadSafetensors(dev, d);
    const want = Array.from(codes, (c, i) => e4m3(c) * pow2[Math.floor(i / K / 128) * 2 + Math.floor((i % K) / 128)]);
    for (const name of ['a.weight', 'b.weight']) {
      const t = m.tensors.get(name) as QuantizedTensor;
      expect(t.format).toBe('mxfp8');
      expectExact(await values(t), want, name);
    }
    expectExact(await values(m.tensors.get('c.weight')), Array.from(codes, (c) => e4m3(c) * 0.25), 'c');
    const dd = m.tensors.get('d.weight') as Tensor;
    expect(dd.dtype).toBe('bfloat16');
    expectExact(await dd.toFloat32(), Array.from(codes.subarray(0, 96), e4m3), 'd');
    expect(m.report.conversions.every((c) => c.exact)).toBe(true);
    dispose(m);
  });
});

describe('FP8 weights, other layouts', () => {
  it('per-row weight_scale [N, 1] (compressed-tensors) and F8_E5M2', async () => {
    const N = 5, K = 48, r = rng(63);
    const codes = Uint8Array.from({ length: N * K }, () => { let c; do c = Math.floor(r() * 256); while ((c & 0x7f) === 0x7f); return c; });
    const e5 = Uint8Array.from({ length: N * 64 }, () => Math.floor(r() * 0x7b));  // finite E5M2 codes
    const rowScale = Float32Array.from(uniform(N, 64, 0.01, 0.2));
    const d = write([
      { name: 'a.weight', dtype: 'F8_E4M3', shape: [N, K], data: codes },
      { name: 'a.weight_scale', dtype: 'F32', shape: [N, 1], data: rowScale },
      { name: 'b.weight', dtype: 'F8_E5M2', shape: [N, 64], data: e5 },
    ]);
    const m = await loadSafetensors(dev, d);
    expectExact(await values(m.tensors.get('a.weight')), Array.from(codes, (c, i) => roundBf16(e4m3(c) * rowScale[Math.floor(i / K)])), 'per row');
    expect(m.report.conversions.find((c) => c.name === 'a.weight')!.source).toContain('1x48 block F32 scales');
    const b = m.tensors.get('b.weight') as QuantizedTensor;
    expect(b.format).toBe('mxfp8_e5m2');
    const e5m2 = (c: number) => { const s = c & 0x80 ? -1 : 1, e = (c >> 2) & 31, f = c & 3; return s * (e === 0 ? f * 2 ** -16 : 2 ** (e - 15) * (1 + f / 4)); };
    expectExact(await values(b), Array.from(e5, e5m2), 'e5m2');
    dispose(m);
  });
});

describe('sharded models', () => {
  it('model.safetensors.index.json: tensors from every shard, filter and progress', async () => {
    const d = newDir();
    const a = Float32Array.from(uniform(16, 71)), b = Float32Array.from(uniform(8, 72));
    const q = mlxAffineQuantize(uniform(64, 73), 64, 4, 64, 'F16');
    writeSafetensors(join(d, 'model-00001-of-00002.safetensors'), [
      { name: 'a', dtype: 'F32', shape: [4, 4], data: a },
      { name: 'l.weight', dtype: 'U32', shape: [1, 8], data: q.packed },
    ]);
    writeSafetensors(join(d, 'model-00002-of-00002.safetensors'), [
      { name: 'b', dtype: 'F32', shape: [8], data: b },
      { name: 'l.scales', dtype: 'F16', shape: [1, 1], data: scaleBytes(q.scales, 'F16') },
      { name: 'l.biases', dtype: 'F16', shape: [1, 1], data: scaleBytes(q.biases, 'F16') },
    ]);
    const weightMap = {
      a: 'model-00001-of-00002.safetensors', 'l.weight': 'model-00001-of-00002.safetensors',
      b: 'model-00002-of-00002.safetensors', 'l.scales': 'model-00002-of-00002.safetensors', 'l.biases': 'model-00002-of-00002.safetensors',
    };
    writeFileSync(join(d, 'model.safetensors.index.json'), JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }));
    writeFileSync(join(d, 'config.json'), JSON.stringify({ quantization: { group_size: 64, bits: 4 } }));
    const seen: { bytesRead: number; totalBytes: number; name: string }[] = [];
    const m = await loadSafetensors(dev, d, { onProgress: (p) => seen.push(p) });
    expect(m.report.files.length).toBe(2);
    expect([...m.tensors.keys()].sort()).toEqual(['a', 'b', 'l.weight']);
    expectExact(await values(m.tensors.get('a')), a, 'a');
    expectExact(await values(m.tensors.get('b')), b, 'b');
    expectExact(await values(m.tensors.get('l.weight')), q.values, 'l');
    expect(seen.map((p) => p.bytesRead)).toEqual([...seen.map((p) => p.bytesRead)].sort((x, y) => x - y));
    expect(seen.at(-1)!.bytesRead).toBe(seen.at(-1)!.totalBytes);
    dispose(m);
    const only = await loadSafetensors(dev, join(d, 'model.safetensors.index.json'), { filter: (n) => n === 'b' });
    expect([...only.tensors.keys()]).toEqual(['b']);
    expect(only.report.bytesRead).toBe(32);
    dispose(only);
    // An index naming a tensor its shard does not have, or a shard outside the directory.
    writeFileSync(join(d, 'model.safetensors.index.json'), JSON.stringify({ weight_map: { ...weightMap, c: 'model-00002-of-00002.safetensors' } }));
    await expectFormatError(d, /weight_map puts 'c' in .*no such tensor/);
    writeFileSync(join(d, 'model.safetensors.index.json'), JSON.stringify({ weight_map: { a: '../x.safetensors' } }));
    await expectFormatError(d, /outside the index's directory/);
    writeFileSync(join(d, 'model.safetensors.index.json'), '{"weight_map": [');
    await expectFormatError(d, /not valid JSON/);
  });
});
