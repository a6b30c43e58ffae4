// embedding (rows of a dense or quantized table by int32 ids) and groupedLinear (a linear per
// group of rows, the group sizes read on the device), against JS references.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Device } from '../lib/index';
import { expectClose, randn, rng } from './helpers/compare';
import { testDevices } from './helpers/devices';
import { linearRef } from './helpers/reference';

let devices: [string, Device][];
beforeAll(async () => { devices = await testDevices(); });

describe('embedding', () => {
  it('gathers rows of a dense table in its dtype for ids of any shape', async () => {
    for (const [, dev] of devices) {
      const [V, D] = [37, 24];
      const bits = Uint16Array.from({ length: V * D }, (_, i) => (i * 2654435761) & 0x7bff);
      const table = dev.tensor(bits, [V, D], 'float16');
      const ids = [5, 0, 36, 5, 17, 2];
      const out = dev.embedding(table, dev.tensor(Int32Array.from(ids), [2, 3], 'int32'));
      expect(out.shape).toEqual([2, 3, D]);
      expect(out.dtype).toBe('float16');
      expect(Array.from(await out.data())).toEqual(ids.flatMap((id) => Array.from(bits.subarray(id * D, (id + 1) * D))));
    }
  });

  it('a quantized table gives float32 rows equal to its dequantized rows, for every format', async () => {
    for (const [, dev] of devices) {
      const [V, D] = [20, 64];
      const dense = dev.tensor(randn(V * D, 3), [V, D]);
      for (const format of ['mxfp8', 'mxfp4', 'mxint8', 'mxfp6_e2m3', 'mxint4', 'affine4', 'affine8'] as const) {
        const q = dev.quantize(dense, { format });
        const all = await dev.dequantize(q).toFloat32();
        const ids = [19, 3, 3, 0];
        const got = await dev.embedding(q, dev.tensor(Int32Array.from(ids), [4], 'int32')).toFloat32();
        expect(Array.from(got), format).toEqual(ids.flatMap((id) => Array.from(all.subarray(id * D, (id + 1) * D))));
      }
    }
  });

  it('an id outside the table fails the op (E_ARG) when it runs; ids must be int32', async () => {
    for (const [, dev] of devices) {
      const table = dev.tensor(new Float32Array(8), [4, 2]);
      const out = dev.embedding(table, dev.tensor(Int32Array.from([1, 4]), [2], 'int32'));
      await expect(out.data()).rejects.toMatchObject({ code: 'E_ARG', message: 'embedding: ids holds 4 at flat index 1; the table has rows 0..3' });
      expect(() => dev.embedding(table, dev.tensor([1], [1]))).toThrow(expect.objectContaining({ code: 'E_DTYPE' }));
    }
  });
});

describe('embedding: empty dimensions', () => {
  it('zero ids give [...ids.shape, D]; an empty table row (D = 0) still checks the ids; a table without rows fails any id', async () => {
    for (const [name, dev] of devices) {
      const table = dev.tensor(new Uint16Array(12), [4, 3], 'float16');
      for (const shape of [[0], [2, 0], [0, 5]]) {
        const out = dev.embedding(table, dev.tensor(new Int32Array(0), shape, 'int32'));
        expect(out.shape, `${name} ${shape}`).toEqual([...shape, 3]);
        expect(out.dtype).toBe('float16');
        expect(await out.data()).toEqual(new Uint16Array(0));
      }
      const q = dev.quantize(dev.tensor(randn(4 * 32, 2), [4, 32]), { format: 'mxfp4' });
      const qe = dev.embedding(q, dev.tensor(new Int32Array(0), [0], 'int32'));
      expect(qe.shape).toEqual([0, 32]);
      expect(qe.dtype).toBe('float32');
      expect(await qe.toFloat32()).toEqual(new Float32Array(0));
      const narrow = dev.tensor(new Float32Array(0), [4, 0]);
      const ok = dev.embedding(narrow, dev.tensor(Int32Array.from([3, 0]), [2], 'int32'));
      expect(ok.shape).toEqual([2, 0]);
      expect(await ok.toFloat32()).toEqual(new Float32Array(0));
      await expect(dev.embedding(narrow, dev.tensor(Int32Array.from([1, 4]), [2], 'int32')).data())
        .rejects.toMatchObject({ code: 'E_ARG', message: 'embedding: ids holds 4 at flat index 1; the table has rows 0..3' });
      const none = dev.tensor(new Float32Array(0), [0, 3]);
      expect(await dev.embedding(none, dev.tensor(new Int32Array(0), [0], 'int32')).toFloat32()).toEqual(new Float32Array(0));
      await expect(dev.embedding(none, dev.tensor(Int32Array.from([0]), [1], 'int32')).data())
        .rejects.toMatchObject({ code: 'E_ARG', message: 'embedding: ids holds 0 at flat index 0; the table has no rows' });
    }
  });
});

