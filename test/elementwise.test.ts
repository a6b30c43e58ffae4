// Elementwise ops (docs/design/API.md "Elementwise"): add, mul, silu, gelu (exact and tanh),
// swiglu, with NumPy broadcasting, against float64 references, in every float dtype.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Device, Tensor } from '../lib/index';
import { expectClose, randn } from './helpers/compare';
import { testDevices } from './helpers/devices';
import { roundToHalf } from './helpers/reference';

let devices: [string, Device][];
beforeAll(async () => { devices = await testDevices(); });

const silu = (x: number) => (x === -Infinity ? -0 : x / (1 + Math.exp(-x)));
// erf to float64 accuracy (Abramowitz-Stegun 7.1.26 is too coarse): series / continued fraction.
function erf(x: number): number {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? NaN : Math.sign(x);
  const ax = Math.abs(x);
  if (ax < 3) {
    let sum = x, term = x;
    for (let n = 1; n < 200; n++) {
      term *= -x * x / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc continued fraction for large |x|
  let f = 0;
  for (let n = 60; n >= 1; n--) f = (n / 2) / (ax + f);
  const erfc = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / (ax + f);
  return Math.sign(x) * (1 - erfc);
}
const gelu = (x: number) => (x === -Infinity ? -0 : 0.5 * x * (1 + erf(x / Math.SQRT2)));
const geluTanh = (x: number) =>
  !Number.isFinite(x) && !Number.isNaN(x) ? (x > 0 ? x : -0) : 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

// The NumPy broadcast of a over b, by index arithmetic independent of the addon's.
function broadcastRef(a: Float32Array, as: number[], b: Float32Array, bs: number[], f: (x: number, y: number) => number) {
  const rank = Math.max(as.length, bs.length);
  const pa = [...Array(rank - as.length).fill(1), ...as], pb = [...Array(rank - bs.length).fill(1), ...bs];
  const out = pa.map((d, i) => (d === 1 ? pb[i] : d));  // a 0 broadcasts with 1 and gives 0
  const n = out.reduce((p, d) => p * d, 1);
  const res = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let rest = i, ia = 0, ib = 0, sa = 1, sb = 1;
    for (let d = rank - 1; d >= 0; d--) {
      const idx = rest % out[d];
      rest = Math.floor(rest / out[d]);
      ia += (pa[d] === 1 ? 0 : idx) * sa;
      ib += (pb[d] === 1 ? 0 : idx) * sb;
      sa *= pa[d];
      sb *= pb[d];
    }
    res[i] = f(a[ia], b[ib]);
  }
  return { res, out };
}

const dtypes = [['float32', 1e-6], ['float16', 1e-3], ['bfloat16', 8e-3]] as const;
const round = (x: Float32Array, dt: string) => (dt === 'float16' ? roundToHalf(x) : dt === 'bfloat16' ? roundBf16(x) : x);
function roundBf16(x: Float32Array): Float32Array {
  const u = new Uint32Array(Float32Array.from(x).buffer);
  for (let i = 0; i < u.length; i++) {
    if ((u[i] & 0x7fffffff) > 0x7f800000) continue;
    u[i] = ((u[i] + 0x7fff + ((u[i] >>> 16) & 1)) >>> 16) << 16;
  }
  return new Float32Array(u.buffer);
}

describe('binary ops with broadcasting', () => {
  const shapes: [number[], number[]][] = [
    [[3, 5, 7], [3, 5, 7]], [[3, 5, 7], [7]], [[3, 1, 7], [1, 5, 1]], [[4, 1], [3]], [[1], [2, 3]],
    [[2, 3, 4, 5], [3, 1, 5]], [[70000], [70000]], [[300, 257], [257]],
  ];
  for (const [op, f] of [['add', (x: number, y: number) => x + y], ['mul', (x: number, y: number) => x * y],
    ['swiglu', (x: number, y: number) => silu(x) * y]] as const) {
    for (const [dt, tol] of dtypes) {
      it(`${op} ${dt}: every broadcast pattern equals the float64 reference`, async () => {
        for (const [name, dev] of devices) {
          for (const [as, bs] of shapes) {
            const a = round(randn(as.reduce((p, d) => p * d, 1), 1, 3), dt);
            const b = round(randn(bs.reduce((p, d) => p * d, 1), 2, 3), dt);
            const y = (dev[op] as (a: Tensor, b: Tensor) => Tensor).call(dev, dev.tensor(a, as, dt), dev.tensor(b, bs, dt));
            const { res, out } = broadcastRef(a, as, b, bs, f);
            expect(y.shape).toEqual(out);
            expect(y.dtype).toBe(dt);
            expectClose(await y.toFloat32(), res, tol, `${name} ${op} ${as} ${bs}`);
          }
        }
      });
    }
  }

  it('outputs larger than the caches (streamed to memory): add broadcast over 4097 x 2049, silu over 8.4M, float32, equal the float64 reference', async () => {
    const [rows, cols] = [4097, 2049];  // 33.6 MB: odd widths, so runs start unaligned
    const a = randn(rows * cols, 41, 3), b = randn(cols, 42, 3);
    for (const [name, dev] of devices) {
      const y = await dev.add(dev.tensor(a, [rows, cols]), dev.tensor(b, [cols])).toFloat32();
      expectClose(y, broadcastRef(a, [rows, cols], b, [cols], (x, z) => x + z).res, 1.2e-7, `${name} add`);
      const s = await dev.silu(dev.tensor(a, [rows, cols])).toFloat32();
      expectClose(s, Float64Array.from(a, silu), 1e-6, `${name} silu`);
    }
  });

  it('mixed dtypes give float32; NaN and infinities follow float arithmetic', async () => {
    for (const [, dev] of devices) {
      const y = dev.add(dev.tensor([1, 2], [2], 'float16'), dev.tensor([0.5, 0.25], [2], 'bfloat16'));
      expect(y.dtype).toBe('float32');
      expectClose(await y.toFloat32(), [1.5, 2.25], 0);
      const z = dev.mul(dev.tensor([NaN, Infinity, Infinity, -0], [4]), dev.tensor([1, 0, -2, 5], [4]));
      expectClose(await z.toFloat32(), [NaN, NaN, -Infinity, -0], 0);
    }
  });

  it('empty dimensions: a 0 broadcasts with 0 or 1 and gives 0; outputs are empty, in the promoted dtype', async () => {
    const empty: [number[], number[], number[]][] = [
      [[0], [0], [0]], [[0, 4], [4], [0, 4]], [[0, 4], [1, 4], [0, 4]], [[3, 0], [3, 1], [3, 0]], [[1], [0], [0]],
      [[2, 1, 5], [0, 1], [2, 0, 5]], [[0, 3], [1], [0, 3]], [[4, 0, 2], [4, 0, 2], [4, 0, 2]],
    ];
    for (const [name, dev] of devices) {
      for (const [as, bs, want] of empty) {
        for (const op of ['add', 'mul', 'swiglu'] as const) {
          const a = randn(as.reduce((p, d) => p * d, 1), 1), b = randn(bs.reduce((p, d) => p * d, 1), 2);
          const y = dev[op](dev.tensor(a, as, 'float16'), dev.tensor(b, bs, 'bfloat16'));
          expect(y.shape, `${name} ${op} ${as} ${bs}`).toEqual(want);
          expect(broadcastRef(a, as, b, bs, (x, z) => x + z).out).toEqual(want);
          expect(y.dtype).toBe('float32');
          expect(await y.toFloat32()).toEqual(new Float32Array(0));
          expect(await y.data()).toEqual(new Float32Array(0));
        }
      }
      for (const op of ['silu', 'gelu'] as const) {
        const y = dev[op](dev.tensor(new Uint16Array(0), [2, 0, 3], 'bfloat16'));
        expect(y.shape).toEqual([2, 0, 3]);
        expect(y.dtype).toBe('bfloat16');
        expect(await y.data()).toEqual(new Uint16Array(0));
      }
      // A 0 against anything but 0 or 1 does not broadcast (NumPy, PyTorch).
      expect(() => dev.add(dev.tensor(new Float32Array(0), [0, 4]), dev.tensor(new Float32Array(8), [2, 4])))
        .toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining('dimension -2: 0 vs 2') }));
      // The empty result chains into later ops, and the ops before it still run first.
      const z = dev.add(dev.silu(dev.tensor(new Float32Array(0), [0, 4])), dev.tensor([1, 2, 3, 4], [4]));
      expect(await z.toFloat32()).toEqual(new Float32Array(0));
    }
  });

  it('rejects shapes that do not broadcast and non-float dtypes, naming them', () => {
    const [, dev] = devices[0];
    expect(() => dev.add(dev.tensor(new Float32Array(6), [2, 3]), dev.tensor(new Float32Array(4), [4])))
      .toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining('[2, 3] and b [4] do not broadcast') }));
    expect(() => dev.mul(dev.tensor(new Int32Array(2), [2], 'int32'), dev.tensor([1, 2], [2])))
      .toThrow(expect.objectContaining({ code: 'E_DTYPE', message: expect.stringContaining("a has dtype 'int32'") }));
    expect(() => dev.add(dev.tensor([1], [1]), 3 as unknown as Tensor)).toThrow(expect.objectContaining({ code: 'E_ARG' }));
  });
});

