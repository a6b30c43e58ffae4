// The ops along the last axis (docs/design/API.md): rmsNorm, layerNorm, rope, softmax, against
// float64 references, in every float dtype, with odd sizes and extreme values.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Device } from '../lib/index';
import { expectClose, randn } from './helpers/compare';
import { testDevices } from './helpers/devices';
import { roundToHalf } from './helpers/reference';

let devices: [string, Device][];
beforeAll(async () => { devices = await testDevices(); });

const tols = { float32: 2e-6, float16: 2e-3, bfloat16: 1e-2 } as const;
const asDtype = (x: Float32Array, dt: keyof typeof tols) => (dt === 'float16' ? roundToHalf(x) : x);

function normRef(x: Float32Array, cols: number, w: Float32Array | null, b: Float32Array | null, eps: number, layer: boolean) {
  const out = new Float64Array(x.length);
  for (let r = 0; r < x.length / cols; r++) {
    const row = x.subarray(r * cols, (r + 1) * cols);
    const mean = layer ? row.reduce((s, v) => s + v, 0) / cols : 0;
    const v = row.reduce((s, t) => s + (t - mean) ** 2, 0) / cols;
    const k = 1 / Math.sqrt(v + eps);
    for (let c = 0; c < cols; c++) out[r * cols + c] = (row[c] - mean) * k * (w ? w[c] : 1) + (b ? b[c] : 0);
  }
  return out;
}

