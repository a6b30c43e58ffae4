// attention against PyTorch's SDPA (oracle) and a float64 reference: masks, causal alignment,
// GQA, fully masked rows, float16/bfloat16 inputs and mxfp8 K/V.
import { beforeAll, describe, expect, it } from 'vitest';
import { open, type Device } from '../lib/index';
import { expectClose, randn, rng } from './helpers/compare';
import { testDevices } from './helpers/devices';
import { f32, oracleCases, shapeOf } from './helpers/oracle';
import { attentionRef, roundToHalf, type AttentionDims } from './helpers/reference';

let dev: Device;
beforeAll(async () => {
  dev = await open({ backend: 'cpu' });
});

function dimsOf(c: Record<string, unknown>): AttentionDims {
  return { B: Number(c.B), Hq: Number(c.Hq), Hkv: Number(c.Hkv), Lq: Number(c.Lq), Lk: Number(c.Lk), D: Number(c.D) };
}

/** A top-left causal bool mask [Lq, Lk] (the oracle gives that rule as an explicit mask). */
function topLeftMask(Lq: number, Lk: number): Uint8Array {
  const m = new Uint8Array(Lq * Lk);
  for (let i = 0; i < Lq; i++) for (let j = 0; j <= Math.min(i, Lk - 1); j++) m[i * Lk + j] = 1;
  return m;
}

describe('attention (oracle: PyTorch SDPA in float64)', () => {
  for (const c of oracleCases('attention')) {
    const d = dimsOf(c);
    const name = `B${d.B} Hq${d.Hq} Hkv${d.Hkv} Lq${d.Lq} Lk${d.Lk} D${d.D} ${c.causal}`;
    const options = () => ({
      ...(c.scale === null ? {} : { scale: Number(c.scale) }),
      ...(c.causal === 'bottom_right' ? { causal: true } : {}),
      ...(c.causal === 'top_left' ? { mask: dev.tensor(topLeftMask(d.Lq, d.Lk), [d.Lq, d.Lk], 'bool') } : {}),
    });

    it(`${name}: float32`, async () => {
      const o = await dev.attention(
        dev.tensor(f32(c.q), shapeOf(c.q)), dev.tensor(f32(c.k), shapeOf(c.k)), dev.tensor(f32(c.v), shapeOf(c.v)),
        options(),
      );
      expect(o.shape).toEqual(shapeOf(c.o));
      expectClose(await o.toFloat32(), f32(c.o), 2e-5, name);
    });

    it(`${name}: float16 inputs`, async () => {
      const o = await dev.attention(
        dev.tensor(f32(c.q), shapeOf(c.q), 'float16'), dev.tensor(f32(c.k), shapeOf(c.k), 'float16'),
        dev.tensor(f32(c.v), shapeOf(c.v), 'float16'), options(),
      );
      expect(o.dtype).toBe('float16');
      expectClose(await o.toFloat32(), f32(c.o), 3e-3, name);
    });
  }
});

