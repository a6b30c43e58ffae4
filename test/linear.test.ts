// linear and matmul: oracle quantized matmuls, float64 references for dense and every format,
// and the event loop staying free while many ops run.
import { beforeAll, describe, expect, it } from 'vitest';
import { open, type Device, type DType, type Format } from '../lib/index';
import { expectClose, randn } from './helpers/compare';
import { f32, oracleCases, shapeOf, u8 } from './helpers/oracle';
import { testDevices } from './helpers/devices';
import { linearRef, roundToHalf } from './helpers/reference';

let dev: Device;
beforeAll(async () => {
  dev = await open({ backend: 'cpu' });
});

const MX_FORMAT: Record<string, Format> = {
  mxfp8_e4m3: 'mxfp8', mxfp8_e5m2: 'mxfp8_e5m2', mxfp6_e2m3: 'mxfp6_e2m3', mxfp4_e2m1: 'mxfp4',
};

/** Packs one code per element into our layout (docs/design/API.md "Packing"). */
function pack(codes: Uint8Array, bits: number): Uint8Array {
  if (bits === 8) return codes;
  const out = new Uint8Array((codes.length * bits) / 8);
  codes.forEach((c, i) => {
    const bit = i * bits;
    out[bit >> 3] |= (c << (bit & 7)) & 0xff;
    if ((bit & 7) + bits > 8) out[(bit >> 3) + 1] |= c >> (8 - (bit & 7));
  });
  return out;
}
const BITS: Record<string, number> = { mxfp8: 8, mxfp8_e5m2: 8, mxfp6_e2m3: 6, mxfp4: 4 };

describe('quantized linear (oracle)', () => {
  for (const c of oracleCases('qmatmul_weight')) {
    const format = MX_FORMAT[c.format as string];
    const [M, N, K] = [Number(c.M), Number(c.N), Number(c.K)];
    const tol = (got: Float32Array) => expectClose(got, f32(c.y), 1e-4, `${c.format} ${M}x${N}x${K}`);

    it(`${c.format} M=${M} N=${N} K=${K}: weights quantized by us`, async () => {
      const w = await dev.quantize(dev.tensor(f32(c.w), [N, K]), { format });
      const y = await dev.linear(dev.tensor(f32(c.x), [M, K]), w);
      expect(y.shape).toEqual([M, N]);
      tol(await y.toFloat32());
    });

    it(`${c.format} M=${M} N=${N} K=${K}: weights imported with fromQuantized`, async () => {
      const w = dev.fromQuantized({
        format, shape: [N, K], codes: pack(u8(c.w_codes), BITS[format]), scales: u8(c.w_scale_codes),
      });
      tol(await (await dev.linear(dev.tensor(f32(c.x), [M, K]), w)).toFloat32());
    });
  }

  for (const c of oracleCases('qmatmul_both')) {
    const [M, N, K] = [Number(c.M), Number(c.N), Number(c.K)];
    it(`both operands mxfp8 M=${M} N=${N} K=${K}`, async () => {
      const a = await dev.quantize(dev.tensor(f32(c.a), shapeOf(c.a)), { format: 'mxfp8' });
      const b = await dev.quantize(dev.tensor(f32(c.b), shapeOf(c.b)), { format: 'mxfp8' });
      const y = await dev.linear(a, b);
      expect(y.dtype).toBe('float32');
      expectClose(await y.toFloat32(), f32(c.y), 1e-4, 'mxfp8 x mxfp8');
    });
  }
});

