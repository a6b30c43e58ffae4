// Block quantization for the self-test's reference, from API.md's rules: OCP MX (E8M0 scale per
// block of 32 along the last axis) and MLX 'affine' (float16 scale and bias per group). Packed the
// way QuantizedTensor.codes() returns them, so the bytes compare directly.
import type { Element, Format } from '../../types';
import { decodeElement, elementBits, encodeElement, float32Bits, fromHalfBits, rint, toHalfBits } from './elements';

type CodeElement = Exclude<Element, 'e8m0'>;

/** Per MX format: its element and emax, the exponent of the element's largest normal. */
const MX: Partial<Record<Format, { element: CodeElement; emax: number }>> = {
  mxfp8: { element: 'fp8_e4m3', emax: 8 },
  mxfp8_e5m2: { element: 'fp8_e5m2', emax: 15 },
  mxfp6_e3m2: { element: 'fp6_e3m2', emax: 4 },
  mxfp6_e2m3: { element: 'fp6_e2m3', emax: 2 },
  mxfp4: { element: 'fp4_e2m1', emax: 2 },
  mxint8: { element: 'int8', emax: 0 },
  mxint4: { element: 'int4', emax: 0 },
  mxint2: { element: 'int2', emax: 0 },
};

export interface QuantizedRef {
  format: Format;
  blockSize: number;
  /** Packed codes, as QuantizedTensor.codes(). */
  codes: Uint8Array;
  /** MX: E8M0 bytes; affine: float16 bits. */
  scales: Uint8Array | Uint16Array;
  /** affine only: float16 bits. */
  biases?: Uint16Array;
  /** The dequantized values (float32-exact), NaN for a NaN block. */
  values: Float64Array;
}

export function isMx(format: Format): boolean {
  return MX[format] !== undefined;
}

/** Bits per code of a format. */
export function formatBits(format: Format): number {
  const mx = MX[format];
  return mx ? elementBits(mx.element) : format === 'affine4' ? 4 : 8;
}

/** Packs one code per element: 4-bit element 2i in the low nibble, 2-bit element 4i in bits 0-1, FP6 LSB first. */
export function packCodes(codes: ArrayLike<number>, bits: number): Uint8Array {
  const out = new Uint8Array((codes.length * bits) / 8);
  for (let i = 0; i < codes.length; i++) {
    const bit = i * bits;  // LSB-first bit stream: every packing rule above is this one
    for (let b = 0; b < bits; b++) {
      if ((codes[i] >> b) & 1) out[(bit + b) >> 3] |= 1 << ((bit + b) & 7);
    }
  }
  return out;
}

/** Unpacks codes of `bits` bits (the inverse of packCodes). */
export function unpackCodes(packed: Uint8Array, bits: number, count: number): number[] {
  const codes: number[] = new Array(count).fill(0);
  for (let i = 0; i < count; i++) {
    for (let b = 0; b < bits; b++) {
      const bit = i * bits + b;
      if ((packed[bit >> 3] >> (bit & 7)) & 1) codes[i] |= 1 << b;
    }
  }
  return codes;
}

/**
 * OCP MX: per block of 32, e = floor(log2(amax)) - emax from amax's float32 exponent bits, clamped
 * to [-127, 127] (scale byte e + 127); elements x / 2^e rounded to nearest even and saturated. A
 * block holding NaN or an infinity gets byte 0xFF and zero codes, and decodes to NaN.
 */
export function mxQuantize(format: Format, x: Float32Array, cols: number): QuantizedRef {
  const mx = MX[format];
  if (!mx) throw new Error(`${format} is not an MX format`);
  const block = 32;
  const blocks = x.length / block;
  const codes = new Array<number>(x.length).fill(0);
  const scales = new Uint8Array(blocks);
  const values = new Float64Array(x.length);
  if (cols % block !== 0) throw new Error(`cols must be a multiple of ${block}`);
  for (let b = 0; b < blocks; b++) {
    const xs = x.subarray(b * block, (b + 1) * block);
    if (xs.some((v) => !Number.isFinite(v))) {
      scales[b] = 0xff;
      values.fill(NaN, b * block, (b + 1) * block);
      continue;
    }
    const amax = xs.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    const field = (float32Bits(amax) >>> 23) & 0xff;  // floor(log2(amax)) + 127; 0 when subnormal or zero
    const byte = Math.max(field - mx.emax, 0);
    scales[b] = byte;
    const scale = 2 ** (byte - 127);
    for (let i = 0; i < block; i++) {
      const c = encodeElement(mx.element, xs[i] / scale);  // exact: a power-of-two division in float64
      codes[b * block + i] = c;
      values[b * block + i] = decodeElement(mx.element, c) * scale;
    }
  }
  return { format, blockSize: block, codes: packCodes(codes, elementBits(mx.element)), scales, values };
}