describe('groupedLinear', () => {
  it('empty dimensions: no rows (groups summing to 0), no experts, N = 0, and K = 0 (zeros); the sizes are still checked', async () => {
    for (const [name, dev] of devices) {
      const wq = dev.quantize(dev.tensor(randn(3 * 8 * 32, 4), [3, 8, 32]), { format: 'mxfp8' });
      const sizes = (s: number[]) => dev.tensor(Int32Array.from(s), [s.length], 'int32');
      const y0 = dev.groupedLinear(dev.tensor(new Float32Array(0), [0, 32]), wq, sizes([0, 0, 0]), { outDtype: 'float16' });
      expect(y0.shape, name).toEqual([0, 8]);
      expect(y0.dtype).toBe('float16');
      expect(await y0.data()).toEqual(new Uint16Array(0));
      await expect(dev.groupedLinear(dev.tensor(new Float32Array(0), [0, 32]), wq, sizes([1, 0, -1])).data())
        .rejects.toMatchObject({ code: 'E_ARG', message: 'groupedLinear: groupSizes[2] is -1; sizes must be >= 0' });
      // No experts: w [0, N, K], groupSizes [0], and only T = 0 adds up.
      const noExperts = dev.tensor(new Float32Array(0), [0, 8, 32]);
      expect(await dev.groupedLinear(dev.tensor(new Float32Array(0), [0, 32]), noExperts, sizes([])).toFloat32()).toEqual(new Float32Array(0));
      await expect(dev.groupedLinear(dev.tensor(new Float32Array(64), [2, 32]), noExperts, sizes([])).data())
        .rejects.toMatchObject({ code: 'E_ARG', message: 'groupedLinear: groupSizes add up to 0; x has 2 rows' });
      // N = 0: an empty output, the sizes checked.
      const yn = dev.groupedLinear(dev.tensor(new Float32Array(64), [2, 32]), dev.tensor(new Float32Array(0), [3, 0, 32]), sizes([1, 1, 0]));
      expect(yn.shape).toEqual([2, 0]);
      expect(await yn.toFloat32()).toEqual(new Float32Array(0));
      await expect(dev.groupedLinear(dev.tensor(new Float32Array(64), [2, 32]), dev.tensor(new Float32Array(0), [3, 0, 32]), sizes([1, 0, 0])).data())
        .rejects.toMatchObject({ code: 'E_ARG', message: 'groupedLinear: groupSizes add up to 1; x has 2 rows' });
      // K = 0: every row a sum over nothing, zeros (dense and quantized w).
      for (const w of [dev.tensor(new Float32Array(0), [3, 4, 0]), dev.quantize(dev.tensor(new Float32Array(0), [3, 4, 0]), { format: 'mxfp4' })]) {
        const yk = dev.groupedLinear(dev.tensor(new Float32Array(0), [5, 0]), w, sizes([2, 0, 3]));
        expect(yk.shape).toEqual([5, 4]);
        expect(Array.from(await yk.toFloat32())).toEqual(new Array(20).fill(0));
      }
    }
  });

  it('equals a linear per expert for random group sizes, empty groups included', async () => {
    for (const [name, dev] of devices) {
      const [E, N, K] = [6, 40, 64];
      const wv = randn(E * N * K, 11, 0.2);
      const wq = dev.quantize(dev.tensor(wv, [E, N, K]), { format: 'mxfp4' });
      const wd = await dev.dequantize(wq).toFloat32();
      const r = rng(5);
      for (let trial = 0; trial < 4; trial++) {
        const sizes = Array.from({ length: E }, () => (r() < 0.3 ? 0 : Math.floor(r() * 7)));
        const T = sizes.reduce((a, b) => a + b, 0) || 1;
        if (sizes.every((s) => s === 0)) sizes[0] = 1;
        const x = randn(T * K, 20 + trial);
        const y = await dev.groupedLinear(dev.tensor(x, [T, K]), wq, dev.tensor(Int32Array.from(sizes), [E], 'int32')).toFloat32();
        let row = 0;
        for (let e = 0; e < E; e++) {
          if (sizes[e] === 0) continue;
          const want = linearRef(x.subarray(row * K, (row + sizes[e]) * K), wd.subarray(e * N * K, (e + 1) * N * K), sizes[e], N, K);
          expectClose(y.subarray(row * N, (row + sizes[e]) * N), want, 1e-5, `${name} trial ${trial} expert ${e}`);
          row += sizes[e];
        }
      }
    }
  });

  it('group sizes that do not add up to T, or are negative, fail the op when it runs', async () => {
    for (const [, dev] of devices) {
      const w = dev.tensor(new Float32Array(2 * 3 * 4), [2, 3, 4]);
      const x = dev.tensor(new Float32Array(5 * 4), [5, 4]);
      await expect(dev.groupedLinear(x, w, dev.tensor(Int32Array.from([2, 2]), [2], 'int32')).data())
        .rejects.toMatchObject({ code: 'E_ARG', message: 'groupedLinear: groupSizes add up to 4; x has 5 rows' });
      await expect(dev.groupedLinear(x, w, dev.tensor(Int32Array.from([6, -1]), [2], 'int32')).data())
        .rejects.toMatchObject({ code: 'E_ARG', message: 'groupedLinear: groupSizes[1] is -1; sizes must be >= 0' });
      expect(() => dev.groupedLinear(x, w, dev.tensor(Int32Array.from([5]), [1], 'int32'))).toThrow(expect.objectContaining({ code: 'E_SHAPE' }));
    }
  });
});