describe('linear against float64', () => {
  const shapes: [number, number, number][] = [[1, 40, 64], [3, 17, 96], [2, 7, 37], [8, 64, 128], [5, 9, 200], [9, 33, 160], [33, 70, 96], [130, 50, 64]];

  for (const [M, N, K] of shapes) {
    it(`dense float32 ${M}x${N}x${K} with bias`, async () => {
      const x = randn(M * K, M), w = randn(N * K, N), bias = randn(N, K);
      const y = await dev.linear(dev.tensor(x, [M, K]), dev.tensor(w, [N, K]), { bias: dev.tensor(bias, [N]) });
      expectClose(await y.toFloat32(), linearRef(x, w, M, N, K, bias), 1e-4);
    });
  }

  // N not a multiple of the fused kernels' row groups (4); K of 19 blocks of 32: one 16-block run of
  // scales plus a partial one, and a partial 128-code step of the 4-bit kernels.
  const FORMATS = ['mxfp8', 'mxfp8_e5m2', 'mxfp6_e3m2', 'mxfp6_e2m3', 'mxfp4', 'mxint8', 'mxint4', 'mxint2', 'affine4', 'affine8'] as Format[];
  const cases: [Format, number, number][] = FORMATS.map((f) => [f, 32, 608]);
  for (const f of ['affine4', 'affine8'] as Format[]) cases.push([f, 64, 704], [f, 128, 640]);
  for (const [format, blockSize, K] of cases) {
    it(`${format} weights (block ${blockSize}, K ${K}): equals x @ dequantize(w)^T for M = 1, 3, 8, 9, 33`, async () => {
      const N = 43;
      const w = await dev.quantize(dev.tensor(randn(N * K, 11), [N, K]), { format, blockSize });
      const wd = await (await w.dequantize()).toFloat32();
      for (const M of [1, 3, 8, 9, 33]) {
        const x = randn(M * K, M + 100);
        const y = await dev.linear(dev.tensor(x, [M, K]), w);
        expectClose(await y.toFloat32(), linearRef(x, wd, M, N, K), 1e-4, `${format} M=${M}`);
      }
    });
  }

  it('a NaN block (scale 0xFF) or an FP8 NaN code makes exactly its row of y NaN', async () => {
    const N = 6, K = 96, M = 2;
    const x = randn(M * K, 3);
    const check = async (w: Awaited<ReturnType<Device['quantize']>>, nanRows: number, what: string) => {
      const wd = await (await w.dequantize()).toFloat32();
      const y = await (await dev.linear(dev.tensor(x, [M, K]), w)).toFloat32();
      const ref = linearRef(x, wd, M, N, K);
      expect(ref.filter((v) => Number.isNaN(v)).length, what).toBe(nanRows * M);
      for (let i = 0; i < M * N; i++) {
        if (Number.isNaN(ref[i])) expect(Number.isNaN(y[i]), `${what} y[${i}]`).toBe(true);
        else expect(Math.abs(y[i] - ref[i]), `${what} y[${i}]`).toBeLessThanOrEqual(1e-4 * (1 + Math.abs(ref[i])));
      }
    };
    for (const format of ['mxfp4', 'mxint8', 'mxfp8', 'mxfp8_e5m2'] as Format[]) {
      const wf = randn(N * K, 4);
      wf[1 * K + 70] = NaN;  // row 1, last block: quantizes to the NaN scale
      await check(await dev.quantize(dev.tensor(wf, [N, K]), { format }), 1, format);
    }
    // E4M3 codes 0x7F / 0xFF are NaN whatever the scale.
    const codes = Uint8Array.from({ length: N * K }, (_, i) => (i * 37) & 0x6e);
    codes[4 * K + 5] = 0xff;
    await check(dev.fromQuantized({ format: 'mxfp8', shape: [N, K], codes, scales: new Uint8Array((N * K) / 32).fill(127) }), 1, 'mxfp8 NaN code');
    // A NaN code written into weights the quantizer made (which it knows hold none): the kernels
    // look for it from then on; a linear queued before the write still sees the old rows.
    const w = await dev.quantize(dev.tensor(randn(N * K, 5), [N, K]), { format: 'mxfp8' });
    const before = await (await w.dequantize()).toFloat32();
    const yBefore = dev.linear(dev.tensor(x, [M, K]), w);
    const rows = dev.fromQuantized({ format: 'mxfp8', shape: [2, K], codes: codes.slice(3 * K, 5 * K), scales: new Uint8Array((2 * K) / 32).fill(127) });
    dev.write(w, rows, { axis: 0, offset: 2 });
    expectClose(await yBefore.toFloat32(), linearRef(x, before, M, N, K), 1e-4, 'linear queued before the write');
    await check(w, 1, 'mxfp8 NaN code written into quantized weights');
  });

  it('affine weights with centred biases (GGUF Q4_0 / Q8_0) still equal the reference after write() puts other biases in', async () => {
    const N = 6, K = 128, M = 2, G = K / 32;
    for (const [format, centre] of [['affine4', 8], ['affine8', 128]] as const) {
      const r = randn(N * G + 2 * K, 21);
      const codes = Uint8Array.from({ length: N * (format === 'affine4' ? K / 2 : K) }, (_, i) => (i * 97 + 13) & 255);
      const scales = await dev.tensor(Float32Array.from({ length: N * G }, (_, i) => 0.01 + 0.02 * Math.abs(r[i])), [N * G], 'float16').data() as Uint16Array;
      const sv = await dev.tensor(scales, [N * G], 'float16').toFloat32();
      const biases = await dev.tensor(sv.map((v) => -centre * v), [N * G], 'float16').data() as Uint16Array;
      const w = dev.fromQuantized({ format, shape: [N, K], blockSize: 32, codes, scales, biases });
      // Rows 2-3 replaced by weights whose biases are not centred.
      const rows = await dev.quantize(dev.tensor(r.subarray(N * G, N * G + 2 * K), [2, K]), { format, blockSize: 32 });
      dev.write(w, rows, { axis: 0, offset: 2 });
      const wd = await (await w.dequantize()).toFloat32();
      const x = randn(M * K, 22);
      for (const activations of ['float32', 'int8'] as const) {
        const y = await (await dev.linear(dev.tensor(x, [M, K]), w, { activations })).toFloat32();
        expectClose(y, linearRef(x, wd, M, N, K), activations === 'int8' ? 2e-2 : 1e-4, `${format} ${activations}`);
      }
    }
  });

  it('huge activations (2^100 to 2^120) give the same finite results through the quantized weights as through their dequantized values', async () => {
    const N = 8, K = 64;
    const formats: Format[] = ['mxfp8', 'mxfp8_e5m2', 'mxfp4', 'mxint8', 'mxint4', 'affine4', 'affine8'];
    for (const format of formats) {
      const w = await dev.quantize(dev.tensor(randn(N * K, 11).map((v) => v / 64), [N, K]), { format });
      const wd = await (await w.dequantize()).toFloat32();
      for (const M of [1, 2, 9]) {
        for (const e of [100, 108, 114, 120]) {
          const x = randn(M * K, e + M).map((v) => v * 2 ** e / 8);
          const ref = linearRef(x, wd, M, N, K);  // float64: finite for every case here
          expect(ref.every(Number.isFinite), `${format} 2^${e} reference`).toBe(true);
          const y = await (await dev.linear(dev.tensor(x, [M, K]), w)).toFloat32();
          expectClose(y, ref, 1e-4, `${format} M=${M} |x| ~ 2^${e}`);
        }
      }
    }
  });

  for (const dtype of ['float16', 'bfloat16'] as DType[]) {
    it(`${dtype} x and w: float32 accumulation, ${dtype} output`, async () => {
      const M = 5, N = 23, K = 70;  // K: not a whole number of vectors
      const x = dev.tensor(randn(M * K, 1), [M, K], dtype);
      const w = dev.tensor(randn(N * K, 2), [N, K], dtype);
      const y = await dev.linear(x, w);
      expect(y.dtype).toBe(dtype);
      expect(await y.data()).toBeInstanceOf(Uint16Array);
      const ref = linearRef(await x.toFloat32(), await w.toFloat32(), M, N, K);
      expectClose(await y.toFloat32(), ref, dtype === 'float16' ? 1e-3 : 8e-3);
      const y32 = await dev.linear(x, w, { outDtype: 'float32' });
      expectClose(await y32.toFloat32(), ref, 1e-5);
    });
  }

  it('leading dimensions of x are kept: [2, 3, K] -> [2, 3, N]', async () => {
    const K = 32, N = 5;
    const x = randn(6 * K, 4), w = randn(N * K, 5);
    const y = await dev.linear(dev.tensor(x, [2, 3, K]), dev.tensor(w, [N, K]));
    expect(y.shape).toEqual([2, 3, N]);
    expectClose(await y.toFloat32(), linearRef(x, w, 6, N, K), 1e-5);
  });
});