const f32 = Math.fround;
const HALF_NAN = 0x7e00;

/**
 * MLX 'affine' (mlx/backend/cpu/quantized.cpp), in float32 arithmetic as MLX does it: per group,
 * scale = max((max - min) / (2^bits - 1), 1e-7) with the sign of the larger-magnitude extreme
 * (edge); if q0 = rint(edge / scale) is not 0, scale = edge / q0 and bias = edge, else bias 0;
 * q = clamp(rint((x - bias) / scale), 0, 2^bits - 1); scale and bias stored as float16.
 * Our rule on top of MLX's: a group holding NaN or an infinity, or whose scale or bias float16
 * cannot hold, gets NaN scale and bias (0x7E00) and zero codes, and decodes to NaN.
 */
export function affineQuantize(format: Format, x: Float32Array, cols: number, group: number): QuantizedRef {
  const bits = format === 'affine4' ? 4 : format === 'affine8' ? 8 : 0;
  if (!bits) throw new Error(`${format} is not an affine format`);
  if (cols % group !== 0) throw new Error(`cols must be a multiple of ${group}`);
  const bins = 2 ** bits - 1;
  const groups = x.length / group;
  const codes = new Array<number>(x.length);
  const scales = new Uint16Array(groups);
  const biases = new Uint16Array(groups);
  const values = new Float64Array(x.length);
  for (let g = 0; g < groups; g++) {
    const w = x.subarray(g * group, (g + 1) * group);
    const nanGroup = () => {
      scales[g] = biases[g] = HALF_NAN;
      codes.fill(0, g * group, (g + 1) * group);
      values.fill(NaN, g * group, (g + 1) * group);
    };
    if (!w.every(Number.isFinite)) {
      nanGroup();
      continue;
    }
    const min = Math.min(...w), max = Math.max(...w);
    const negEdge = Math.abs(min) > Math.abs(max);
    let scale = Math.max(f32(f32(max - min) / bins), f32(1e-7));  // two float32 roundings, as MLX
    scale = negEdge ? scale : -scale;
    const edge = negEdge ? min : max;
    const q0 = rint(f32(edge / scale));
    let bias = 0;
    if (q0 !== 0) {
      scale = f32(edge / q0);
      bias = edge;
    }
    scales[g] = toHalfBits(scale);
    biases[g] = toHalfBits(bias);
    const s = fromHalfBits(scales[g]), b = fromHalfBits(biases[g]);
    if (!Number.isFinite(s) || !Number.isFinite(b)) {
      nanGroup();
      continue;
    }
    for (let i = 0; i < group; i++) {
      const q = Math.min(Math.max(rint(f32(f32(w[i] - bias) / scale)), 0), bins);
      codes[g * group + i] = q;
      values[g * group + i] = f32(s * q + b);  // s * q is exact (11 by 8 bits): one rounding
    }
  }
  return { format, blockSize: group, codes: packCodes(codes, bits), scales, biases, values };
}

/** Quantizes rows of `cols` values (float32) by the format's rule. */
export function quantizeRef(format: Format, x: Float32Array, cols: number, blockSize = 64): QuantizedRef {
  return isMx(format) ? mxQuantize(format, x, cols) : affineQuantize(format, x, cols, blockSize);
}

/** Dequantizes packed codes and scales (and biases) by API.md's rules, independently of mxQuantize. */
export function dequantizeRef(
  format: Format, blockSize: number, codes: Uint8Array, scales: Uint8Array | Uint16Array,
  biases: Uint16Array | undefined, count: number,
): Float64Array {
  const mx = MX[format];
  const unpacked = unpackCodes(codes, formatBits(format), count);
  const out = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const g = Math.floor(i / blockSize);
    out[i] = mx
      ? decodeElement('e8m0', scales[g]) * decodeElement(mx.element, unpacked[i])
      : f32(fromHalfBits(scales[g]) * unpacked[i] + fromHalfBits(biases![g]));
  }
  return out;
}

/**
 * The magnitude each weight contributes to a dot product's error bound (reference/ops.ts): |w| for
 * MX formats; |s q| + |b| for affine, whose kernels may sum s * sum(q x) + b * sum(x) per group.
 */
export function weightMagnitudes(ref: QuantizedRef): Float64Array {
  if (isMx(ref.format)) return ref.values.map(Math.abs);
  const q = unpackCodes(ref.codes, formatBits(ref.format), ref.values.length);
  return ref.values.map((_, i) => {
    const g = Math.floor(i / ref.blockSize);
    return Math.abs(fromHalfBits(ref.scales[g]) * q[i]) + Math.abs(fromHalfBits(ref.biases![g]));
  });
}