describe('attention semantics', () => {
  const d: AttentionDims = { B: 2, Hq: 4, Hkv: 2, Lq: 19, Lk: 45, D: 64 };
  const sizes = { q: d.B * d.Hq * d.Lq * d.D, kv: d.B * d.Hkv * d.Lk * d.D };
  const q = randn(sizes.q, 1), k = randn(sizes.kv, 2), v = randn(sizes.kv, 3);
  const qShape = [d.B, d.Hq, d.Lq, d.D], kvShape = [d.B, d.Hkv, d.Lk, d.D];
  const run = (opts = {}, kk = k, vv = v) =>
    dev.attention(dev.tensor(q, qShape), dev.tensor(kk, kvShape), dev.tensor(vv, kvShape), opts).toFloat32();

  it('bottom-right causal with GQA and a custom scale', async () => {
    expectClose(await run({ causal: true, scale: 0.3 }), attentionRef(q, k, v, d, { causal: true, scale: 0.3 }), 2e-5);
  });

  it('bool mask broadcast from [B, 1, 1, Lk] and from [Lq, Lk]', async () => {
    const r = rng(5);
    const keyMask = Uint8Array.from({ length: d.B * d.Lk }, () => (r() < 0.7 ? 1 : 0));
    const got = await run({ mask: dev.tensor(keyMask, [d.B, 1, 1, d.Lk], 'bool') });
    expectClose(got, attentionRef(q, k, v, d, { allowed: (b, _h, _i, j) => keyMask[b * d.Lk + j] === 1 }), 2e-5);
    const rowMask = Uint8Array.from({ length: d.Lq * d.Lk }, () => (r() < 0.5 ? 1 : 0));
    const got2 = await run({ mask: dev.tensor(rowMask, [d.Lq, d.Lk], 'bool'), causal: true });
    expectClose(got2, attentionRef(q, k, v, d, { causal: true, allowed: (_b, _h, i, j) => rowMask[i * d.Lk + j] === 1 }), 2e-5);
  });

  it('additive float mask [1, Hq, Lq, Lk] including -Infinity', async () => {
    const bias = randn(d.Hq * d.Lq * d.Lk, 8, 2);
    for (let i = 0; i < bias.length; i += 5) bias[i] = -Infinity;
    const got = await run({ mask: dev.tensor(bias, [1, d.Hq, d.Lq, d.Lk]) });
    const want = attentionRef(q, k, v, d, { bias: (_b, h, i, j) => bias[(h * d.Lq + i) * d.Lk + j] });
    expectClose(got, want, 2e-5);
  });

  it('rows that see no key are zeros (mask and causal with Lq > Lk)', async () => {
    const mask = new Uint8Array(d.Lq * d.Lk).fill(1);
    mask.fill(0, 3 * d.Lk, 4 * d.Lk);  // query row 3 sees nothing
    const got = await run({ mask: dev.tensor(mask, [d.Lq, d.Lk], 'bool') });
    for (let b = 0; b < d.B; b++) for (let h = 0; h < d.Hq; h++) {
      const row = got.subarray(((b * d.Hq + h) * d.Lq + 3) * d.D, ((b * d.Hq + h) * d.Lq + 4) * d.D);
      expect(Array.from(row).every((x) => x === 0)).toBe(true);
    }
    // Lq > Lk with bottom-right causal: the first Lq - Lk rows see no key.
    const dd: AttentionDims = { B: 1, Hq: 2, Hkv: 1, Lq: 12, Lk: 5, D: 32 };
    const qq = randn(2 * 12 * 32, 4), kk = randn(5 * 32, 5), vv = randn(5 * 32, 6);
    const o = await (await dev.attention(dev.tensor(qq, [1, 2, 12, 32]), dev.tensor(kk, [1, 1, 5, 32]),
      dev.tensor(vv, [1, 1, 5, 32]), { causal: true })).toFloat32();
    expect(Array.from(o).every((x) => Number.isFinite(x))).toBe(true);
    expectClose(o, attentionRef(qq, kk, vv, dd, { causal: true }), 2e-5);
    expect(Array.from(o.subarray(0, 7 * 32)).every((x) => x === 0)).toBe(true);
  });

  it('GQA equals explicitly repeated K/V', async () => {
    const group = d.Hq / d.Hkv;
    const rep = (x: Float32Array) => {
      const out = new Float32Array(d.B * d.Hq * d.Lk * d.D);
      for (let b = 0; b < d.B; b++) for (let h = 0; h < d.Hq; h++) {
        const src = ((b * d.Hkv + Math.floor(h / group)) * d.Lk) * d.D;
        out.set(x.subarray(src, src + d.Lk * d.D), (b * d.Hq + h) * d.Lk * d.D);
      }
      return out;
    };
    const full = [d.B, d.Hq, d.Lk, d.D];
    const mha = await (await dev.attention(dev.tensor(q, qShape), dev.tensor(rep(k), full), dev.tensor(rep(v), full),
      { causal: true })).toFloat32();
    expectClose(await run({ causal: true }), mha, 1e-6);
  });

  it('is invariant to permuting keys together with values', async () => {
    const r = rng(9);
    const perm = Array.from({ length: d.Lk }, (_, i) => i).sort(() => r() - 0.5);
    const permute = (x: Float32Array) => {
      const out = new Float32Array(x.length);
      for (let bh = 0; bh < d.B * d.Hkv; bh++) for (let j = 0; j < d.Lk; j++) {
        const src = (bh * d.Lk + perm[j]) * d.D;
        out.set(x.subarray(src, src + d.D), (bh * d.Lk + j) * d.D);
      }
      return out;
    };
    expectClose(await run({}, permute(k), permute(v)), await run(), 1e-5);
  });

  it('bfloat16 inputs', async () => {
    const o = await dev.attention(dev.tensor(q, qShape, 'bfloat16'), dev.tensor(k, kvShape, 'bfloat16'),
      dev.tensor(v, kvShape, 'bfloat16'), { causal: true });
    expect(o.dtype).toBe('bfloat16');
    expectClose(await o.toFloat32(), attentionRef(q, k, v, d, { causal: true }), 3e-2);
  });

  it('float16 inputs match the float64 reference on the rounded inputs', async () => {
    const o = await dev.attention(dev.tensor(q, qShape, 'float16'), dev.tensor(k, kvShape, 'float16'),
      dev.tensor(v, kvShape, 'float16'), { causal: true });
    expectClose(await o.toFloat32(), attentionRef(roundToHalf(q), roundToHalf(k), roundToHalf(v), d, { causal: true }), 1e-3);
  });

  for (const format of ['mxfp8', 'mxfp8_e5m2'] as const) {
    it(`${format} K/V: equals attention over the dequantized K/V`, async () => {
      const kq = await dev.quantize(dev.tensor(k, kvShape), { format });
      const vq = await dev.quantize(dev.tensor(v, kvShape), { format });
      const kd = await (await kq.dequantize()).toFloat32();
      const vd = await (await vq.dequantize()).toFloat32();
      const o = await dev.attention(dev.tensor(q, qShape), kq, vq, { causal: true });
      expectClose(await o.toFloat32(), attentionRef(q, kd, vd, d, { causal: true }), 2e-5);
    });
  }

  // The prefill path transposes K tiles in 8 x 8 blocks: head sizes and tile lengths that are not
  // a multiple of 8 take its edge loops (the oracle's head sizes are all multiples of 8).
  for (const D of [12, 36, 67]) {
    it(`prefill with head size ${D} and a last tile of 11 keys`, async () => {
      const dd: AttentionDims = { B: 1, Hq: 4, Hkv: 2, Lq: 17, Lk: 75, D };
      const qq = randn(4 * 17 * D, D), kk = randn(2 * 75 * D, D + 1), vv = randn(2 * 75 * D, D + 2);
      const o = await dev.attention(dev.tensor(qq, [1, 4, 17, D]), dev.tensor(kk, [1, 2, 75, D]),
        dev.tensor(vv, [1, 2, 75, D]), { causal: true });
      expectClose(await o.toFloat32(), attentionRef(qq, kk, vv, dd, { causal: true }), 2e-5);
    });
  }

  it('decode shape: Lq = 1 over a long Lk', async () => {
    const dd: AttentionDims = { B: 1, Hq: 8, Hkv: 2, Lq: 1, Lk: 1500, D: 128 };
    const qq = randn(8 * 128, 11), kk = randn(2 * 1500 * 128, 12), vv = randn(2 * 1500 * 128, 13);
    const o = await dev.attention(dev.tensor(qq, [1, 8, 1, 128]), dev.tensor(kk, [1, 2, 1500, 128]),
      dev.tensor(vv, [1, 2, 1500, 128]), { causal: true });
    expectClose(await o.toFloat32(), attentionRef(qq, kk, vv, dd, { causal: true }), 2e-5);
  });
});

