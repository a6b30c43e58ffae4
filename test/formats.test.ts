// Formats against the oracle (ml_dtypes): decode tables, element casts, MX block quantization;
// then properties the oracle does not cover (idempotence, affine error bound).
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeElements, encodeElements, open, type Device, type Element, type Format, type QuantizedTensor } from '../lib/index';
import { expectBitExact, expectBytes, randn } from './helpers/compare';
import { f32, oracleCases, shapeOf, u8 } from './helpers/oracle';

let dev: Device;
beforeAll(async () => {
  dev = await open({ backend: 'cpu' });
});

// Oracle format names -> ours.
const MX_FORMAT: Record<string, Format> = {
  mxfp8_e4m3: 'mxfp8', mxfp8_e5m2: 'mxfp8_e5m2', mxfp6_e3m2: 'mxfp6_e3m2', mxfp6_e2m3: 'mxfp6_e2m3',
  mxfp4_e2m1: 'mxfp4', mxint8: 'mxint8',
};
const MAX_NORMAL: Record<string, number> = {
  fp8_e4m3: 448, fp8_e5m2: 57344, fp6_e3m2: 28, fp6_e2m3: 7.5, fp4_e2m1: 6,
};

/** Unpacks our packed codes into one code per element (docs/design/API.md "Packing"). */
function unpack(codes: Uint8Array, bits: number, n: number): Uint8Array {
  if (bits === 8) return codes;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const bit = i * bits;
    const byte = bit >> 3, shift = bit & 7;
    const word = codes[byte] | ((codes[byte + 1] ?? 0) << 8);
    out[i] = (word >> shift) & ((1 << bits) - 1);
  }
  return out;
}
const BITS: Record<Format, number> = {
  mxfp8: 8, mxfp8_e5m2: 8, mxfp6_e3m2: 6, mxfp6_e2m3: 6, mxfp4: 4, mxint8: 8, mxint4: 4, mxint2: 2,
  affine4: 4, affine8: 8,
};

describe('decode tables (oracle)', () => {
  for (const c of oracleCases('decode_table')) {
    it(`${c.format}: every code decodes bit-exactly`, () => {
      expectBitExact(decodeElements(c.format as Element, u8(c.codes)), f32(c.values), String(c.format));
    });
  }
});

describe('element casts (oracle)', () => {
  for (const c of oracleCases('cast')) {
    it(`${c.format}: finite in-range inputs encode bit-exactly (RNE)`, () => {
      const input = f32(c.input), want = u8(c.codes), decoded = f32(c.decoded);
      const got = encodeElements(c.format as Element, input);
      let checked = 0;
      for (let i = 0; i < input.length; i++) {
        // Overflow and NaN follow ml_dtypes' own rules there; ours saturate (docs/design/API.md).
        if (!Number.isFinite(input[i]) || !Number.isFinite(decoded[i]) ||
            Math.abs(decoded[i]) > MAX_NORMAL[c.format as string]) continue;
        if (got[i] !== want[i]) expect.fail(`${c.format} input ${input[i]}: code ${got[i]}, want ${want[i]}`);
        checked++;
      }
      expect(checked).toBeGreaterThan(input.length * 0.8);
    });

    it(`${c.format}: overflow saturates to the max normal, with the sign`, () => {
      const max = MAX_NORMAL[c.format as string];
      const codes = encodeElements(c.format as Element, new Float32Array([1e30, -1e30, max * 4]));
      expect(Array.from(decodeElements(c.format as Element, codes))).toEqual([max, -max, max]);
    });
  }
});

describe('MX block quantization (oracle)', () => {
  for (const c of oracleCases('mx_quantize')) {
    const format = MX_FORMAT[c.format as string];
    const shape = shapeOf(c.input);
    it(`${c.format} ${shape.join('x')}: codes, E8M0 scales and dequantized values bit-exact`, async () => {
      const x = dev.tensor(f32(c.input), shape);
      const q = await dev.quantize(x, { format });
      const n = shape[0] * shape[1];
      expectBytes(unpack(await q.codes(), BITS[format], n), u8(c.codes), 'codes');
      expectBytes((await q.scales()) as Uint8Array, u8(c.scale_codes), 'scales');
      expectBitExact(await (await q.dequantize()).toFloat32(), f32(c.dequantized), 'dequantized');
      q.dispose();
      x.dispose();
    });
  }

  for (const c of oracleCases('qmatmul_weight')) {
    it(`${c.format} weights ${c.N}x${c.K}: quantizing w reproduces the oracle's codes and scales`, async () => {
      const format = MX_FORMAT[c.format as string];
      const q = await dev.quantize(dev.tensor(f32(c.w), shapeOf(c.w)), { format });
      expectBytes(unpack(await q.codes(), BITS[format], Number(c.N) * Number(c.K)), u8(c.w_codes), 'codes');
      expectBytes((await q.scales()) as Uint8Array, u8(c.w_scale_codes), 'scales');
    });
  }
});

