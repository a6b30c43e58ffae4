// Damaged safetensors files and folders answer E_FORMAT naming what is wrong, before any
// allocation sized from the file; truncation at every point and a seeded fuzz of headers and
// bytes never throw anything but E_FORMAT.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { TensorOpsError, loadSafetensors, type Device } from '../lib/index';
import { rng } from './helpers/compare';
import { mlxAffineQuantize, scaleBytes } from './helpers/mlx-quant';
import { disposeAll, safetensorsFixtures, uniform } from './helpers/safetensors-fixtures';

const fx = safetensorsFixtures();
const { newDir, write, expectFormatError } = fx;
const dispose = disposeAll;
let dev: Device;
beforeAll(() => { dev = fx.dev(); });

describe('bad files answer E_FORMAT', () => {
  function raw(headerText: string, data = new Uint8Array(0), lengthOverride?: bigint): string {
    const d = newDir();
    const h = Buffer.from(headerText);
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(lengthOverride ?? BigInt(h.length));
    writeFileSync(join(d, 'model.safetensors'), Buffer.concat([len, h, data]));
    return d;
  }
  const entry = (e: Record<string, unknown>) => JSON.stringify({ t: { dtype: 'F32', shape: [2], data_offsets: [0, 8], ...e } });

  it('damaged headers and tables, each named', async () => {
    await expectFormatError(raw('{}', undefined, 2n ** 63n), /header length is \d+ bytes; the largest accepted/);
    await expectFormatError(raw('{}', undefined, 1000n), /only 2 after it/);
    await expectFormatError(raw('{"a":'), /not valid JSON/);
    await expectFormatError(raw('[1,2]'), /must be a JSON object; it is an array/);
    await expectFormatError(raw(Buffer.from([0x7b, 0xff, 0x7d]).toString('latin1')), /not valid JSON|UTF-8/);
    await expectFormatError(raw(entry({ dtype: 'F7' }), new Uint8Array(8)), /unknown dtype "F7"/);
    await expectFormatError(raw(entry({ shape: [3] }), new Uint8Array(8)), /takes 12 bytes; data_offsets \[0, 8\] hold 8/);
    await expectFormatError(raw(entry({ data_offsets: [0, 16] }), new Uint8Array(8)), /run past the data section/);
    await expectFormatError(raw(entry({ data_offsets: [8, 0] }), new Uint8Array(8)), /end before they begin/);
    await expectFormatError(raw(entry({ data_offsets: [0, -8] }), new Uint8Array(8)), /two non-negative integers/);
    await expectFormatError(raw(entry({ shape: [2 ** 40, 2 ** 40] }), new Uint8Array(8)), /more elements than the 8-byte data section/);
    await expectFormatError(raw(entry({ shape: [1.5] }), new Uint8Array(8)), /shape\[0\] must be a non-negative integer/);
    await expectFormatError(raw(entry({ shape: [1, 1, 1, 1, 1, 1, 1, 1, 2] }), new Uint8Array(8)), /rank 9/);
    await expectFormatError(raw(entry({ shape: 'x' }), new Uint8Array(8)), /shape must be an array/);
    await expectFormatError(raw(JSON.stringify({ t: 5 })), /its entry must be an object/);
    await expectFormatError(raw(JSON.stringify({ __metadata__: { a: 1 } })), /__metadata__\['a'\] must be a string/);
    await expectFormatError(raw(JSON.stringify({
      a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] },
    }), new Uint8Array(12)), /'a' and 'b' overlap/);
    const d = newDir();
    writeFileSync(join(d, 'model.safetensors'), Buffer.from([1, 2, 3]));
    await expectFormatError(d, /too short/);
  });

  it('MLX layers whose parts disagree, I64 out of int32, unusable FP8 scales', async () => {
    const q = mlxAffineQuantize(uniform(64, 81), 64, 4, 64, 'F16');
    await expectFormatError(write([
      { name: 'l.weight', dtype: 'U32', shape: [1, 8], data: q.packed },
      { name: 'l.scales', dtype: 'F16', shape: [1, 1], data: scaleBytes(q.scales, 'F16') },
      { name: 'l.biases', dtype: 'F16', shape: [1, 2], data: new Uint8Array(4) },
    ]), /biases \[1, 2\] and scales \[1, 1\] must have one shape/);
    await expectFormatError(write([
      { name: 'l.weight', dtype: 'U32', shape: [1, 8], data: q.packed },
      { name: 'l.scales', dtype: 'F16', shape: [1, 1], data: scaleBytes(q.scales, 'F16') },
      { name: 'l.biases', dtype: 'F16', shape: [1, 1], data: scaleBytes(q.biases, 'F16') },
    ], { quantization: { group_size: 32, bits: 4 } }), /fit no bits\/group size with config\.json's bits 4, group_size 32/);
    await expectFormatError(write([
      { name: 'l.weight', dtype: 'U32', shape: [1, 8], data: q.packed },
      { name: 'l.scales', dtype: 'F16', shape: [1, 1], data: scaleBytes(q.scales, 'F16') },
    ], { quantization: { group_size: 64, bits: 4, mode: 'affine' } }), /affine mode needs 'l\.biases'/);
    await expectFormatError(write([
      { name: 'x_blocks', dtype: 'U8', shape: [1, 1, 16], data: new Uint8Array(16) },
      { name: 'x_scales', dtype: 'U8', shape: [1, 1], data: new Uint8Array(1) },
      { name: 'x', dtype: 'F32', shape: [1], data: new Float32Array(1) },
    ]), /two tensors of the result would be named 'x'/);
    await expectFormatError(write([{ name: 'p', dtype: 'I64', shape: [1], data: BigInt64Array.from([2n ** 40n]) }]), /outside int32/);
    await expectFormatError(write([
      { name: 'w', dtype: 'F8_E4M3', shape: [4, 32], data: new Uint8Array(128) },
      { name: 'w_scale_inv', dtype: 'F32', shape: [3, 3], data: new Float32Array(9) },
    ]), /fits no block size/);
    await expectFormatError(write([
      { name: 'l.weight', dtype: 'U32', shape: [1, 8], data: q.packed },
      { name: 'l.scales', dtype: 'F16', shape: [1, 1], data: scaleBytes(q.scales, 'F16') },
      { name: 'l.biases', dtype: 'F16', shape: [1, 1], data: scaleBytes(q.biases, 'F16') },
    ], { quantization: { group_size: 64, bits: 7 } }), /bits for 'l' is 7/);
  });

  it('every truncation of a model file', async () => {
    const q = mlxAffineQuantize(uniform(128, 91), 64, 4, 64, 'BF16');
    const src = write([
      { name: 'a', dtype: 'BF16', shape: [3, 5], data: new Uint16Array(15).fill(0x3f80) },
      { name: 'l.weight', dtype: 'U32', shape: [2, 8], data: q.packed },
      { name: 'l.scales', dtype: 'BF16', shape: [2, 1], data: scaleBytes(q.scales, 'BF16') },
      { name: 'l.biases', dtype: 'BF16', shape: [2, 1], data: scaleBytes(q.biases, 'BF16') },
    ], undefined, { note: 'x' });
    const bytes = readFileSync(join(src, 'model.safetensors'));
    const d = newDir(), file = join(d, 'model.safetensors');
    const start = Date.now();
    for (let cut = 0; cut < bytes.length; cut++) {
      writeFileSync(file, bytes.subarray(0, cut));
      const err = await loadSafetensors(dev, file).then(() => undefined, (e: unknown) => e);
      expect(err, `cut at ${cut}`).toBeInstanceOf(TensorOpsError);
      expect((err as TensorOpsError).code, `cut at ${cut}: ${(err as Error).message}`).toBe('E_FORMAT');
    }
    expect(Date.now() - start).toBeLessThan(20000);
  });

  it('a seeded byte-flip fuzz throws nothing but TensorOpsError', async () => {
    const q = mlxAffineQuantize(uniform(128, 92), 64, 4, 32, 'F16');
    const src = write([
      { name: 'a', dtype: 'F32', shape: [2, 3], data: new Float32Array(6).fill(1) },
      { name: 'l.weight', dtype: 'U32', shape: [2, 8], data: q.packed },
      { name: 'l.scales', dtype: 'F16', shape: [2, 2], data: scaleBytes(q.scales, 'F16') },
      { name: 'l.biases', dtype: 'F16', shape: [2, 2], data: scaleBytes(q.biases, 'F16') },
      { name: 'f.weight', dtype: 'F8_E4M3', shape: [2, 32], data: new Uint8Array(64).fill(0x38) },
      { name: 'f.weight_scale_inv', dtype: 'F32', shape: [1, 1], data: Float32Array.from([0.3]) },
    ]);
    const bytes = readFileSync(join(src, 'model.safetensors'));
    const d = newDir(), file = join(d, 'model.safetensors');
    const r = rng(2024);
    const codes = new Map<string, number>();
    for (let iter = 0; iter < 400; iter++) {
      const b = Buffer.from(bytes);
      const flips = 1 + Math.floor(r() * 3);
      // Mostly the header (the interesting part), sometimes the header length or the data.
      for (let f = 0; f < flips; f++) {
        const at = r() < 0.1 ? Math.floor(r() * 8) : Math.floor(r() * b.length);
        b[at] = r() < 0.5 ? b[at] ^ (1 << Math.floor(r() * 8)) : Math.floor(r() * 256);
      }
      writeFileSync(file, b);
      try {
        const m = await loadSafetensors(dev, file);
        dispose(m);
        codes.set('ok', (codes.get('ok') ?? 0) + 1);
      } catch (err) {
        if (!(err instanceof TensorOpsError)) throw new Error(`iteration ${iter}: ${String(err)}`);
        codes.set(err.code, (codes.get(err.code) ?? 0) + 1);
      }
    }
    expect([...codes.keys()].every((c) => c === 'ok' || c === 'E_FORMAT')).toBe(true);
    expect(codes.get('E_FORMAT')).toBeGreaterThan(50);
  });

  it('a seeded fuzz of the header\'s values (dtypes, dims, offsets) throws nothing but TensorOpsError', async () => {
    const q = mlxAffineQuantize(uniform(128, 93), 64, 4, 32, 'BF16');
    const src = write([
      { name: 'l.weight', dtype: 'U32', shape: [2, 8], data: q.packed },
      { name: 'l.scales', dtype: 'BF16', shape: [2, 2], data: scaleBytes(q.scales, 'BF16') },
      { name: 'l.biases', dtype: 'BF16', shape: [2, 2], data: scaleBytes(q.biases, 'BF16') },
      { name: 'm.weight', dtype: 'U32', shape: [2, 8], data: q.packed },
      { name: 'm.scales', dtype: 'U8', shape: [2, 2], data: new Uint8Array(4).fill(127) },
      { name: 'x_blocks', dtype: 'U8', shape: [2, 1, 16], data: new Uint8Array(32) },
      { name: 'x_scales', dtype: 'U8', shape: [2, 1], data: new Uint8Array(2) },
      { name: 'f.weight', dtype: 'F8_E4M3', shape: [2, 32], data: new Uint8Array(64).fill(0x38) },
      { name: 'f.weight_scale_inv', dtype: 'F32', shape: [1, 1], data: Float32Array.from([0.3]) },
    ]);
    const bytes = readFileSync(join(src, 'model.safetensors'));
    const n = Number(bytes.readBigUInt64LE(0));
    const header = JSON.parse(bytes.subarray(8, 8 + n).toString()) as Record<string, { dtype: string; shape: number[]; data_offsets: number[] }>;
    const data = bytes.subarray(8 + n);
    const d = newDir(), file = join(d, 'model.safetensors');
    const r = rng(77), pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
    const numbers = [0, 1, 2, 3, 4, 8, 16, 31, 32, 33, 64, 2 ** 31, 2 ** 53, -1, 0.5, 1e300];
    const dtypes = ['F32', 'F16', 'BF16', 'U8', 'U32', 'I64', 'F8_E4M3', 'F8_E8M0', 'F4', 'BOOL', 'C64'];
    const codes = new Map<string, number>();
    for (let iter = 0; iter < 300; iter++) {
      const h = JSON.parse(JSON.stringify(header)) as typeof header;
      for (let f = 1 + Math.floor(r() * 2); f > 0; f--) {
        const e = h[pick(Object.keys(h))];
        const what = r();
        if (what < 0.3) e.dtype = pick(dtypes);
        else if (what < 0.6) e.shape[Math.floor(r() * e.shape.length)] = pick(numbers);
        else if (what < 0.7) e.shape = e.shape.length > 1 ? e.shape.slice(1) : [...e.shape, pick(numbers)];
        else e.data_offsets[Math.floor(r() * 2)] = pick(numbers);
      }
      const json = Buffer.from(JSON.stringify(h));
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(json.length));
      writeFileSync(file, Buffer.concat([len, json, data]));
      try {
        dispose(await loadSafetensors(dev, file));
        codes.set('ok', (codes.get('ok') ?? 0) + 1);
      } catch (err) {
        if (!(err instanceof TensorOpsError)) throw new Error(`iteration ${iter}: ${String(err)}`);
        codes.set(err.code, (codes.get(err.code) ?? 0) + 1);
      }
    }
    expect([...codes.keys()].every((c) => c === 'ok' || c === 'E_FORMAT'), JSON.stringify([...codes])).toBe(true);
  });
});
