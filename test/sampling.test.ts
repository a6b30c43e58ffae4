// Picking on the device (docs/design/API.md "Softmax and picking"): argmax, topK and sample
// against JS references; sample's draws follow the softmax (chi-square) and repeat for a seed.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Device } from '../lib/index';
import { randn } from './helpers/compare';
import { testDevices } from './helpers/devices';

let devices: [string, Device][];
beforeAll(async () => { devices = await testDevices(); });

// Indices of a row, largest first, NaN largest, ties to the lower index.
function ranked(row: ArrayLike<number>): number[] {
  const idx = Array.from({ length: row.length }, (_, i) => i);
  return idx.sort((a, b) => {
    const x = row[a], y = row[b];
    if (Number.isNaN(x) !== Number.isNaN(y)) return Number.isNaN(x) ? -1 : 1;
    if (!Number.isNaN(x) && x !== y) return y - x;
    return a - b;
  });
}

describe('argmax and topK', () => {
  it('argmax: rows of random values, ties, NaN and -inf; a vector gives [1]', async () => {
    for (const [, dev] of devices) {
      const rows = 7, cols = 1001;
      const x = randn(rows * cols, 5);
      x[cols + 10] = x[cols + 20] = 100;        // row 1: a tie, the lower index wins
      x[2 * cols + 30] = NaN;                   // row 2: NaN is largest
      for (let c = 0; c < cols; c++) x[3 * cols + c] = -Infinity;  // row 3: all -inf -> 0
      const ids = dev.argmax(dev.tensor(x, [rows, cols]));
      expect(ids.dtype).toBe('int32');
      expect(ids.shape).toEqual([rows]);
      const want = Array.from({ length: rows }, (_, r) => ranked(x.subarray(r * cols, (r + 1) * cols))[0]);
      expect(Array.from(await ids.data())).toEqual(want);
      expect(want.slice(1, 4)).toEqual([10, 30, 0]);
      expect(dev.argmax(dev.tensor([1, 3, 2], [3])).shape).toEqual([1]);
    }
  });

  it('topK: values and indices largest first, in the input dtype, for k = 1 .. V', async () => {
    for (const [, dev] of devices) {
      const cols = 300;
      const x = randn(2 * cols, 9);
      x[5] = x[6] = 4;
      for (const k of [1, 5, 64, cols]) {
        const { values, indices } = dev.topK(dev.tensor(x, [2, cols], 'float16'), k);
        expect(values.shape).toEqual([2, k]);
        expect(values.dtype).toBe('float16');
        const xr = await dev.tensor(x, [2, cols], 'float16').toFloat32();
        const want = [0, 1].flatMap((r) => ranked(xr.subarray(r * cols, (r + 1) * cols)).slice(0, k));
        expect(Array.from(await indices.data())).toEqual(want);
        expect(Array.from(await values.toFloat32())).toEqual(want.map((j, i) => xr[Math.floor(i / k) * cols + j]));
      }
      expect(() => dev.topK(dev.tensor(x, [2, cols]), cols + 1)).toThrow(expect.objectContaining({ code: 'E_ARG' }));
    }
  });
});

describe('empty dimensions', () => {
  it('zero rows give empty ids (and values); an empty row axis is E_SHAPE naming it, as PyTorch\'s argmax', async () => {
    for (const [name, dev] of devices) {
      const x = dev.tensor(new Float32Array(0), [2, 0, 5], 'bfloat16');
      const ids = dev.argmax(x);
      expect(ids.shape, name).toEqual([2, 0]);
      expect(ids.dtype).toBe('int32');
      expect(await ids.data()).toEqual(new Int32Array(0));
      const { values, indices } = dev.topK(x, 3);
      expect(values.shape).toEqual([2, 0, 3]);
      expect(values.dtype).toBe('bfloat16');
      expect(indices.shape).toEqual([2, 0, 3]);
      expect(await values.data()).toEqual(new Uint16Array(0));
      expect(await indices.data()).toEqual(new Int32Array(0));
      const drawn = dev.sample(dev.tensor(new Float32Array(0), [0, 7]), { seed: 3, topK: 2 });
      expect(drawn.shape).toEqual([0]);
      expect(await drawn.data()).toEqual(new Int32Array(0));
      // k is still checked against the row length.
      expect(() => dev.topK(x, 6)).toThrow(expect.objectContaining({ code: 'E_ARG', message: expect.stringContaining('k must be in [1, 5]') }));
      for (const shape of [[3, 0], [0], [0, 0], [2, 1, 0]]) {
        const e = dev.tensor(new Float32Array(0), shape);
        const axis = `dimension ${shape.length - 1}`;
        expect(() => dev.argmax(e)).toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining(`argmax: x's last axis (${axis}`) }));
        expect(() => dev.topK(e, 1)).toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining(`topK: x's last axis (${axis}`) }));
        expect(() => dev.sample(e)).toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining('it must be at least 1') }));
      }
    }
  });
});