describe('unary ops', () => {
  const special = [0, -0, 1e-30, -1e-30, 30, -30, 90, -90, 1e30, -1e30, Infinity, -Infinity, NaN];
  for (const [op, f, opts] of [['silu', silu, undefined], ['gelu', gelu, undefined], ['gelu', geluTanh, { approximate: 'tanh' }]] as const) {
    for (const [dt, tol] of dtypes) {
      const label = `${op}${opts ? ' tanh' : ''} ${dt}`;
      it(`${label}: random and extreme values equal the float64 reference (infinities give the limits)`, async () => {
        for (const [name, dev] of devices) {
          const x = round(Float32Array.from([...randn(5001, 3, 4), ...special]), dt);
          const t = dev.tensor(x, [x.length], dt);
          const y = op === 'silu' ? dev.silu(t) : dev.gelu(t, opts);
          expect(y.dtype).toBe(dt);
          expectClose(await y.toFloat32(), Array.from(x, f), tol * 2, `${name} ${label}`);
        }
      });
    }
  }

  // The vectorised float32 kernels (native/cpu/vmath.h) against float64 over a wide range: +-10^k for
  // k in [-30, 30], and a dense walk over [-110, 30] (through the exp's underflow near -87 and -104):
  // relative errors where the result is above 1e-30 (below, e^x inside silu nears the subnormals)
  // and where float64 itself is accurate (gelu's reference 1 + erf cancels below x = -5;
  // tanh-gelu's 1 + tanh below x = -4).
  it('float32: relative error against float64 over a wide range of values (silu, swiglu, gelu, tanh-gelu)', async () => {
    const xs: number[] = [];
    for (let i = 0; i <= 6000; i++) { const v = 10 ** (-30 + i / 100); xs.push(v, -v); }
    for (let i = 0; i <= 14000; i++) xs.push(-110 + i / 100 + 0.0037);
    const x = Float32Array.from(xs);
    const ones = new Float32Array(x.length).fill(1.5);
    for (const [name, dev] of devices) {
      const t = dev.tensor(x, [x.length]);
      for (const [op, f, rel, from, got] of [
        ['silu', silu, 4e-7, -Infinity, dev.silu(t)],
        ['swiglu', (v: number) => silu(v) * 1.5, 4e-7, -Infinity, dev.swiglu(t, dev.tensor(ones, [x.length]))],
        ['gelu', gelu, 2e-6, -5, dev.gelu(t)],
        ['gelu tanh', geluTanh, 2e-6, -4, dev.gelu(t, { approximate: 'tanh' })],
      ] as const) {
        const y = await got.toFloat32();
        let worst = 0, at = 0;
        for (let i = 0; i < x.length; i++) {
          const w = f(x[i]);
          if (!(x[i] >= from) || !(Math.abs(w) >= 1e-30) || !(Math.abs(w) <= 3.4e38)) continue;
          const e = Math.abs(y[i] - w) / Math.abs(w);
          if (e > worst) { worst = e; at = i; }
        }
        expect(worst, `${name} ${op}: worst at x = ${x[at]}: got ${y[at]}, want ${f(x[at])}`).toBeLessThanOrEqual(rel);
      }
    }
  });

  it('gelu rejects unknown options', () => {
    const [, dev] = devices[0];
    expect(() => dev.gelu(dev.tensor([1], [1]), { approximate: 'erf' as 'none' }))
      .toThrow(expect.objectContaining({ code: 'E_ARG', message: expect.stringContaining("options.approximate must be one of 'none', 'tanh'") }));
  });
});