describe('rmsNorm and layerNorm', () => {
  for (const dt of ['float32', 'float16', 'bfloat16'] as const) {
    it(`${dt}: rows of odd width, with and without weight and bias, equal the float64 reference`, async () => {
      for (const [name, dev] of devices) {
        for (const [rows, cols] of [[1, 1], [3, 7], [17, 1000], [5, 4099]]) {
          const x = asDtype(randn(rows * cols, rows + cols, 3), dt);
          const w = asDtype(randn(cols, 7), dt), b = asDtype(randn(cols, 8), dt);
          const xt = dev.tensor(x, [rows, cols], dt);
          const bf = dt === 'bfloat16';  // inputs rounded by the addon; the reference sees float32
          const tol = bf ? 2e-2 : tols[dt];
          expectClose(await dev.rmsNorm(xt, dev.tensor(w, [cols], dt), { eps: 1e-6 }).toFloat32(),
            normRef(x, cols, w, null, 1e-6, false), tol, `${name} rms ${rows}x${cols}`);
          expectClose(await dev.rmsNorm(xt, null).toFloat32(), normRef(x, cols, null, null, 1e-5, false), tol, `${name} rms no weight`);
          if (cols > 1) {
            expectClose(await dev.layerNorm(xt, dev.tensor(w, [cols], dt), dev.tensor(b, [cols], dt)).toFloat32(),
              normRef(x, cols, w, b, 1e-5, true), tol, `${name} layer ${rows}x${cols}`);
          }
        }
      }
    });
  }

  it('outputs larger than the caches (streamed to memory): 4097 x 2049 float32 rmsNorm and layerNorm equal the float64 reference', async () => {
    const [rows, cols] = [4097, 2049];
    const x = randn(rows * cols, 43, 3), w = randn(cols, 44), b = randn(cols, 45);
    for (const [name, dev] of devices) {
      const xt = dev.tensor(x, [rows, cols]);
      expectClose(await dev.rmsNorm(xt, dev.tensor(w, [cols]), { eps: 1e-6 }).toFloat32(), normRef(x, cols, w, null, 1e-6, false), tols.float32, `${name} rms`);
      expectClose(await dev.layerNorm(xt, dev.tensor(w, [cols]), dev.tensor(b, [cols])).toFloat32(), normRef(x, cols, w, b, 1e-5, true), tols.float32, `${name} layer`);
    }
  });

  it('a NaN or inf in a row makes that row NaN or its other entries 0; other rows are untouched', async () => {
    for (const [, dev] of devices) {
      const x = Float32Array.from([1, NaN, 3, 1, 2, 3, Infinity, 1, 2]);
      const y = await dev.rmsNorm(dev.tensor(x, [3, 3]), null).toFloat32();
      expect(Array.from(y.subarray(0, 3)).every(Number.isNaN)).toBe(true);
      expectClose(y.subarray(3, 6), normRef(x.subarray(3, 6), 3, null, null, 1e-5, false), 1e-6);
      expect(Array.from(y.subarray(6))).toEqual([NaN, 0, 0]);  // inf * 0 and finite * 0
    }
  });

  it('rows of 1e30 and of 1e-30 with eps = 0 (whose float32 squares overflow or vanish) equal the reference', async () => {
    for (const [name, dev] of devices) {
      for (const scale of [1e30, 1e-30]) {
        const x = Float32Array.from(randn(3 * 100, 4), (v) => v * scale);
        const y = await dev.rmsNorm(dev.tensor(x, [3, 100]), null, { eps: 0 }).toFloat32();
        expectClose(y, normRef(x, 100, null, null, 0, false), 2e-6, `${name} rms ${scale}`);
        const z = await dev.layerNorm(dev.tensor(x, [3, 100]), null, null, { eps: 0 }).toFloat32();
        expectClose(z, normRef(x, 100, null, null, 0, true), 2e-6, `${name} layer ${scale}`);
      }
    }
  });

  it('rows of subnormals with eps = 0 (whose 1 / rms overflows float32) stay finite and equal the reference', async () => {
    // Rows whose largest magnitude is 2^-149 (the smallest subnormal), a few units of it, and
    // values around 2^-127: the row's 1 / rms is past float32's range for all but the last, so
    // the row must be scaled before it is normalised (shaders/norm.metal does the same).
    const tiny = 2 ** -149;
    for (const cols of [33, 1000]) {
      const units = randn(cols, cols + 1);
      const rows = [
        Float32Array.from(units, (v, i) => (i === 3 ? 1 : Math.sign(Math.round(v))) * tiny),
        Float32Array.from(units, (v, i) => (i === 5 ? 8 : Math.round(v * 4)) * tiny),
        Float32Array.from(units, (v) => (Math.round(v * 2) + 3) * tiny),  // a mean far from 0
        Float32Array.from(units, (v) => v * 2 ** -126),  // around 2^-127, most subnormal
      ];
      const x = new Float32Array(rows.length * cols);
      rows.forEach((row, i) => x.set(row, i * cols));
      for (const [name, dev] of devices) {
        const xt = dev.tensor(x, [rows.length, cols]);
        const y = await dev.rmsNorm(xt, null, { eps: 0 }).toFloat32();
        expect(y.every(Number.isFinite), `${name} rms ${cols} finite`).toBe(true);
        expectClose(y, normRef(x, cols, null, null, 0, false), 2e-6, `${name} rms ${cols}`);
        const w = randn(cols, 9), b = randn(cols, 10);
        const z = await dev.layerNorm(xt, dev.tensor(w, [cols]), dev.tensor(b, [cols]), { eps: 0 }).toFloat32();
        expect(z.every(Number.isFinite), `${name} layer ${cols} finite`).toBe(true);
        expectClose(z, normRef(x, cols, w, b, 0, true), 2e-6, `${name} layer ${cols}`);
      }
    }
  });

  it('rows near float32\'s largest values (x - mean and 1 / rms past float32\'s range) stay finite and equal the reference', async () => {
    for (const cols of [33, 1000]) {
      const units = randn(cols, cols + 2);
      const rows = [
        Float32Array.from(units, (v, i) => (i === 7 ? -3e38 : 3e38 + v * 1e37)),  // one element far below the mean
        Float32Array.from(units, (v) => v * 1.6e38),  // rms above 2^126
      ];
      const x = new Float32Array(rows.length * cols);
      rows.forEach((row, i) => x.set(row, i * cols));
      for (const [name, dev] of devices) {
        const xt = dev.tensor(x, [rows.length, cols]);
        for (const eps of [0, 1e-5]) {
          const y = await dev.rmsNorm(xt, null, { eps }).toFloat32();
          expect(y.every(Number.isFinite), `${name} rms ${cols} finite`).toBe(true);
          expectClose(y, normRef(x, cols, null, null, eps, false), 2e-6, `${name} rms ${cols} eps ${eps}`);
          const z = await dev.layerNorm(xt, null, null, { eps }).toFloat32();
          expect(z.every(Number.isFinite), `${name} layer ${cols} finite`).toBe(true);
          expectClose(z, normRef(x, cols, null, null, eps, true), 2e-6, `${name} layer ${cols} eps ${eps}`);
        }
      }
    }
  });

  it('empty dimensions: zero rows or an empty last axis give an empty output of x\'s shape and dtype', async () => {
    for (const [name, dev] of devices) {
      for (const shape of [[0, 7], [3, 0], [2, 0, 5], [0]]) {
        const cols = shape[shape.length - 1];
        const x = dev.tensor(new Uint16Array(0), shape, 'float16');
        const w = dev.tensor(new Float32Array(cols).fill(2), [cols]);
        for (const y of [dev.rmsNorm(x, w), dev.layerNorm(x, w, w), dev.rmsNorm(x, null, { eps: 0 })]) {
          expect(y.shape, `${name} ${shape}`).toEqual(shape);
          expect(y.dtype).toBe('float16');
          expect(await y.data()).toEqual(new Uint16Array(0));
        }
      }
      // The weight must still match the (empty) last axis.
      expect(() => dev.rmsNorm(dev.tensor(new Float32Array(0), [3, 0]), dev.tensor([1], [1])))
        .toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining('weight must have shape [0]') }));
    }
  });

  it('validates weight shape, eps and dtypes', () => {
    const [, dev] = devices[0];
    const x = dev.tensor(new Float32Array(6), [2, 3]);
    expect(() => dev.rmsNorm(x, dev.tensor(new Float32Array(2), [2])))
      .toThrow(expect.objectContaining({ code: 'E_SHAPE', message: 'rmsNorm: weight must have shape [3] (x\'s last dimension); got [2]' }));
    expect(() => dev.rmsNorm(x, null, { eps: -1 })).toThrow(expect.objectContaining({ code: 'E_ARG' }));
    expect(() => dev.layerNorm(dev.tensor(new Int32Array(3), [3], 'int32'), null, null)).toThrow(expect.objectContaining({ code: 'E_DTYPE' }));
  });
});

