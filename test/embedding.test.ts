// embedding (rows of a dense or quantized table by int32 ids), groupedLinear (a linear per
// group of rows, the group sizes read on the device) and groupRows (ids sorted into those
// groups), against JS references.
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

describe('groupRows', () => {
  /** The stable counting sort written out: entries in value order, ties in index order. */
  function groupRowsRef(ids: Int32Array, k: number, groups: number) {
    const order = Array.from(ids.keys()).sort((a, b) => ids[a] - ids[b] || a - b);
    const sizes = new Int32Array(groups);
    for (const v of ids) sizes[v]++;
    const positions = new Int32Array(ids.length);
    order.forEach((i, at) => { positions[i] = at; });
    return { sizes, rows: Int32Array.from(order, (i) => Math.floor(i / k)), positions };
  }

  it('sorts [T, k] and [T] ids by value, stably, with sizes and the inverse positions', async () => {
    for (const [name, dev] of devices) {
      const r = rng(5);
      for (const [T, k, groups] of [[1, 1, 1], [7, 2, 4], [33, 8, 128], [5, 3, 3], [0, 4, 8], [12, 1, 5]]) {
        const ids = Int32Array.from({ length: T * k }, () => Math.floor(r() * groups));
        const t = dev.tensor(ids, k === 1 && T === 12 ? [T] : [T, k], 'int32');
        const got = dev.groupRows(t, groups);
        const want = groupRowsRef(ids, k, groups);
        expect(got.sizes.shape, name).toEqual([groups]);
        expect(got.rows.shape, name).toEqual([T * k]);
        expect(got.positions.shape, name).toEqual(t.shape);
        expect(Array.from(await got.sizes.data() as Int32Array), `${name} sizes ${T}x${k}`).toEqual(Array.from(want.sizes));
        expect(Array.from(await got.rows.data() as Int32Array), `${name} rows ${T}x${k}`).toEqual(Array.from(want.rows));
        expect(Array.from(await got.positions.data() as Int32Array), `${name} positions ${T}x${k}`).toEqual(Array.from(want.positions));
      }
    }
  });

  it('with embedding and groupedLinear: the rows of a mixture of experts, grouped and put back', async () => {
    for (const [name, dev] of devices) {
      const T = 6, k = 2, E = 3, K = 8, N = 5;
      const ids = Int32Array.from([2, 0, 1, 2, 0, 1, 2, 1, 0, 0, 1, 2]);
      const x = randn(T * K, 1), w = randn(E * N * K, 2);
      const g = dev.groupRows(dev.tensor(ids, [T, k], 'int32'), E);
      const xg = dev.embedding(dev.tensor(x, [T, K]), g.rows);
      const y = dev.groupedLinear(xg, dev.tensor(w, [E, N, K]), g.sizes);
      const back = await dev.embedding(y, g.positions).toFloat32();  // [T, k, N]
      expect(back.length).toBe(T * k * N);
      for (let t = 0; t < T; t++) {
        for (let j = 0; j < k; j++) {
          const e = ids[t * k + j];
          const want = linearRef(x.subarray(t * K, (t + 1) * K), w.subarray(e * N * K, (e + 1) * N * K), 1, N, K);
          expectClose(back.subarray((t * k + j) * N, (t * k + j + 1) * N), want, 1e-5, `${name} token ${t} slot ${j}`);
        }
      }
    }
  });

  it('an id outside [0, groups) fails the op when it runs; bad arguments throw at the call', async () => {
    for (const [, dev] of devices) {
      const g = dev.groupRows(dev.tensor(Int32Array.from([0, 3, 1]), [3], 'int32'), 3);
      await expect(g.sizes.data()).rejects.toMatchObject({ code: 'E_ARG', message: 'groupRows: ids holds 3 at flat index 1; the groups are 0..2' });
      await expect(g.positions.data()).rejects.toMatchObject({ code: 'E_ARG' });
      const ids = dev.tensor(Int32Array.from([0, 1]), [2], 'int32');
      expect(() => dev.groupRows(ids, 0)).toThrow(expect.objectContaining({ code: 'E_ARG', message: expect.stringContaining('groups must be an integer in [1, 2147483647]; got 0') }));
      expect(() => dev.groupRows(dev.tensor(new Float32Array(2), [2]), 2)).toThrow(expect.objectContaining({ code: 'E_DTYPE' }));
      expect(() => dev.groupRows(dev.tensor(Int32Array.from([0, 1]), [1, 1, 2], 'int32'), 2)).toThrow(expect.objectContaining({ code: 'E_SHAPE' }));
      // The device goes on.
      expect(Array.from(await dev.groupRows(ids, 2).rows.data() as Int32Array)).toEqual([0, 1]);
    }
  });
});