describe('sample', () => {
  const V = 50;
  const logits = Float32Array.from(randn(V, 77, 1.5));
  const probs = (t: number, keep?: number[]) => {
    const idx = keep ?? Array.from({ length: V }, (_, i) => i);
    const m = Math.max(...idx.map((i) => logits[i]));
    const w = new Map(idx.map((i) => [i, Math.exp((logits[i] - m) / t)]));
    const s = [...w.values()].reduce((a, b) => a + b, 0);
    return Array.from({ length: V }, (_, i) => (w.get(i) ?? 0) / s);
  };
  // Draws one id per row of a [rows, V] batch of the same logits: rows are independent draws.
  async function draws(dev: Device, opts: object, rows = 20000): Promise<number[]> {
    const batch = new Float32Array(rows * V);
    for (let r = 0; r < rows; r++) batch.set(logits, r * V);
    return Array.from(await dev.sample(dev.tensor(batch, [rows, V]), opts).data());
  }
  // Pearson's chi-square over the cells expected >= 5 times: under 1e-4 false alarms.
  function expectDistribution(ids: number[], p: number[]) {
    const n = ids.length;
    const counts = new Array(V).fill(0);
    for (const id of ids) counts[id]++;
    for (let i = 0; i < V; i++) if (p[i] === 0) expect(counts[i], `id ${i} has probability 0`).toBe(0);
    let chi = 0, cells = 0;
    for (let i = 0; i < V; i++) {
      if (n * p[i] < 5) continue;
      chi += (counts[i] - n * p[i]) ** 2 / (n * p[i]);
      cells++;
    }
    // chi-square quantile at 1 - 1e-4 with `cells - 1` degrees of freedom (Wilson-Hilferty).
    const k = cells - 1, z = 3.719;
    const bound = k * (1 - 2 / (9 * k) + z * Math.sqrt(2 / (9 * k))) ** 3;
    expect(chi).toBeLessThan(bound);
  }

  it('frequencies match softmax(logits / temperature) within a chi-square bound', async () => {
    for (const [, dev] of devices) {
      for (const t of [1, 0.7, 2]) expectDistribution(await draws(dev, { temperature: t, seed: 1 }), probs(t));
    }
  });

  it('topK and topP keep the largest logits, renormalised', async () => {
    const order = ranked(logits);
    for (const [, dev] of devices) {
      expectDistribution(await draws(dev, { topK: 5, seed: 2 }), probs(1, order.slice(0, 5)));
      const p = probs(1);
      let cum = 0, n = 0;
      while (cum < 0.8) cum += p[order[n++]];
      expectDistribution(await draws(dev, { topP: 0.8, seed: 3 }), probs(1, order.slice(0, n)));
      expectDistribution(await draws(dev, { topK: 10, topP: 0.5, temperature: 0.8, seed: 4 }), (() => {
        const p10 = probs(0.8, order.slice(0, 10));
        let c = 0, m = 0;
        while (c < 0.5) c += p10[order[m++]];
        return probs(0.8, order.slice(0, m));
      })());
    }
  });

  it('a seed gives the same ids on every backend and every run; temperature 0 is argmax', async () => {
    const results = [];
    for (const [, dev] of devices) {
      results.push(await draws(dev, { seed: 12345, topK: 20 }, 500), await draws(dev, { seed: 12345, topK: 20 }, 500));
      expect(await draws(dev, { temperature: 0 }, 3)).toEqual([0, 1, 2].map(() => ranked(logits)[0]));
    }
    for (const r of results) expect(r).toEqual(results[0]);
    const [, dev] = devices[0];
    expect(await draws(dev, { seed: 12346, topK: 20 }, 500)).not.toEqual(results[0]);
  });

  it('a NaN or +inf logit fails the op with E_ARG (there is no distribution); options are checked at the call', async () => {
    for (const [, dev] of devices) {
      const ids = dev.sample(dev.tensor([0, NaN, 1], [1, 3]));
      await expect(ids.data()).rejects.toMatchObject({ code: 'E_ARG', message: expect.stringContaining('holds NaN at 1') });
      expect(() => dev.sample(dev.tensor([0, 1], [1, 2]), { topP: 0 })).toThrow(expect.objectContaining({ code: 'E_ARG' }));
      expect(() => dev.sample(dev.tensor([0, 1], [1, 2]), { temperature: -1 })).toThrow(expect.objectContaining({ code: 'E_ARG' }));
    }
  });
});