describe('rope', () => {
  // [B, H, L, D] reference in float64.
  function ropeRef(x: Float32Array, [B, H, L, D]: number[], o: { pos: number[]; dims: number; neox: boolean; inv: number[]; blhd: boolean }) {
    const out = Float64Array.from(x);
    const half = o.dims / 2;
    for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let l = 0; l < L; l++) {
      const base = o.blhd ? ((b * L + l) * H + h) * D : ((b * H + h) * L + l) * D;
      for (let i = 0; i < half; i++) {
        const a = o.pos[l] * o.inv[i];
        const [i1, i2] = o.neox ? [i, i + half] : [2 * i, 2 * i + 1];
        const x1 = x[base + i1], x2 = x[base + i2];
        out[base + i1] = x1 * Math.cos(a) - x2 * Math.sin(a);
        out[base + i2] = x2 * Math.cos(a) + x1 * Math.sin(a);
      }
    }
    return out;
  }

  for (const dt of ['float32', 'float16'] as const) {
    it(`${dt}: neox and interleaved, offsets and int32 positions, partial dims, explicit freqs, both layouts`, async () => {
      for (const [name, dev] of devices) {
        const [B, H, L, D] = [2, 3, 5, 16];
        const x = asDtype(randn(B * H * L * D, 11), dt);
        for (const style of ['neox', 'interleaved'] as const) {
          for (const layout of ['bhld', 'blhd'] as const) {
            const shape = layout === 'bhld' ? [B, H, L, D] : [B, L, H, D];
            const xt = dev.tensor(x, shape, dt);
            const neox = style === 'neox';
            const blhd = layout === 'blhd';
            const inv = (dims: number, base = 10000) => Array.from({ length: dims / 2 }, (_, i) => base ** (-2 * i / dims));
            const cases: [object, ReturnType<typeof ropeRef>][] = [
              [{ style, layout }, ropeRef(x, [B, H, L, D], { pos: [0, 1, 2, 3, 4], dims: D, neox, inv: inv(D), blhd })],
              [{ style, layout, offset: 100_000, base: 500000 }, ropeRef(x, [B, H, L, D], { pos: [0, 1, 2, 3, 4].map((p) => p + 100_000), dims: D, neox, inv: inv(D, 500000), blhd })],
              [{ style, layout, dims: 8, positions: dev.tensor(new Int32Array([7, 3, 0, 4096, 9]), [L], 'int32') },
                ropeRef(x, [B, H, L, D], { pos: [7, 3, 0, 4096, 9], dims: 8, neox, inv: inv(8), blhd })],
              [{ style, layout, freqs: dev.tensor(Float32Array.from([1, 0.5, 0.25, 0.125, 0.01, 0.001, 1e-4, 1e-5]), [8]), offset: 3 },
                ropeRef(x, [B, H, L, D], { pos: [3, 4, 5, 6, 7], dims: D, neox, inv: Array.from(Float32Array.from([1, 0.5, 0.25, 0.125, 0.01, 0.001, 1e-4, 1e-5])), blhd })],
            ];
            for (const [opts, want] of cases) {
              expectClose(await dev.rope(xt, opts).toFloat32(), want, dt === 'float32' ? 3e-6 : 2e-3, `${name} ${dt} ${JSON.stringify(Object.keys(opts))} ${style} ${layout}`);
            }
          }
        }
      }
    });
  }

  it('float32, float16 and bfloat16 rows of 80 with 72 rotated (vector bodies and tails); the cos/sin table is kept only for the same positions and frequencies', async () => {
    for (const [name, dev] of devices) {
      const [B, H, L, D, dims] = [2, 3, 7, 80, 72];
      const inv = Array.from({ length: dims / 2 }, (_, i) => 10000 ** (-2 * i / dims));
      const inv2 = Array.from({ length: dims / 2 }, (_, i) => 500000 ** (-2 * i / dims));
      for (const dt of ['float32', 'float16', 'bfloat16'] as const) {
        const xt0 = dev.tensor(randn(B * H * L * D, 17), [B, H, L, D], dt);
        const x = await xt0.toFloat32();  // as rounded to dt
        for (const style of ['neox', 'interleaved'] as const) {
          for (const layout of ['bhld', 'blhd'] as const) {
            const neox = style === 'neox', blhd = layout === 'blhd';
            const xt = dev.tensor(x, blhd ? [B, L, H, D] : [B, H, L, D], dt);
            const seq = (o: number) => Array.from({ length: L }, (_, i) => i + o);
            // Consecutive calls with the same L and dims whose positions or frequencies differ.
            const cases: [object, number[], number[]][] = [
              [{ style, layout, dims }, seq(0), inv],
              [{ style, layout, dims }, seq(0), inv],
              [{ style, layout, dims, offset: 5 }, seq(5), inv],
              [{ style, layout, dims, base: 500000, offset: 5 }, seq(5), inv2],
              [{ style, layout, dims, positions: dev.tensor(Int32Array.from(seq(5)), [L], 'int32') }, seq(5), inv],
              [{ style, layout, dims, positions: dev.tensor(Int32Array.from([9, 1, 70000, 2, 3, 4, 5]), [L], 'int32') }, [9, 1, 70000, 2, 3, 4, 5], inv],
            ];
            for (const [opts, pos, iv] of cases) {
              const want = ropeRef(x, [B, H, L, D], { pos, dims, neox, inv: iv, blhd });
              const y = dev.rope(xt, opts);
              expect(y.dtype).toBe(dt);
              expectClose(await y.toFloat32(), want, dt === 'float32' ? 3e-6 : tols[dt], `${name} ${dt} ${JSON.stringify(Object.keys(opts))} ${pos[0]} ${style} ${layout}`);
            }
          }
        }
      }
    }
  });

  it('empty dimensions: B, H or L of 0 (positions [0] too) and D = 0 give an empty output', async () => {
    for (const [name, dev] of devices) {
      for (const [shape, opts] of [
        [[0, 2, 3, 8], {}], [[1, 0, 3, 8], { style: 'interleaved' }], [[1, 2, 0, 8], { positions: dev.tensor(new Int32Array(0), [0], 'int32') }],
        [[2, 0, 3, 8], { layout: 'blhd', dims: 4 }], [[1, 2, 3, 0], {}], [[1, 2, 3, 0], { freqs: dev.tensor(new Float32Array(0), [0]) }],
      ] as const) {
        const y = dev.rope(dev.tensor(new Uint16Array(0), shape as unknown as number[], 'bfloat16'), opts as object);
        expect(y.shape, `${name} ${shape} ${JSON.stringify(Object.keys(opts))}`).toEqual(shape);
        expect(y.dtype).toBe('bfloat16');
        expect(await y.data()).toEqual(new Uint16Array(0));
      }
      // D = 0 rotates nothing: an explicit dims is still checked against it.
      expect(() => dev.rope(dev.tensor(new Float32Array(0), [1, 2, 3, 0]), { dims: 2 }))
        .toThrow(expect.objectContaining({ code: 'E_ARG', message: expect.stringContaining('dims must be an even number in [2, 0]') }));
      expect(() => dev.rope(dev.tensor(new Float32Array(0), [1, 2, 0, 8]), { positions: dev.tensor(new Int32Array(1), [1], 'int32') }))
        .toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining('positions must have shape [0]') }));
    }
  });

  it('validates its options', () => {
    const [, dev] = devices[0];
    const x = dev.tensor(new Float32Array(2 * 4 * 8), [1, 2, 4, 8]);
    expect(() => dev.rope(x, { dims: 7 })).toThrow(expect.objectContaining({ code: 'E_ARG', message: expect.stringContaining('dims must be an even number in [2, 8]') }));
    expect(() => dev.rope(x, { offset: 1, positions: dev.tensor(new Int32Array(4), [4], 'int32') })).toThrow(expect.objectContaining({ code: 'E_ARG' }));
    expect(() => dev.rope(x, { positions: dev.tensor(new Float32Array(4), [4]) })).toThrow(expect.objectContaining({ code: 'E_DTYPE' }));
    expect(() => dev.rope(x, { positions: dev.tensor(new Int32Array(3), [3], 'int32') })).toThrow(expect.objectContaining({ code: 'E_SHAPE' }));
    expect(() => dev.rope(dev.tensor(new Float32Array(8), [1, 8]))).toThrow(expect.objectContaining({ code: 'E_SHAPE' }));
  });
});