// The NaN rule (native/core/ops.h, check_attention): float arithmetic over the keys a row sees;
// keys hidden by causal, a bool mask or an additive -Infinity are never read.
describe('attention: empty dimensions', () => {
  let devices: [string, Device][];
  beforeAll(async () => { devices = await testDevices(); });

  it('B, Hq, Lq or D of 0 give an empty output of q\'s shape and dtype (both layouts, masks, mxfp8 K/V)', async () => {
    for (const [name, dev] of devices) {
      const t = (shape: number[], dtype: 'float32' | 'float16' = 'float16') =>
        dev.tensor(randn(shape.reduce((p, x) => p * x, 1), 1), shape, dtype);
      const cases: [number[], number[], object][] = [
        [[0, 4, 3, 64], [0, 2, 5, 64], {}], [[2, 0, 3, 64], [2, 2, 5, 64], { causal: true }], [[2, 4, 0, 64], [2, 2, 5, 64], {}],
        [[2, 4, 3, 0], [2, 2, 5, 0], {}], [[1, 0, 3, 64], [1, 0, 5, 64], {}],
        [[2, 4, 0, 64], [2, 2, 5, 64], { mask: dev.tensor(new Uint8Array(0), [0, 5], 'bool') }],
        [[2, 3, 0, 64], [2, 5, 2, 64], { layout: 'blhd' }],
      ];
      for (const [qs, ks, opts] of cases) {
        const o = dev.attention(t(qs), t(ks), t(ks), opts);
        expect(o.shape, `${name} ${qs} ${ks} ${JSON.stringify(Object.keys(opts))}`).toEqual(qs);
        expect(o.dtype).toBe('float16');
        expect(await o.data()).toEqual(new Uint16Array(0));
      }
      const kq = dev.quantize(t([1, 2, 4, 64], 'float32'), { format: 'mxfp8' });
      expect(await dev.attention(t([1, 2, 0, 64]), kq, kq).data()).toEqual(new Uint16Array(0));
      // Hkv = 0 divides only Hq = 0.
      expect(() => dev.attention(t([1, 2, 3, 64]), t([1, 0, 5, 64]), t([1, 0, 5, 64])))
        .toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining('multiple of k/v\'s heads Hkv=0') }));
    }
  });

  it('Lk = 0: every query row sees no key, so the output is zeros (our rule for such rows, and PyTorch\'s math path)', async () => {
    for (const [name, dev] of devices) {
      const d: AttentionDims = { B: 2, Hq: 4, Hkv: 2, Lq: 3, Lk: 0, D: 64 };
      const q = randn(2 * 4 * 3 * 64, 7);
      q[5] = NaN;  // whatever q holds
      const want = attentionRef(q, [], [], d, { causal: true });
      expect(Array.from(want).every((x) => x === 0)).toBe(true);
      const empty = dev.tensor(new Float32Array(0), [2, 2, 0, 64]);
      for (const opts of [{}, { causal: true }, { mask: dev.tensor(new Float32Array(0), [3, 0]) }, { scale: 0.5 }]) {
        const o = dev.attention(dev.tensor(q, [2, 4, 3, 64]), empty, empty, opts);
        expect(o.shape).toEqual([2, 4, 3, 64]);
        expect(Array.from(await o.toFloat32()), `${name} ${JSON.stringify(Object.keys(opts))}`).toEqual(Array.from(want));
      }
      const kq = dev.quantize(empty, { format: 'mxfp8_e5m2' });
      const o16 = dev.attention(dev.tensor(q, [2, 4, 3, 64], 'bfloat16'), kq, kq);
      expect(o16.dtype).toBe('bfloat16');
      expect(Array.from(await o16.toFloat32())).toEqual(new Array(q.length).fill(0));
      // 'blhd': k and v [B, 0, Hkv, D].
      const blhd = dev.attention(dev.tensor(q, [2, 3, 4, 64]), dev.tensor(new Float32Array(0), [2, 0, 2, 64]),
        dev.tensor(new Float32Array(0), [2, 0, 2, 64]), { layout: 'blhd' });
      expect(blhd.shape).toEqual([2, 3, 4, 64]);
      expect(Array.from(await blhd.toFloat32())).toEqual(new Array(q.length).fill(0));
    }
  });
});

