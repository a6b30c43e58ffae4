// Self-test checks of the exact rules: quantize and dequantize for every format, cast between
// the float dtypes. Each compares bit for bit with the reference (reference/).
import type { FloatDType as DType, Format } from '../../types';
import { fromBfloat16Bits, fromHalfBits, toBfloat16Bits, toHalfBits } from '../reference/elements';
import { dequantizeRef, isMx, quantizeRef } from '../reference/quantize';
import type { Check } from './check';
import { all, exact } from './compare';
import { rng, uniform } from './data';

export const FORMATS: readonly Format[] = [
  'mxfp8', 'mxfp8_e5m2', 'mxfp6_e3m2', 'mxfp6_e2m3', 'mxfp4', 'mxint8', 'mxint4', 'mxint2', 'affine4', 'affine8',
];

const ROWS = 8, COLS = 256;

/**
 * Quantizer input, ROWS x COLS: blocks of 32 at magnitudes from 2^-30 to 2^30 (affine: 2^-8 to
 * 2^8, where its float16 scales stay finite and normal), and blocks that test the rules' corners:
 * all zeros, values on a dyadic grid (ties), an outlier (saturation), for MX formats float32
 * subnormals (scale byte 0), for affine ones a group past float16's range (a NaN group), and, with
 * `nonFinite`, a NaN and an infinity (MX scale byte 0xFF, affine NaN scale and bias).
 */
export function quantizeInput(format: Format, nonFinite = true): Float32Array {
  const x = uniform(ROWS * COLS, 11);
  const r = rng(12);
  for (let b = 0; b < x.length / 32; b++) {
    const block = x.subarray(b * 32, (b + 1) * 32);
    if (isMx(format)) {
      const magnitude = 2 ** Math.round(60 * r() - 30);
      block.forEach((v, i) => { block[i] = v * magnitude; });
    } else {  // affine groups: an offset too, so that some are all positive or all negative
      const magnitude = 2 ** Math.round(16 * r() - 8), offset = (2 * r() - 1) * 1.5;
      block.forEach((v, i) => { block[i] = (v + offset) * magnitude; });
    }
  }
  x.fill(0, 0, 32);  // an all-zero block
  for (let i = 32; i < 64; i++) x[i] = Math.round(x[i] * 512) / 256;  // multiples of 2^-8 in [-2, 2]: ties
  x[64 + 7] = 100 * Math.abs(x[64 + 3]) + 1;  // an outlier
  if (isMx(format)) {
    for (let i = 96; i < 128; i++) x[i] *= 2 ** -130;  // subnormal float32
  } else {
    for (let i = 192; i < 256; i++) x[i] *= 2 ** 16;  // a range float16 scales cannot hold
  }
  if (nonFinite) {  // NaN and infinity blocks (MX scale byte 0xFF, affine NaN scale and bias)
    x[128 + 5] = NaN;
    x[320 + 9] = -Infinity;
  }
  return x;
}

/** The block size used for a format: 32 for MX (the only one), 64 (the default) for affine. */
export const blockSizeOf = (format: Format) => (isMx(format) ? 32 : 64);

function quantizeCheck(format: Format): Check {
  return {
    name: `quantize ${format}`,
    async run({ dev, read }) {
      const x = quantizeInput(format);
      const want = quantizeRef(format, x, COLS, blockSizeOf(format));
      const q = await dev.quantize(dev.tensor(x, [ROWS, COLS]), { format, blockSize: blockSizeOf(format) });
      const outcomes = [
        exact('codes', read(await q.codes()), want.codes),
        exact('scales', read(await q.scales()), want.scales),
      ];
      if (want.biases) outcomes.push(exact('biases', read(await q.biases()), want.biases));
      return all(...outcomes);
    },
  };
}