describe('softmax', () => {
  function softmaxRef(x: Float32Array, cols: number) {
    const out = new Float64Array(x.length);
    for (let r = 0; r < x.length / cols; r++) {
      const row = Array.from(x.subarray(r * cols, (r + 1) * cols));
      const m = row.reduce((a, b) => Math.max(a, b), -Infinity);
      const e = row.map((v) => Math.exp(v - m));
      const s = e.reduce((a, b) => a + b, 0);
      e.forEach((v, c) => { out[r * cols + c] = v / s; });
    }
    return out;
  }
  for (const dt of ['float32', 'float16', 'bfloat16'] as const) {
    it(`${dt}: rows from 1 to 128256 wide equal the float64 reference`, async () => {
      for (const [name, dev] of devices) {
        for (const [rows, cols] of [[1, 1], [4, 33], [2, 128256]]) {
          const x = asDtype(randn(rows * cols, cols, 6), dt);
          const y = dev.softmax(dev.tensor(x, [rows, cols], dt));
          const got = await y.toFloat32();
          const xr = dt === 'bfloat16' ? await dev.tensor(x, [rows, cols], dt).toFloat32() : x;
          expectClose(got, softmaxRef(xr, cols), tols[dt], `${name} ${rows}x${cols}`);
        }
      }
    });
  }

  it('an output larger than the caches (streamed from a scratch row): 67 x 131071 float32 equals the reference, NaN and -inf rows too', async () => {
    const [rows, cols] = [67, 131071];  // 35 MB; odd width, so most rows start unaligned
    const x = randn(rows * cols, 31, 6);
    for (let c = 0; c < 5000; c++) x[3 * cols + c] = -Infinity;
    x[5 * cols + 77777] = NaN;
    for (const [name, dev] of devices) {
      const got = await dev.softmax(dev.tensor(x, [rows, cols])).toFloat32();
      const ref = softmaxRef(x, cols);
      expect(got.subarray(5 * cols, 6 * cols).every(Number.isNaN), `${name} NaN row`).toBe(true);
      ref.fill(0, 5 * cols, 6 * cols);
      got.fill(0, 5 * cols, 6 * cols);
      expectClose(got, ref, tols.float32, `${name} ${rows}x${cols}`);
    }
  });

  it('empty dimensions: zero rows, or rows of nothing, give an empty output', async () => {
    for (const [name, dev] of devices) {
      for (const shape of [[0, 5], [4, 0], [0], [2, 0, 3], [3, 2, 0]]) {
        const y = dev.softmax(dev.tensor(new Float32Array(0), shape));
        expect(y.shape, `${name} ${shape}`).toEqual(shape);
        expect(await y.toFloat32()).toEqual(new Float32Array(0));
      }
    }
  });

  it('one wide row (cut into column chunks across threads) and rows that start with blocks of -inf equal the reference', async () => {
    for (const [name, dev] of devices) {
      for (const dt of ['float32', 'float16', 'bfloat16'] as const) {
        for (const [rows, cols] of [[1, 40001], [3, 40001], [5, 3001]]) {
          const x = randn(rows * cols, 23, 6);
          for (let r = 0; r < rows; r++) for (let c = 0; c < Math.min(cols - 7, 2500 * (r + 1)); c++) x[r * cols + c] = -Infinity;
          const xt = dev.tensor(x, [rows, cols], dt);
          const xr = await xt.toFloat32();
          const got = await dev.softmax(xt).toFloat32();
          expectClose(got, softmaxRef(xr, cols), tols[dt], `${name} ${dt} ${rows}x${cols}`);
        }
        // A NaN or a +inf far into a row (after blocks of -inf and of numbers) makes it NaN.
        for (const [rows, cols] of [[1, 40001], [4, 40001]]) {
          for (const bad of [NaN, Infinity]) {
            const x = randn(rows * cols, 29, 6);
            for (let c = 0; c < 3000; c++) x[c] = -Infinity;
            x[cols - 3] = bad;
            const got = await dev.softmax(dev.tensor(x, [rows, cols], dt)).toFloat32();
            expect(got.subarray(0, cols).every(Number.isNaN), `${name} ${dt} ${rows}x${cols} ${bad}`).toBe(true);
            if (rows > 1) expect(got.subarray(cols).some(Number.isNaN), `${name} ${dt} other rows`).toBe(false);
          }
        }
      }
    }
  });

  it('-inf entries get 0; a NaN, a +inf or a row of only -inf makes the row NaN', async () => {
    for (const [, dev] of devices) {
      const x = Float32Array.from([0, -Infinity, 0, 1, NaN, 1, Infinity, 1, 1, -Infinity, -Infinity, -Infinity]);
      const y = await dev.softmax(dev.tensor(x, [4, 3])).toFloat32();
      expect(Array.from(y)).toEqual([0.5, 0, 0.5, NaN, NaN, NaN, NaN, NaN, NaN, NaN, NaN, NaN]);
    }
  });
});