describe('matmul', () => {
  function matmulRef(a: Float32Array, b: Float32Array, batch: number, M: number, K: number, N: number, bBatched: boolean) {
    const out = new Float64Array(batch * M * N);
    for (let t = 0; t < batch; t++) for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += a[(t * M + m) * K + k] * b[(bBatched ? t * K * N : 0) + k * N + n];
      out[(t * M + m) * N + n] = s;
    }
    return out;
  }

  it('a [M, K] @ b [K, N]', async () => {
    const [M, K, N] = [37, 70, 45];
    const a = randn(M * K, 1), b = randn(K * N, 2);
    const c = await dev.matmul(dev.tensor(a, [M, K]), dev.tensor(b, [K, N]));
    expect(c.shape).toEqual([M, N]);
    expectClose(await c.toFloat32(), matmulRef(a, b, 1, M, K, N, false), 1e-4);
  });

  it('batched a [2, 3, M, K] @ shared b [K, N] and batched b', async () => {
    const [M, K, N] = [9, 20, 11];
    const a = randn(6 * M * K, 3), b = randn(K * N, 4), bb = randn(6 * K * N, 5);
    const c = await dev.matmul(dev.tensor(a, [2, 3, M, K]), dev.tensor(b, [K, N]));
    expect(c.shape).toEqual([2, 3, M, N]);
    expectClose(await c.toFloat32(), matmulRef(a, b, 6, M, K, N, false), 1e-4);
    const c2 = await dev.matmul(dev.tensor(a, [2, 3, M, K]), dev.tensor(bb, [2, 3, K, N]));
    expectClose(await c2.toFloat32(), matmulRef(a, bb, 6, M, K, N, true), 1e-4);
  });

  it('float16 operands', async () => {
    const [M, K, N] = [16, 32, 8];
    const a = dev.tensor(randn(M * K, 6), [M, K], 'float16');
    const b = dev.tensor(randn(K * N, 7), [K, N], 'float16');
    const c = await dev.matmul(a, b);
    expect(c.dtype).toBe('float16');
    expectClose(await c.toFloat32(), matmulRef(await a.toFloat32(), await b.toFloat32(), 1, M, K, N, false), 2e-3);
  });
});