describe('attention NaN and inf semantics', () => {
  type Opts = { causal?: boolean; mask?: { data: Float32Array | Uint8Array; shape: number[] } };
  /** Runs attention and the float64 rule; requires the reference to hold both NaN and finite values. */
  async function check(d: AttentionDims, q: Float32Array, k: Float32Array, v: Float32Array, opts: Opts = {},
    what = '') {
    const mask = opts.mask;
    const isBool = mask?.data instanceof Uint8Array;
    const maskAt = (b: number, h: number, i: number, j: number) => {
      // the mask's shape, right-aligned to [B, Hq, Lq, Lk]; a dimension of 1 broadcasts
      const shape = [1, 1, 1, 1, ...mask!.shape].slice(-4);
      let at = 0;
      [b, h, i, j].forEach((x, a) => { at = at * shape[a] + (shape[a] === 1 ? 0 : x); });
      return mask!.data[at];
    };
    const want = attentionRef(q, k, v, d, {
      causal: opts.causal,
      ...(mask && isBool ? { allowed: (b, h, i, j) => maskAt(b, h, i, j) !== 0 } : {}),
      ...(mask && !isBool ? { bias: (b, h, i, j) => maskAt(b, h, i, j) } : {}),
    });
    const o = await dev.attention(dev.tensor(q, [d.B, d.Hq, d.Lq, d.D]), dev.tensor(k, [d.B, d.Hkv, d.Lk, d.D]),
      dev.tensor(v, [d.B, d.Hkv, d.Lk, d.D]), {
        ...(opts.causal ? { causal: true } : {}),
        ...(mask ? { mask: dev.tensor(mask.data, mask.shape, isBool ? 'bool' : 'float32') } : {}),
      });
    const got = await o.toFloat32();
    expect(Array.from(want).some(Number.isNaN), `${what}: the reference has NaN`).toBe(true);
    expect(Array.from(want).some(Number.isFinite), `${what}: the reference has finite values`).toBe(true);
    expectClose(got, want, 2e-5, what);
    return { got, want };
  }
  const at = (d: AttentionDims, b: number, h: number, i: number, L: number) => ((b * d.Hq + h) * L + i) * d.D;
  const kvAt = (d: AttentionDims, b: number, hk: number, j: number) => ((b * d.Hkv + hk) * d.Lk + j) * d.D;

  // Prefill (R > 8 rows per task: the gemm path) and decode (dot path); Lk over several 64-key tiles.
  const shapes: [string, AttentionDims][] = [
    ['prefill', { B: 2, Hq: 4, Hkv: 2, Lq: 21, Lk: 150, D: 64 }],
    ['decode', { B: 1, Hq: 4, Hkv: 1, Lq: 2, Lk: 150, D: 32 }],
  ];
  for (const [kind, d] of shapes) {
    const nq = d.B * d.Hq * d.Lq * d.D, nkv = d.B * d.Hkv * d.Lk * d.D;
    const base = () => ({ q: randn(nq, 31), k: randn(nkv, 32), v: randn(nkv, 33) });

    it(`${kind}: NaN in a q row poisons that row only; a fully masked NaN row stays zeros`, async () => {
      const { q, k, v } = base();
      q[at(d, 1 % d.B, 2, d.Lq - 1, d.Lq) + 5] = NaN;  // a row that sees keys
      q[at(d, 0, 1, 0, d.Lq)] = NaN;                    // row 0: hidden from every key by the mask
      const mask = new Uint8Array(d.Lq * d.Lk).fill(1);
      mask.fill(0, 0, d.Lk);
      const { got } = await check(d, q, k, v, { mask: { data: mask, shape: [d.Lq, d.Lk] } }, 'q NaN');
      const row0 = got.subarray(at(d, 0, 1, 0, d.Lq), at(d, 0, 1, 0, d.Lq) + d.D);
      expect(Array.from(row0).every((x) => x === 0)).toBe(true);
    });

    it(`${kind}: NaN in a K row poisons the rows that see it, not those causal or the mask hide it from`, async () => {
      const { q, k, v } = base();
      const jc = d.Lk - d.Lq + Math.floor(d.Lq / 2);  // causal: seen by the later half of the queries
      k[kvAt(d, 0, 0, jc) + 3] = NaN;
      const jm = 70;                                   // seen by every row but hidden by the mask from even ones
      k[kvAt(d, d.B - 1, d.Hkv - 1, jm)] = NaN;
      const mask = new Uint8Array(d.Lq * d.Lk).fill(1);
      for (let i = 0; i < d.Lq; i += 2) mask[i * d.Lk + jm] = 0;
      await check(d, q, k, v, { causal: true, mask: { data: mask, shape: [d.Lq, d.Lk] } }, 'K NaN');
    });

    it(`${kind}: NaN in V poisons its column of the rows that see the key, even at weight 0`, async () => {
      const { q, k, v } = base();
      const jc = d.Lk - d.Lq + 1;  // causal: hidden from query 0 only, inside a visited tile
      v[kvAt(d, 0, 0, jc) + 7] = NaN;
      const jm = 100;              // hidden by the mask from even rows
      v[kvAt(d, d.B - 1, 0, jm) + 2] = NaN;
      const jw = 20;               // seen by all, weight ~0: the score is pushed far below the max
      v[kvAt(d, 0, d.Hkv - 1, jw) + 11] = NaN;
      const bias = new Float32Array(d.Lq * d.Lk);
      for (let i = 0; i < d.Lq; i++) {
        if (i % 2 === 0) bias[i * d.Lk + jm] = -Infinity;
        bias[i * d.Lk + jw] = -1e4;
      }
      const { got } = await check(d, q, k, v, { causal: true, mask: { data: bias, shape: [d.Lq, d.Lk] } }, 'V NaN');
      // only column 7 / 2 / 11 of a row may be NaN
      for (let x = 0; x < got.length; x++)
        if (Number.isNaN(got[x])) expect([7, 2, 11]).toContain(x % d.D);
    });

    it(`${kind}: a NaN or +Infinity in an additive mask poisons its row; -Infinity hides a NaN key`, async () => {
      const { q, k, v } = base();
      const bias = randn(d.B * d.Hq * d.Lq * d.Lk, 34);
      bias[((1 % d.B) * d.Hq + 1) * d.Lq * d.Lk + 1 * d.Lk + 40] = NaN;
      bias[(0 * d.Hq + 3) * d.Lq * d.Lk + (d.Lq - 1) * d.Lk + 140] = Infinity;
      const jn = 90;  // NaN K and V, hidden from every row by -Infinity
      k[kvAt(d, 0, 0, jn)] = NaN;
      v[kvAt(d, 0, 0, jn) + 1] = NaN;
      for (let bh = 0; bh < d.B * d.Hq; bh++) for (let i = 0; i < d.Lq; i++) bias[(bh * d.Lq + i) * d.Lk + jn] = -Infinity;
      await check(d, q, k, v, { mask: { data: bias, shape: [d.B, d.Hq, d.Lq, d.Lk] } }, 'mask NaN');
    });
  }

  it('inf in V: +Infinity where seen with weight > 0, NaN where +inf meets -inf, nothing where hidden', async () => {
    const d: AttentionDims = { B: 1, Hq: 2, Hkv: 1, Lq: 21, Lk: 150, D: 32 };
    const q = randn(2 * 21 * 32, 61), k = randn(150 * 32, 62), v = randn(150 * 32, 63);
    v[40 * 32 + 6] = Infinity;   // seen by every row
    v[140 * 32 + 6] = -Infinity; // seen by rows i >= 11 (causal): column 6 NaN there, +inf before
    v[145 * 32 + 9] = Infinity;  // seen by rows i >= 16
    q[5 * 32] = NaN;             // head 0, row 5
    const { got } = await check(d, q, k, v, { causal: true }, 'V inf');
    expect(got[(2 * 32) + 6]).toBe(Infinity);
    expect(Number.isNaN(got[(12 * 32) + 6])).toBe(true);
    expect(got[(17 * 32) + 9]).toBe(Infinity);
    expect(Number.isFinite(got[(15 * 32) + 9])).toBe(true);
  });

  it('a tile whose only seen key has a NaN K, alone and as one split of a long decode', async () => {
    for (const Lk of [150, 1500]) {
      const d: AttentionDims = { B: 1, Hq: 4, Hkv: 2, Lq: 1, Lk, D: 64 };
      const q = randn(4 * 64, 71), k = randn(2 * Lk * 64, 72), v = randn(2 * Lk * 64, 73);
      const j = Lk - 10;
      k[j * 64 + 3] = NaN;  // kv head 0
      const mask = new Uint8Array(Lk);
      mask[j] = 1;          // the row sees only the NaN key: its tile (or split) starts from m = -inf
      const { got } = await check(d, q, k, v, { mask: { data: mask, shape: [1, 1, 1, Lk] } }, `Lk ${Lk}`);
      expect(got.subarray(0, 2 * 64).every(Number.isNaN)).toBe(true);
    }
  });

  it('split decode (Lq = 1, Lk = 1500): NaN K and V in one split poison the merge', async () => {
    const d: AttentionDims = { B: 1, Hq: 4, Hkv: 2, Lq: 1, Lk: 1500, D: 64 };
    const q = randn(4 * 64, 41), k = randn(2 * 1500 * 64, 42), v = randn(2 * 1500 * 64, 43);
    q[2 * 64 + 9] = NaN;        // head 2
    v[1200 * 64 + 4] = NaN;     // column 4 of heads 0 and 1 (kv head 0)
    await check(d, q, k, v, { causal: true }, 'split V NaN');
    k[700 * 64] = NaN;          // heads 0 and 1
    v[1200 * 64 + 4] = 0;
    const { got } = await check(d, q, k, v, { causal: true }, 'split K NaN');
    expect(got.subarray(0, 2 * 64).every(Number.isNaN)).toBe(true);
  });

  for (const format of ['mxfp8', 'mxfp8_e5m2'] as const) {
    it(`${format} K/V: a NaN block (scale byte 0xFF) poisons like a NaN value`, async () => {
      const d: AttentionDims = { B: 1, Hq: 2, Hkv: 1, Lq: 12, Lk: 80, D: 64 };
      const q = randn(2 * 12 * 64, 51), k = randn(80 * 64, 52), v = randn(80 * 64, 53);
      k[75 * 64 + 40] = NaN;  // block 1 of key 75: seen by the last 7 queries (causal)
      v[72 * 64 + 3] = NaN;   // block 0 of value 72
      const kq = await dev.quantize(dev.tensor(k, [1, 1, 80, 64]), { format });
      const vq = await dev.quantize(dev.tensor(v, [1, 1, 80, 64]), { format });
      const kd = await (await kq.dequantize()).toFloat32();
      const vd = await (await vq.dequantize()).toFloat32();
      expect(Number.isNaN(kd[75 * 64 + 33]) && Number.isNaN(vd[72 * 64 + 31])).toBe(true);  // whole blocks
      const want = attentionRef(q, kd, vd, d, { causal: true });
      expect(Array.from(want).some(Number.isNaN) && Array.from(want).some(Number.isFinite)).toBe(true);
      const o = await dev.attention(dev.tensor(q, [1, 2, 12, 64]), kq, vq, { causal: true });
      expectClose(await o.toFloat32(), want, 2e-5);
    });
  }
});