function dequantizeCheck(format: Format): Check {
  return {
    name: `dequantize ${format}`,
    async run({ dev, read }) {
      // Codes and scales from the reference quantizer, imported as they are (NaN blocks too):
      // dequantize is checked on its own, whatever quantize does.
      const x = quantizeInput(format);
      const ref = quantizeRef(format, x, COLS, blockSizeOf(format));
      const imported = dev.fromQuantized({
        format, shape: [ROWS, COLS], blockSize: ref.blockSize, codes: ref.codes, scales: ref.scales, biases: ref.biases,
      });
      const want = dequantizeRef(format, ref.blockSize, ref.codes, ref.scales, ref.biases, ROWS * COLS);
      // A block quantized from a NaN or an infinity decodes to NaN, all of it.
      const q = await dev.quantize(dev.tensor(x, [ROWS, COLS]), { format, blockSize: blockSizeOf(format) });
      const outcomes = [
        exact('values', read(await (await dev.dequantize(imported)).toFloat32()), want),
        exact('values of quantize()', read(await (await dev.dequantize(q)).toFloat32()), ref.values),
      ];
      return all(...outcomes);
    },
  };
}

/**
 * float32 inputs for casts: random magnitudes from 2^-30 to 2^20; float16 and bfloat16 ties
 * (exactly halfway between two neighbours) with both their float32 neighbours; float16's
 * subnormals, largest value, overflow and halfway-to-inf; zeros of both signs, infinities, NaN.
 */
function castInput(): Float32Array {
  const r = rng(21);
  const values: number[] = [0, -0, Infinity, -Infinity, NaN, 65504, -65504, 65519, 65520, 70000, 1e-8, -3e-8, 2 ** -24, 2 ** -25, 3 * 2 ** -26];
  const bits = new Uint32Array(1), f = new Float32Array(bits.buffer);
  const withNeighbours = (x: number) => {  // x and the float32 values right below and above it
    f[0] = x;
    const b = bits[0];
    for (const d of [-1, 0, 1]) {
      bits[0] = b + d;
      values.push(f[0]);
    }
  };
  for (let i = 0; i < 500; i++) {
    values.push((r() < 0.5 ? -1 : 1) * 2 ** (50 * r() - 30));
    const h = Math.floor(r() * 0x7bff);  // a finite float16 below the largest
    withNeighbours((fromHalfBits(h) + fromHalfBits(h + 1)) / 2);  // 12 significant bits: exact in float32
    bits[0] = ((Math.floor(r() * 0x7f7f) << 16) | 0x8000) >>> 0;  // a bfloat16 tie
    withNeighbours(f[0]);
  }
  return Float32Array.from(values);
}

const halfIsNaN = (h: number) => (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
const bfloatIsNaN = (b: number) => (b & 0x7f80) === 0x7f80 && (b & 0x7f) !== 0;

/** Every 16-bit pattern: a float16 or bfloat16 source covers its whole type. */
const everyCode = () => Uint16Array.from({ length: 65536 }, (_, i) => i);

function castCheck(from: DType, to: DType): Check {
  return {
    name: `cast ${from} -> ${to}`,
    async run({ dev, read }) {
      const source: Float32Array | Uint16Array = from === 'float32' ? castInput() : everyCode();
      const value = (i: number) =>
        from === 'float32' ? source[i] : from === 'float16' ? fromHalfBits(source[i]) : fromBfloat16Bits(source[i]);
      const y = await dev.cast(dev.tensor(source, [source.length], from), to);
      const got = read(await y.data() as Float32Array | Uint16Array);
      if (to === 'float32') {
        return exact('values', got, Float32Array.from({ length: source.length }, (_, i) => value(i)));
      }
      // To 16 bits: round to nearest even from the exact value (float16 -> bfloat16 and back go
      // through float32, which holds both exactly: one rounding).
      const want = Uint16Array.from({ length: source.length }, (_, i) =>
        to === 'float16' ? toHalfBits(value(i)) : toBfloat16Bits(value(i)));
      return exact('bits', got, want, to === 'float16' ? halfIsNaN : bfloatIsNaN);
    },
  };
}

export const formatChecks: Check[] = [
  ...FORMATS.map(quantizeCheck),
  ...FORMATS.map(dequantizeCheck),
  castCheck('float32', 'float16'),
  castCheck('float32', 'bfloat16'),
  castCheck('float16', 'float32'),
  castCheck('bfloat16', 'float32'),
  castCheck('float16', 'bfloat16'),
  castCheck('bfloat16', 'float16'),
];