describe('empty dimensions (as PyTorch): M = 0 or N = 0 give empty outputs, K = 0 sums over nothing', () => {
  let devices: [string, Device][];
  beforeAll(async () => { devices = await testDevices(); });

  it('linear: M = 0 (leading dims too) and N = 0, dense and quantized, keep the shape and dtype', async () => {
    for (const [name, dev] of devices) {
      const w = randn(6 * 64, 1);
      for (const wt of [dev.tensor(w, [6, 64]), dev.quantize(dev.tensor(w, [6, 64]), { format: 'mxfp4' })]) {
        for (const xs of [[0, 64], [2, 0, 64], [0, 3, 64]]) {
          const y = dev.linear(dev.tensor(new Uint16Array(0), xs, 'bfloat16'), wt, { bias: dev.tensor(randn(6, 2), [6]) });
          expect(y.shape, `${name} ${xs}`).toEqual([...xs.slice(0, -1), 6]);
          expect(y.dtype).toBe('bfloat16');
          expect(await y.data()).toEqual(new Uint16Array(0));
        }
      }
      const yn = dev.linear(dev.tensor(randn(3 * 64, 2), [3, 64]), dev.tensor(new Float32Array(0), [0, 64]), { bias: dev.tensor(new Float32Array(0), [0]) });
      expect(yn.shape).toEqual([3, 0]);
      expect(await yn.toFloat32()).toEqual(new Float32Array(0));
      const xq = dev.quantize(dev.tensor(new Float32Array(0), [0, 32]), { format: 'mxfp8' });
      const yq = dev.linear(xq, dev.quantize(dev.tensor(randn(4 * 32, 3), [4, 32]), { format: 'mxfp8' }));
      expect(yq.shape).toEqual([0, 4]);
      expect(await yq.toFloat32()).toEqual(new Float32Array(0));
    }
  });

  it('linear with K = 0 equals the float64 reference: bias broadcast over the rows (zeros without), in the output dtype', async () => {
    for (const [name, dev] of devices) {
      const [M, N] = [5, 7];
      const bias = Float32Array.from([1.5, -2, 1e-3, 3.14159, -0, 1000.7, 1 / 3]);
      const x = dev.tensor(new Float32Array(0), [M, 0]);
      for (const w of [dev.tensor(new Float32Array(0), [N, 0]), dev.quantize(dev.tensor(new Float32Array(0), [N, 0]), { format: 'mxfp4' })]) {
        const y = dev.linear(x, w, { bias: dev.tensor(bias, [N]) });
        expect(y.shape).toEqual([M, N]);
        expect(Array.from(await y.toFloat32()), name).toEqual(Array.from(linearRef([], [], M, N, 0, bias), Math.fround));
        const y16 = dev.linear(x, w, { bias: dev.tensor(bias, [N], 'bfloat16'), outDtype: 'float16' });
        expect(y16.dtype).toBe('float16');
        const bf = await dev.tensor(bias, [N], 'bfloat16').toFloat32();
        expect(Array.from(await y16.toFloat32())).toEqual(Array.from(roundToHalf(Float32Array.from(linearRef([], [], M, N, 0, bf)))));
        const zeros = dev.linear(dev.tensor(new Float32Array(0), [2, 3, 0]), w);
        expect(zeros.shape).toEqual([2, 3, N]);
        expect(Array.from(await zeros.toFloat32())).toEqual(new Array(2 * 3 * N).fill(0));
      }
      // Both operands quantized, K = 0.
      const xq = dev.quantize(dev.tensor(new Float32Array(0), [M, 0]), { format: 'mxfp8' });
      const wq = dev.quantize(dev.tensor(new Float32Array(0), [N, 0]), { format: 'mxfp8' });
      expect(Array.from(await dev.linear(xq, wq, { bias: dev.tensor(bias, [N]) }).toFloat32()))
        .toEqual(Array.from(linearRef([], [], M, N, 0, bias), Math.fround));
      // The bias is still checked against N.
      expect(() => dev.linear(x, dev.tensor(new Float32Array(0), [N, 0]), { bias: dev.tensor([1], [1]) }))
        .toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining('bias must have shape [N] = [7]') }));
    }
  });

  it('matmul: batch, M or N of 0 give empty outputs; K = 0 gives zeros (shared and batched b)', async () => {
    for (const [name, dev] of devices) {
      const cases: [number[], number[], number[]][] = [
        [[0, 5], [5, 3], [0, 3]], [[4, 5], [5, 0], [4, 0]], [[0, 2, 4, 5], [5, 3], [0, 2, 4, 3]],
        [[2, 0, 5], [2, 5, 3], [2, 0, 3]], [[4, 0], [0, 3], [4, 3]], [[2, 3, 0], [2, 0, 6], [2, 3, 6]], [[0, 0], [0, 0], [0, 0]],
      ];
      for (const [as, bs, cs] of cases) {
        const count = (s: number[]) => s.reduce((p, d) => p * d, 1);
        const a = randn(count(as), 1), b = randn(count(bs), 2);
        const c = dev.matmul(dev.tensor(a, as, 'float16'), dev.tensor(b, bs, 'float16'));
        expect(c.shape, `${name} ${as} @ ${bs}`).toEqual(cs);
        expect(c.dtype).toBe('float16');
        expect(Array.from(await c.toFloat32())).toEqual(new Array(count(cs)).fill(0));
      }
    }
  });
});