// gpt-oss's swiglu (llama.cpp's swiglu_oai): g = min(gate, limit), u = clamp(up, -limit, limit),
// g * sigmoid(alpha g) * (u + 1); NaN stays NaN through the clamps.
describe('swiglu with { alpha, limit } (gpt-oss)', () => {
  const oai = (g0: number, u0: number, alpha: number, limit: number) => {
    const g = g0 > limit ? limit : g0;
    let u = u0 > limit ? limit : u0;
    u = u < -limit ? -limit : u;
    // float32's glu: it underflows to 0 (g = -100), and 0 times an unclamped infinite up is NaN
    const glu = g === -Infinity ? -0 : Math.fround(g / (1 + Math.exp(-alpha * g)));
    return glu * (u + 1);
  };
  const extremes = [0, -0, 7, -7, 7.5, -7.5, 1e30, -1e30, Infinity, -Infinity, NaN, 100, -100];

  for (const [alpha, limit] of [[1.702, 7], [1.702, Infinity], [0.5, 2]] as const) {
    it(`alpha ${alpha}, limit ${limit}: random and extreme values, broadcast up, every dtype, equal the float64 reference`, async () => {
      const rows = 37, cols = 65;
      const gate = randn(rows * cols, 11, 4), up = randn(rows * cols, 12, 4);
      extremes.forEach((x, i) => { gate[i * 7] = x; up[i * 11 + 3] = x; gate[i * 11 + 3] = extremes[(i + 5) % extremes.length]; });
      const upRow = randn(cols, 13, 9);
      for (const [name, dev] of devices) {
        for (const dt of ['float32', 'float16', 'bfloat16'] as const) {
          const g = dev.tensor(gate, [rows, cols], dt), u = dev.tensor(up, [rows, cols], dt);
          const gr = await g.toFloat32(), ur = await u.toFloat32();  // the rounded inputs
          const y = dev.swiglu(g, u, { alpha, limit });
          expect(y.dtype).toBe(dt);
          const want = Float64Array.from(gr, (x, i) => oai(x, ur[i], alpha, limit));
          expectClose(await y.toFloat32(), want, dt === 'float32' ? 1e-6 : 1e-2, `${name} ${dt}`);
          const ub = dev.tensor(upRow, [cols], dt);
          const ubr = await ub.toFloat32();
          const wantB = Float64Array.from(gr, (x, i) => oai(x, ubr[i % cols], alpha, limit));
          expectClose(await dev.swiglu(g, ub, { alpha, limit }).toFloat32(), wantB, dt === 'float32' ? 1e-6 : 1e-2, `${name} ${dt} broadcast`);
        }
      }
    });
  }

  it('limit clamps: gate above it, up outside [-limit, limit]; without options swiglu is silu(gate) * up', async () => {
    for (const [name, dev] of devices) {
      const g = dev.tensor([10, 3, -3, NaN, 1], [5]), u = dev.tensor([0, 20, -20, 1, NaN], [5]);
      const y = await dev.swiglu(g, u, { alpha: 1.702, limit: 7 }).toFloat32();
      const s = (x: number) => 1 / (1 + Math.exp(-1.702 * x));
      expectClose(y, [7 * s(7) * 1, 3 * s(3) * 8, -3 * s(-3) * -6, NaN, NaN], 1e-6, name);
      const plain = await dev.swiglu(g, u).toFloat32();
      expectClose(plain, [silu(10) * 0, silu(3) * 20, silu(-3) * -20, NaN, NaN], 1e-6, name);
    }
  });

  it('rejects a bad alpha or limit, and limit without alpha', () => {
    const [, dev] = devices[0];
    const g = dev.tensor([1], [1]);
    for (const alpha of [0, -1, NaN, Infinity, '1' as unknown as number]) {
      expect(() => dev.swiglu(g, g, { alpha })).toThrow(expect.objectContaining({ code: 'E_ARG', message: expect.stringContaining('options.alpha') }));
    }
    for (const limit of [0, -1, NaN]) {
      expect(() => dev.swiglu(g, g, { alpha: 1, limit })).toThrow(expect.objectContaining({ code: 'E_ARG', message: expect.stringContaining('options.limit') }));
    }
    expect(() => dev.swiglu(g, g, { limit: 7 })).toThrow(expect.objectContaining({ code: 'E_ARG' }));
    expect(() => dev.swiglu(g, g, { beta: 1 } as never)).toThrow(expect.objectContaining({ code: 'E_ARG' }));
  });
});