// Decode with more threads than (batch, kv head) tasks splits the keys (flash-decoding); the split
// that finishes its group last merges it, while other threads still run other groups' splits.
describe('attention: split decode across many threads', () => {
  it('every group merged once, from all its splits, the same way each time (8 threads)', async () => {
    const many = await open({ backend: 'cpu', threads: 8 });
    for (const d of [
      { B: 2, Hq: 16, Hkv: 4, Lq: 1, Lk: 600, D: 64 },   // 8 groups of 2 splits (320 and 280 keys)
      { B: 1, Hq: 8, Hkv: 4, Lq: 1, Lk: 1100, D: 64 },   // 4 groups of 4 splits (the last 140 keys)
    ] satisfies AttentionDims[]) {
      const q = randn(d.B * d.Hq * d.D, 81), k = randn(d.B * d.Hkv * d.Lk * d.D, 82);
      const v = randn(d.B * d.Hkv * d.Lk * d.D, 83);
      const want = attentionRef(q, k, v, d, { causal: true });
      const qt = many.tensor(q, [d.B, d.Hq, 1, d.D]);
      const kt = many.tensor(k, [d.B, d.Hkv, d.Lk, d.D]), vt = many.tensor(v, [d.B, d.Hkv, d.Lk, d.D]);
      let first: Float32Array | undefined;
      for (let rep = 0; rep < 20; rep++) {
        const o = await many.attention(qt, kt, vt, { causal: true });
        const got = await o.toFloat32();
        o.dispose();
        if (!first) {
          expectClose(got, want, 2e-5, `Hkv ${d.Hkv}`);
          first = got;
        } else {
          expect(got, `Hkv ${d.Hkv}, repeat ${rep}`).toEqual(first);  // the merge order is fixed
        }
      }
    }
  });
});