describe('MX rules beyond the oracle', () => {
  const MX: Format[] = ['mxfp8', 'mxfp8_e5m2', 'mxfp6_e3m2', 'mxfp6_e2m3', 'mxfp4', 'mxint8', 'mxint4', 'mxint2'];

  for (const format of MX) {
    it(`${format}: quantize -> dequantize -> quantize is idempotent`, async () => {
      // Magnitudes spread over many binades so every block exercises a different scale.
      const data = randn(16 * 128, 7 + BITS[format]).map((v, i) => v * 2 ** ((i % 23) - 11));
      const q1 = await dev.quantize(dev.tensor(data, [16, 128]), { format });
      const d1 = await q1.dequantize();
      const q2 = await dev.quantize(d1, { format });
      expectBytes(await q2.codes(), await q1.codes(), 'codes');
      expectBytes((await q2.scales()) as Uint8Array, (await q1.scales()) as Uint8Array, 'scales');
      expectBitExact(await (await q2.dequantize()).toFloat32(), await d1.toFloat32(), 'values');
    });
  }

  it('an all-zero block gets scale byte 0 and decodes to zeros; a NaN block gets 0xFF and decodes to NaN', async () => {
    const data = new Float32Array(96);
    data.fill(1.5, 32, 64);
    data.fill(0.25, 64, 96);
    data[70] = NaN;
    const q = await dev.quantize(dev.tensor(data, [1, 96]), { format: 'mxfp8' });
    expect(Array.from((await q.scales()) as Uint8Array)).toEqual([0, 127 - 8, 0xff]);
    const back = await (await q.dequantize()).toFloat32();
    expect(Array.from(back.subarray(0, 32)).every((v) => v === 0)).toBe(true);
    expect(Array.from(back.subarray(32, 64)).every((v) => v === 1.5)).toBe(true);
    expect(Array.from(back.subarray(64, 96)).every((v) => Number.isNaN(v))).toBe(true);
  });

  // 1500 rows of 64: the pool's chunks convert several blocks of rows each, the last one short.
  it('float16 and bfloat16 inputs quantize like their float32 values', async () => {
    for (const rows of [4, 1500]) {
      const data = randn(rows * 64, 3);
      for (const dtype of ['float16', 'bfloat16'] as const) {
        const x = dev.tensor(data, [rows, 64], dtype);
        const f32 = dev.tensor(await x.toFloat32(), [rows, 64]);
        for (const format of ['mxfp4', 'affine4'] as const) {
          const viaF32 = await dev.quantize(f32, { format });
          const direct = await dev.quantize(x, { format });
          const what = `${rows} rows ${dtype} ${format}`;
          expectBytes(await direct.codes(), await viaF32.codes(), `${what} codes`);
          const bytes = async (q: QuantizedTensor) => new Uint8Array((await q.scales()).buffer);
          expectBytes(await bytes(direct), await bytes(viaF32), `${what} scales`);
        }
      }
    }
  });
});

describe('empty dimensions', () => {
  const ALL: Format[] = ['mxfp8', 'mxfp8_e5m2', 'mxfp6_e3m2', 'mxfp6_e2m3', 'mxfp4', 'mxint8', 'mxint4', 'mxint2', 'affine4', 'affine8'];

  it('zero rows, or a last axis of 0 (zero blocks), quantize to empty planes and dequantize to an empty tensor, for every format', async () => {
    for (const format of ALL) {
      for (const shape of [[0, 64], [3, 0], [2, 0, 128], [0]]) {
        const q = dev.quantize(dev.tensor(new Uint16Array(0), shape, 'float16'), { format });
        expect(q.shape, `${format} ${shape}`).toEqual(shape);
        expect(q.bytes).toBe(0);
        expect(await q.codes()).toEqual(new Uint8Array(0));
        expect((await q.scales()).length).toBe(0);
        if (format.startsWith('affine')) expect(await q.biases()).toEqual(new Uint16Array(0));
        const back = q.dequantize('bfloat16');
        expect(back.shape).toEqual(shape);
        expect(back.dtype).toBe('bfloat16');
        expect(await back.data()).toEqual(new Uint16Array(0));
      }
    }
  });

  it('fromQuantized takes empty planes; the last axis must still be a whole number of blocks (0 is)', async () => {
    const q = dev.fromQuantized({ format: 'mxfp4', shape: [0, 64], codes: new Uint8Array(0), scales: new Uint8Array(0) });
    expect(await q.dequantize().toFloat32()).toEqual(new Float32Array(0));
    const a = dev.fromQuantized({ format: 'affine8', shape: [5, 0], codes: new Uint8Array(0), scales: new Uint16Array(0), biases: new Uint16Array(0) });
    expect(a.shape).toEqual([5, 0]);
    expect(await a.dequantize().toFloat32()).toEqual(new Float32Array(0));
    expect(() => dev.quantize(dev.tensor(new Float32Array(0), [0, 48]), { format: 'mxfp8' }))
      .toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining('multiple of the block size 32') }));
    expect(() => dev.fromQuantized({ format: 'mxfp4', shape: [0, 64], codes: new Uint8Array(1), scales: new Uint8Array(0) }))
      .toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining('codes') }));
  });
});

