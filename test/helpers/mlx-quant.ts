// An independent float64 implementation of MLX's quantizers and their packing, for making test
// files as mlx-lm would write them (mlx/ops.cpp `affine_quantize` and `pack_and_quantize`; the
// fp modes' layout from mlx/backend/cpu/quantized.cpp), and float16/bfloat16 rounding done on the
// float64 bit pattern (not through the loader's routines).

/** Round half to even (MLX's round). */
export function rint(x: number): number {
  const f = Math.floor(x), d = x - f;
  return d > 0.5 || (d === 0.5 && f % 2 !== 0) ? f + 1 : f;
}

/** x rounded to a float with `mbits` mantissa bits and minimum normal exponent `emin`; overflow past `max` to infinity. */
function roundTo(x: number, mbits: number, emin: number, maxExp: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const a = Math.abs(x);
  let e = Math.max(Math.floor(Math.log2(a)), emin);
  if (2 ** e > a && e > emin) e--;
  else if (2 ** (e + 1) <= a) e++;
  const ulp = 2 ** (e - mbits);
  const r = rint(a / ulp) * ulp;
  const max = (2 - 2 ** -mbits) * 2 ** maxExp;
  const out = r > max ? Infinity : r;
  return x < 0 ? -out : out;
}
export const roundF16 = (x: number) => roundTo(x, 10, -14, 15);
export const roundBf16 = (x: number) => roundTo(x, 7, -126, 127);

/** The bits of a value already representable in float16 / bfloat16. */
export function f16Bits(v: number): number {
  const dv = new DataView(new ArrayBuffer(8));
  if (Number.isNaN(v)) return 0x7e00;
  const sign = v < 0 || Object.is(v, -0) ? 0x8000 : 0;
  const a = Math.abs(v);
  if (a === Infinity) return sign | 0x7c00;
  if (a < 2 ** -14) return sign | Math.round(a / 2 ** -24);
  dv.setFloat64(0, a);
  const hi = dv.getUint32(0);
  const e = (hi >>> 20) - 1023;
  const m = (hi >>> 10) & 0x3ff;
  return sign | ((e + 15) << 10) | m;
}
export function bf16Bits(v: number): number {
  const dv = new DataView(new ArrayBuffer(4));
  dv.setFloat32(0, v);
  return dv.getUint32(0) >>> 16;
}

export type ScaleDType = 'F16' | 'BF16' | 'F32';
const roundScale = (dt: ScaleDType) => (dt === 'F16' ? roundF16 : dt === 'BF16' ? roundBf16 : Math.fround);

/** Scale/bias values as the bytes of a tensor of `dt`. */
export function scaleBytes(values: ArrayLike<number>, dt: ScaleDType): Uint8Array {
  if (dt === 'F32') return new Uint8Array(Float32Array.from(values).buffer);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = dt === 'F16' ? f16Bits(values[i]) : bf16Bits(values[i]);
  return new Uint8Array(out.buffer);
}

export interface MlxAffine {
  /** uint32 words, as the file's bytes. */
  packed: Uint8Array;
  /** The stored scales and biases (rounded to the scale dtype), one per group. */
  scales: Float64Array;
  biases: Float64Array;
  codes: Uint8Array;
  /** s * q + b in float64: the values MLX's dequantize means. */
  values: Float64Array;
}

/** MLX's affine quantization of w [rows, K] along K (float64, stored scale dtype `dt`). */
export function mlxAffineQuantize(w: ArrayLike<number>, K: number, bits: number, groupSize: number, dt: ScaleDType): MlxAffine {
  const n = w.length, groups = n / groupSize, nBins = 2 ** bits - 1, round = roundScale(dt);
  const scales = new Float64Array(groups), biases = new Float64Array(groups), codes = new Uint8Array(n);
  for (let g = 0; g < groups; g++) {
    let wMax = -Infinity, wMin = Infinity;
    for (let j = 0; j < groupSize; j++) { wMax = Math.max(wMax, w[g * groupSize + j]); wMin = Math.min(wMin, w[g * groupSize + j]); }
    const mask = Math.abs(wMin) > Math.abs(wMax);
    let scale = Math.max((wMax - wMin) / nBins, 1e-7);
    scale = mask ? scale : -scale;
    const edge = mask ? wMin : wMax;
    const q0 = rint(edge / scale);
    if (q0 !== 0) scale = edge / q0;
    const bias = q0 === 0 ? 0 : edge;
    scales[g] = round(scale);
    biases[g] = round(bias);
    for (let j = 0; j < groupSize; j++) {
      codes[g * groupSize + j] = Math.min(nBins, Math.max(0, rint((w[g * groupSize + j] - biases[g]) / scales[g])));
    }
  }
  const values = new Float64Array(n);
  for (let i = 0; i < n; i++) values[i] = scales[(i / groupSize) | 0] * codes[i] + biases[(i / groupSize) | 0];
  void K;
  return { packed: packMlx(codes, bits), scales, biases, codes, values };
}

/**
 * MLX's packing: 2/4/8 bits as 32/bits codes per uint32 word, code j at bit bits*j; 3/5/6 bits
 * as a little-endian bit stream (8 codes in 3 or 5 bytes, 4 codes in 3 bytes).
 */
export function packMlx(codes: Uint8Array, bits: number): Uint8Array {
  const nBytes = (codes.length * bits) / 8;
  if (32 % bits === 0) {
    const per = 32 / bits, words = new Uint32Array(codes.length / per);
    for (let i = 0; i < codes.length; i++) words[(i / per) | 0] = (words[(i / per) | 0] + codes[i] * 2 ** (bits * (i % per))) >>> 0;
    return new Uint8Array(words.buffer);
  }
  const out = new Uint8Array(nBytes);
  for (let i = 0; i < codes.length; i++) {
    for (let b = 0; b < bits; b++) {
      if ((codes[i] >> b) & 1) { const pos = i * bits + b; out[pos >> 3] |= 1 << (pos & 7); }
    }
  }
  return out;
}

export const FP4_VALUES = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6];

/** OCP E4M3 (fn) byte -> value. */
export function e4m3(c: number): number {
  const s = c & 0x80 ? -1 : 1, e = (c >> 3) & 15, m = c & 7;
  if (e === 15 && m === 7) return NaN;
  return e === 0 ? s * m * 2 ** -9 : s * 2 ** (e - 7) * (1 + m / 8);
}