describe('concurrency', () => {
  it('a long op resolves after a zero-delay timer queued behind it: it ran off the JS thread', async () => {
    // ~2 GFLOP: several milliseconds on any machine (0.5 GFLOP took ~1 ms on an AVX-512 core pair,
    // as long as the timer's own minimum delay, and lost the race once in three runs)
    const M = 1024, N = 1024, K = 1024;
    const x = dev.tensor(randn(M * K, 1), [M, K]);
    const w = dev.tensor(randn(N * K, 2), [N, K]);
    const op = dev.linear(x, w).toFloat32().then(() => 'op');
    const timer = new Promise((resolve) => setTimeout(() => resolve('timer'), 0));
    expect(await Promise.race([op, timer])).toBe('timer');
    expect(await op).toBe('op');
  });

  it('200 concurrent linear calls all resolve correctly while a timer keeps firing', async () => {
    const M = 16, N = 512, K = 1024;
    const w = await dev.quantize(dev.tensor(randn(N * K, 9), [N, K]), { format: 'mxfp4' });
    const wd = await (await w.dequantize()).toFloat32();
    // Row m of call i is a scaled one-hot vector, so y[m, n] = s * w[n, col]: a cheap exact reference
    // while every call still does the full M x N x K work.
    const col = (i: number, m: number) => (i * 37 + m * 101) % K;
    const scale = (i: number, m: number) => 1 + ((i + m) % 5);
    const inputs = Array.from({ length: 200 }, (_, i) => {
      const x = new Float32Array(M * K);
      for (let m = 0; m < M; m++) x[m * K + col(i, m)] = scale(i, m);
      return dev.tensor(x, [M, K]);
    });
    const pending = inputs.map((x) => dev.linear(x, w));
    // Count timer ticks only while the ops run: the JS thread is then free, or it is blocked.
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const started = performance.now();
    const results = await Promise.all(pending);
    const waited = performance.now() - started;
    clearInterval(timer);
    expect(ticks).toBeGreaterThanOrEqual(Math.floor(waited / 25));
    for (const y of results) expect(y.shape).toEqual([M, N]);
    for (let i = 0; i < results.length; i++) {
      const y = await results[i].toFloat32();
      for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
        const want = scale(i, m) * wd[n * K + col(i, m)];
        if (Math.abs(y[m * N + n] - want) > 1e-6 * (1 + Math.abs(want))) {
          expect.fail(`call ${i} y[${m}, ${n}] = ${y[m * N + n]}, want ${want}`);
        }
      }
    }
  });
});