describe('affine (MLX-compatible)', () => {
  for (const format of ['affine4', 'affine8'] as const) {
    for (const blockSize of [32, 64, 128]) {
      it(`${format} group ${blockSize}: round-trip error within MLX's bound (|scale| per group)`, async () => {
        const rows = 8, cols = 256;
        const data = randn(rows * cols, blockSize + BITS[format], 3).map((v, i) => v + (i % 7) * 0.1);
        const q = await dev.quantize(dev.tensor(data, [rows, cols]), { format, blockSize });
        expect(q.blockSize).toBe(blockSize);
        const scales = (await q.scales()) as Uint16Array;
        const biases = await q.biases();
        expect(scales.length).toBe(rows * cols / blockSize);
        expect(biases.length).toBe(rows * cols / blockSize);
        const back = await (await q.dequantize()).toFloat32();
        const scaleOf = await dev.tensor(scales, [scales.length], 'float16').toFloat32();
        const biasOf = await dev.tensor(biases, [biases.length], 'float16').toFloat32();
        for (let i = 0; i < data.length; i++) {
          const g = Math.floor(i / blockSize);
          // MLX's own test (python/tests/test_quantized.py): |w - w_hat| <= |scale| + 1e-6 with
          // float32 scale and bias; ours are float16 (docs/design/API.md): that adds half an ulp of
          // the bias and of up to 2^bits - 1 steps of the scale.
          const halfUlp = 2 ** -11;
          const bound = Math.abs(scaleOf[g]) * (1 + (2 ** BITS[format] - 1) * halfUlp) +
            Math.abs(biasOf[g]) * halfUlp + 1e-6;
          if (!(Math.abs(back[i] - data[i]) <= bound)) {
            expect.fail(`${format}/${blockSize} [${i}]: ${back[i]} vs ${data[i]}, bound ${bound}`);
          }
        }
      });
    }
  }

  it('all-zero input dequantizes to exact zeros (as MLX)', async () => {
    for (const format of ['affine4', 'affine8'] as const) {
      const q = await dev.quantize(dev.tensor(new Float32Array(256), [2, 128]), { format, blockSize: 32 });
      expect(Array.from(await (await q.dequantize()).toFloat32()).every((v) => v === 0)).toBe(true);
    }
  });

  it('a group holding NaN or an infinity, or beyond float16, decodes to NaN (as an MX block does); the others are untouched; export and import round-trip', async () => {
    for (const format of ['affine4', 'affine8'] as const) {
      const groups = 5, group = 32;
      const data = randn(groups * group, 9);
      data[1 * group + 3] = NaN;
      data[2 * group + 30] = Infinity;
      for (let i = 3 * group; i < 4 * group; i++) data[i] = data[i] * 1e6;  // a scale past 65504
      const q = await dev.quantize(dev.tensor(data, [1, groups * group]), { format, blockSize: group });
      const scales = (await q.scales()) as Uint16Array, biases = await q.biases();
      expect(Array.from(scales.slice(1, 4))).toEqual([0x7e00, 0x7e00, 0x7e00]);
      expect(Array.from(biases.slice(1, 4))).toEqual([0x7e00, 0x7e00, 0x7e00]);
      const back = await (await q.dequantize()).toFloat32();
      for (let i = 0; i < data.length; i++) {
        const nanGroup = i >= group && i < 4 * group;
        expect(Number.isNaN(back[i]), `${format}[${i}]`).toBe(nanGroup);
        if (!nanGroup) expect(Math.abs(back[i] - data[i]), `${format}[${i}]`).toBeLessThan(0.5);
      }
      // The same tensor quantized without the non-finite groups gives the same finite groups.
      const clean = data.slice();
      clean.fill(0, group, 4 * group);
      const cq = await dev.quantize(dev.tensor(clean, [1, groups * group]), { format, blockSize: group });
      expect(Array.from(((await cq.scales()) as Uint16Array).filter((_, g) => g === 0 || g === 4))).toEqual([scales[0], scales[4]]);
      const imported = dev.fromQuantized({ format, blockSize: group, shape: [1, groups * group], codes: await q.codes(), scales, biases });
      expect(Array.from(await (await imported.dequantize()).toFloat32())).toEqual(Array.from(back));
    }
  });

  it('affine codes are unsigned and cover the full range of each group', async () => {
    const data = Float32Array.from({ length: 64 }, (_, i) => i / 63);  // 0..1 in one group
    const q = await dev.quantize(dev.tensor(data, [1, 64]), { format: 'affine4', blockSize: 64 });
    const codes = unpack(await q.codes(), 4, 64);
    expect(Math.min(...codes)).toBe(0);
    expect(Math.max(...codes)).toBe(15);
  });
});