// Attention sinks (gpt-oss): a learned logit per query head in every row's softmax denominator,
// with no value. Both backends of the test devices (cpu, and the asynchronous test backend that
// queues as the metal backend does) against the float64 reference.
describe('attention sinks', async () => {
  const devices = await testDevices();
  const shapes: [string, AttentionDims, boolean][] = [
    ['prefill, GQA 2', { B: 2, Hq: 4, Hkv: 2, Lq: 21, Lk: 150, D: 64 }, true],
    ['decode', { B: 1, Hq: 4, Hkv: 1, Lq: 2, Lk: 150, D: 32 }, true],
    ['split decode (Lk 1500, one kv head)', { B: 1, Hq: 2, Hkv: 1, Lq: 1, Lk: 1500, D: 64 }, false],
    ['Lq > Lk (rows that see no key)', { B: 1, Hq: 2, Hkv: 2, Lq: 12, Lk: 5, D: 16 }, true],
  ];
  const input = (d: AttentionDims, seed: number) => ({
    q: randn(d.B * d.Hq * d.Lq * d.D, seed).map((x) => 2 * x),
    k: randn(d.B * d.Hkv * d.Lk * d.D, seed + 1),
    v: randn(d.B * d.Hkv * d.Lk * d.D, seed + 2),
  });
  const sinksOf = (Hq: number, seed: number) => {
    const s = randn(Hq, seed).map((x) => 2 * x);
    s[0] += 6;  // head 0's sink takes most of the weight
    return s;
  };
  for (const [devName, dv] of devices) {
    for (const [name, d, causal] of shapes) {
      it(`${devName}: ${name}${causal ? ', causal' : ''}`, async () => {
        const { q, k, v } = input(d, 7);
        const sinks = sinksOf(d.Hq, 9);
        const o = await dv.attention(dv.tensor(q, [d.B, d.Hq, d.Lq, d.D]), dv.tensor(k, [d.B, d.Hkv, d.Lk, d.D]),
          dv.tensor(v, [d.B, d.Hkv, d.Lk, d.D]), { causal, sinks: dv.tensor(sinks, [d.Hq]) }).toFloat32();
        const want = attentionRef(q, k, v, d, { causal, sinks });
        expectClose(o, want, 2e-5, name);
        const plain = attentionRef(q, k, v, d, { causal });
        expect(Array.from(want).some((x, i) => Math.abs(x - plain[i]) > 1e-3), 'the sinks matter').toBe(true);
        if (d.Lq > d.Lk && causal) {
          const row0 = o.subarray(0, d.D);  // query 0 sees no key: zeros, sinks or not
          expect(Array.from(row0).every((x) => x === 0)).toBe(true);
        }
      });
    }

    it(`${devName}: float16 q/k/v with a bool mask and a custom scale`, async () => {
      const d: AttentionDims = { B: 1, Hq: 4, Hkv: 2, Lq: 9, Lk: 40, D: 64 };
      const { q, k, v } = input(d, 17);
      const [qh, kh, vh] = [q, k, v].map((x) => roundToHalf(x));
      const sinks = sinksOf(d.Hq, 19);
      const r = rng(3);
      const mask = Uint8Array.from({ length: d.Lq * d.Lk }, () => (r() < 0.7 ? 1 : 0));
      const o = await dv.attention(dv.tensor(qh, [d.B, d.Hq, d.Lq, d.D], 'float16'),
        dv.tensor(kh, [d.B, d.Hkv, d.Lk, d.D], 'float16'), dv.tensor(vh, [d.B, d.Hkv, d.Lk, d.D], 'float16'),
        { scale: 0.2, mask: dv.tensor(mask, [d.Lq, d.Lk], 'bool'), sinks: dv.tensor(sinks, [d.Hq]) }).toFloat32();
      const want = attentionRef(qh, kh, vh, d, { scale: 0.2, allowed: (_b, _h, i, j) => mask[i * d.Lk + j] !== 0, sinks });
      expectClose(o, want, 3e-3, 'float16');
    });

    it(`${devName}: NaN and +Infinity sinks make their heads' rows NaN, -Infinity is no sink`, async () => {
      for (const d of [{ B: 1, Hq: 4, Hkv: 2, Lq: 21, Lk: 150, D: 64 }, { B: 1, Hq: 4, Hkv: 1, Lq: 1, Lk: 1500, D: 32 }]) {
        const { q, k, v } = input(d, 23);
        const sinks = Float32Array.from([NaN, -Infinity, Infinity, 0.5]);
        const run = (s: Float32Array) => dv.attention(dv.tensor(q, [d.B, d.Hq, d.Lq, d.D]),
          dv.tensor(k, [d.B, d.Hkv, d.Lk, d.D]), dv.tensor(v, [d.B, d.Hkv, d.Lk, d.D]),
          { causal: true, sinks: dv.tensor(s, [d.Hq]) }).toFloat32();
        const got = await run(sinks);
        const want = attentionRef(q, k, v, d, { causal: true, sinks });
        const per = d.Lq * d.D;
        expect(Array.from(want.subarray(0, per)).every(Number.isNaN), 'NaN sink: head 0 NaN').toBe(true);
        expect(Array.from(want.subarray(2 * per, 3 * per)).every(Number.isNaN), '+inf sink: head 2 NaN').toBe(true);
        expectClose(got, want, 2e-5, `Lq ${d.Lq}`);
        // -Infinity: bit for bit the attention without sinks
        const none = await dv.attention(dv.tensor(q, [d.B, d.Hq, d.Lq, d.D]), dv.tensor(k, [d.B, d.Hkv, d.Lk, d.D]),
          dv.tensor(v, [d.B, d.Hkv, d.Lk, d.D]), { causal: true }).toFloat32();
        expect(got.subarray(per, 2 * per)).toEqual(none.subarray(per, 2 * per));
      }
    });

    it(`${devName}: a row that sees no key is zeros whatever the sink (NaN too); Lk = 0 likewise`, async () => {
      const d: AttentionDims = { B: 1, Hq: 2, Hkv: 1, Lq: 4, Lk: 8, D: 16 };
      const { q, k, v } = input(d, 29);
      const mask = new Uint8Array(d.Lq * d.Lk).fill(1);
      mask.fill(0, 0, d.Lk);  // query 0 sees nothing
      const sinks = Float32Array.from([NaN, 1]);
      const o = await dv.attention(dv.tensor(q, [1, 2, 4, 16]), dv.tensor(k, [1, 1, 8, 16]), dv.tensor(v, [1, 1, 8, 16]),
        { mask: dv.tensor(mask, [d.Lq, d.Lk], 'bool'), sinks: dv.tensor(sinks, [2]) }).toFloat32();
      expect(Array.from(o.subarray(0, 16)).every((x) => x === 0)).toBe(true);
      expect(Array.from(o.subarray(16, 64)).every(Number.isNaN)).toBe(true);
      const e = await dv.attention(dv.tensor(q, [1, 2, 4, 16]), dv.tensor(new Float32Array(0), [1, 1, 0, 16]), dv.tensor(new Float32Array(0), [1, 1, 0, 16]),
        { sinks: dv.tensor(sinks, [2]) }).toFloat32();
      expect(Array.from(e).every((x) => x === 0)).toBe(true);
    });

    it(`${devName}: sinks must be float32 [Hq]`, () => {
      const q = dv.tensor(new Float32Array(128), [1, 4, 2, 16]), kv = dv.tensor(new Float32Array(96), [1, 2, 3, 16]);
      expect(() => dv.attention(q, kv, kv, { sinks: dv.tensor(new Float32Array(2), [2]) })).toThrow(expect.objectContaining({ code: 'E_SHAPE' }));
      expect(() => dv.attention(q, kv, kv, { sinks: dv.tensor(new Float32Array(4), [1, 4]) })).toThrow(expect.objectContaining({ code: 'E_SHAPE' }));
      expect(() => dv.attention(q, kv, kv, { sinks: dv.tensor(new Float32Array(4), [4], 'float16') })).toThrow(expect.objectContaining({ code: 'E_DTYPE' }));
      expect(() => dv.attention(q, kv, kv, { sinks: [1, 2, 3, 4] as never })).toThrow(expect.objectContaining({ code: 'E_ARG' }));
    });
  }
});
