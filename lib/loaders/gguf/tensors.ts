// GGUF tensor data -> device tensors, one tensor at a time, read in chunks. Where our formats hold
// ggml's values exactly the bytes are rearranged, never re-quantized:
//   F32, F16, BF16, I32 -> a dense tensor of that dtype (the bits as they are)
//   Q8_0  -> affine8 group 32: code q + 128, scale d, bias -128 d (exact in float16 for |d| <= 511.75)
//   Q4_0  -> affine4 group 32: code q, scale d, bias -8 d (exact for |d| <= 8188)
//   Q4_1  -> affine4 group 32: code q, scale d, bias m
//   MXFP4 -> mxfp4: the E8M0 byte as it is; ggml keeps elements j and j + 16 in one byte, we keep
//            2i and 2i + 1, so the nibbles are repacked
// A block with a NaN scale becomes a group that decodes to NaN, as ggml's decode gives. A tensor
// with a block these cannot hold (a bias that overflows float16, an infinite scale, an MXFP4 scale
// byte 0xFF: ggml decodes it as 2^128 times the FP4 value, not NaN as OCP MX does) loads as dense float32 with
// ggml's float32 values instead, and is listed in the conversions report.
// K-quants are converted, and each conversion's error is measured against ggml's decode in float64:
//   Q4_K  -> affine4 group 32: ggml's codes, per sub-block scale d*sc and bias -dmin*m in float16
//   Q5_K  -> affine8 group 32: the same with 5-bit codes
//   Q6_K  -> affine8 group 32: exact when a group's integer values fit 256 steps of one float16
//            scale, else re-quantized from the float64 values (two 16-element sub-blocks with their
//            own scales share each group of 32)
// Measured on Gaussian weights quantized by ggml's own quantize_row_q*_K_ref (relative RMS against
// ggml's decode; in brackets ggml's own error against the weights): Q4_K 5.4e-4 (7.3e-2), Q5_K
// 5.5e-4 (3.6e-2), Q6_K 3.7e-3 (1.8e-2; 99.6% of groups re-quantized).
import type { Device } from '../../device';
import { TensorOpsError } from '../../errors';
import { allocateArray } from '../../host-arrays';
import type { QuantizedTensor, Tensor } from '../../tensor';
import type { DType, Format } from '../../types';
import { checkOptions, describe } from '../../validate';
import { decodeBlock, halfToNumber, kQuantCodes, minK4, numberToHalf, scaleK4 } from './blocks';
import { GgufFileReader } from './reader';
import { GGML_BLOCK, type GgmlTypeName, type GgufFile, type GgufTensorInfo } from './types';

/** ggml types loadGgufTensors reads, and what each becomes. */
export const GGUF_LOADABLE: Readonly<Partial<Record<GgmlTypeName, DType | Format>>> = Object.freeze({
  F32: 'float32', F16: 'float16', BF16: 'bfloat16', I32: 'int32',
  Q8_0: 'affine8', Q4_0: 'affine4', Q4_1: 'affine4', MXFP4: 'mxfp4',
  Q4_K: 'affine4', Q5_K: 'affine8', Q6_K: 'affine8',
});

export interface GgufProgress {
  /** Tensor bytes read so far (of the tensors loaded). */
  bytesRead: number;
  totalBytes: number;
  /** The tensor being read. */
  tensor: string;
}

export interface GgufLoadOptions {
  /** Called after each chunk read (a few MiB). */
  onProgress?: (progress: GgufProgress) => void;
  /** Load only the tensors for which this returns true. */
  filter?: (tensor: GgufTensorInfo) => boolean;
}

/** A tensor that was not mapped by the direct rule of its type: a K-quant conversion or a fallback. */
export interface GgufConversion {
  tensor: string;
  /** The ggml type in the file. */
  type: GgmlTypeName;
  /** What it was loaded as. */
  to: Format | 'float32';
  /** True when dequantizing it gives ggml's own float32 dequantization bit for bit. */
  exact: boolean;
  /** Largest |dequantized float32 value - ggml's decode in float64|. */
  maxAbsError: number;
  /** sqrt(sum of squared errors / sum of squared float64 values), as maxAbsError (0 for an all-zero exact tensor). */
  relRmsError: number;
  /** How it was converted, or why the direct mapping could not hold it. */
  note: string;
}

/** The loaded tensors by name (a Map), and the report of the tensors that were converted. */
export type GgufTensors = Map<string, Tensor | QuantizedTensor> & {
  /** One entry per tensor not loaded by its type's direct, exact mapping (K-quants, fallbacks). */
  readonly conversions: readonly GgufConversion[];
};

const CHUNK = 8 << 20;

/** Error statistics of values against their float64 reference. */
class ErrorStats {
  max = 0;
  sumErr2 = 0;
  sumRef2 = 0;
  add(ours: number, ref: number): void {
    if (Number.isNaN(ours) && Number.isNaN(ref)) return;
    const e = ours === ref ? 0 : Math.abs(ours - ref);
    if (!Number.isNaN(this.max) && !(e <= this.max)) this.max = e;  // a NaN error stays
    this.sumErr2 += e * e;
    this.sumRef2 += ref * ref;
  }
  /** A group of finite values' errors, summed by the caller. */
  addSums(max: number, sumErr2: number, sumRef2: number): void {
    if (max > this.max) this.max = max;
    this.sumErr2 += sumErr2;
    this.sumRef2 += sumRef2;
  }
  get rel(): number {
    if (this.sumErr2 === 0) return 0;
    return Math.sqrt(this.sumErr2 / this.sumRef2);
  }
}

/** Fills the planes of a quantized tensor from whole blocks; `false` when a block cannot be held. */
interface Converter {
  format: Format;
  blocks(src: Uint8Array, firstBlock: number, count: number): boolean;
  planes(): { codes: Uint8Array; scales: Uint8Array | Uint16Array; biases?: Uint16Array };
  stats?: ErrorStats;
  exact?: () => boolean;
  note?: string;
}

/** ggml's j / j + 16 nibble pairs of a 32-block at src[o..o+16) -> our 2i / 2i + 1 pairs in out[p..p+16). */
function repackNibbles(src: Uint8Array, o: number, out: Uint8Array, p: number): void {
  for (let k = 0; k < 8; k++) {
    const a = src[o + 2 * k], b = src[o + 2 * k + 1];
    out[p + k] = (a & 0xf) | ((b & 0xf) << 4);
    out[p + 8 + k] = (a >> 4) | (b & 0xf0);
  }
}

const NAN16 = 0x7e00;

/** The float16 bits of k * d for each float16 d (NaN for NaN, -1 where it is not exact or d is infinite). */
function scaledBiasTable(k: number): Int32Array {
  return Int32Array.from({ length: 65536 }, (_, dBits) => {
    const d = halfToNumber(dBits);
    if (Number.isNaN(d)) return NAN16;
    if (!Number.isFinite(d)) return -1;
    const b = k * d;
    const bits = numberToHalf(b);
    return halfToNumber(bits) === b ? bits : -1;
  });
}
let biasQ8: Int32Array | undefined, biasQ4: Int32Array | undefined;

function q80Converter(n: number): Converter {
  const bias = (biasQ8 ??= scaledBiasTable(-128));
  const codes = allocateArray(Uint8Array, n, 'Q8_0 codes');
  const scales = allocateArray(Uint16Array, n / 32, 'Q8_0 scales');
  const biases = allocateArray(Uint16Array, n / 32, 'Q8_0 biases');
  return {
    format: 'affine8',
    blocks(src, first, count) {
      for (let i = 0; i < count; i++) {
        const o = i * 34, g = first + i;
        const d = src[o] | (src[o + 1] << 8);
        const b = bias[d];
        if (b < 0) return false;
        scales[g] = b === NAN16 ? NAN16 : d;
        biases[g] = b;
        for (let j = 0; j < 32; j++) codes[32 * g + j] = src[o + 2 + j] ^ 0x80;
      }
      return true;
    },
    planes: () => ({ codes, scales, biases }),
  };
}

function q4Converter(n: number, type: 'Q4_0' | 'Q4_1'): Converter {
  const codes = allocateArray(Uint8Array, n / 2, `${type} codes`);
  const scales = allocateArray(Uint16Array, n / 32, `${type} scales`);
  const biases = allocateArray(Uint16Array, n / 32, `${type} biases`);
  const size = GGML_BLOCK[type].bytes;
  const bias = type === 'Q4_0' ? (biasQ4 ??= scaledBiasTable(-8)) : undefined;
  return {
    format: 'affine4',
    blocks(src, first, count) {
      for (let i = 0; i < count; i++) {
        const o = i * size, g = first + i;
        const d = src[o] | (src[o + 1] << 8);
        if (type === 'Q4_0') {
          const b = bias![d];
          if (b < 0) return false;
          scales[g] = b === NAN16 ? NAN16 : d;
          biases[g] = b;
        } else {
          const m = src[o + 2] | (src[o + 3] << 8);
          const dv = halfToNumber(d), mv = halfToNumber(m);
          if (Number.isNaN(dv) || Number.isNaN(mv)) {
            scales[g] = NAN16;
            biases[g] = NAN16;
          } else if (!Number.isFinite(dv) || !Number.isFinite(mv)) {
            return false;
          } else {
            scales[g] = d;
            biases[g] = m;
          }
        }
        repackNibbles(src, o + (type === 'Q4_0' ? 2 : 4), codes, 16 * g);
      }
      return true;
    },
    planes: () => ({ codes, scales, biases }),
  };
}

function mxfp4Converter(n: number): Converter {
  const codes = allocateArray(Uint8Array, n / 2, 'MXFP4 codes');
  const scales = allocateArray(Uint8Array, n / 32, 'MXFP4 scales');
  return {
    format: 'mxfp4',
    blocks(src, first, count) {
      for (let i = 0; i < count; i++) {
        const o = i * 17, g = first + i;
        if (src[o] === 0xff) return false;
        scales[g] = src[o];
        repackNibbles(src, o + 1, codes, 16 * g);
      }
      return true;
    },
    planes: () => ({ codes, scales }),
  };
}

/** Q4_K -> affine4 and Q5_K -> affine8, group 32: ggml's codes, float16 sub-block scale and bias. */
function k4Converter(n: number, type: 'Q4_K' | 'Q5_K'): Converter {
  const four = type === 'Q4_K';
  const codes = allocateArray(Uint8Array, four ? n / 2 : n, `${type} codes`);
  const scales = allocateArray(Uint16Array, n / 32, `${type} scales`);
  const biases = allocateArray(Uint16Array, n / 32, `${type} biases`);
  const stats = new ErrorStats();
  const q = new Uint8Array(256);
  const size = GGML_BLOCK[type].bytes;
  let inexact = 0;
  return {
    format: four ? 'affine4' : 'affine8',
    stats,
    exact: () => inexact === 0,
    note: `ggml's ${four ? 4 : 5}-bit codes as they are; each 32-element sub-block's scale d*sc and bias -dmin*m rounded to float16 (the bias adjusted for the scale's rounding at the sub-block's mean code)`,
    blocks(src, first, count) {
      for (let i = 0; i < count; i++) {
        const o = i * size, block = first + i;
        const d = halfToNumber(src[o] | (src[o + 1] << 8));
        const dmin = halfToNumber(src[o + 2] | (src[o + 3] << 8));
        kQuantCodes(type, src, o, q);
        for (let j = 0; j < 8; j++) {
          const g = 8 * block + j;
          const S = d * scaleK4(src, o + 4, j), B = -(dmin * minK4(src, o + 4, j));
          if (!Number.isFinite(S) || !Number.isFinite(B)) return false;
          const sBits = numberToHalf(S);
          const s = halfToNumber(sBits);
          let bTarget = B;
          if (s !== S) {
            let sum = 0;
            for (let l = 0; l < 32; l++) sum += q[32 * j + l];
            bTarget = B + (S - s) * (sum / 32);
          }
          const bBits = numberToHalf(bTarget);
          const b = halfToNumber(bBits);
          if (!Number.isFinite(s) || !Number.isFinite(b)) return false;
          if (s !== S || b !== B) inexact++;
          scales[g] = sBits;
          biases[g] = bBits;
          let max = 0, e2 = 0, r2 = 0;
          for (let l = 0; l < 32; l++) {
            const c = q[32 * j + l];
            const ref = S * c + B;
            const e = Math.abs(Math.fround(s * c + b) - ref);
            if (e > max) max = e;
            e2 += e * e;
            r2 += ref * ref;
          }
          stats.addSums(max, e2, r2);
          if (four) {
            for (let k = 0; k < 16; k++) codes[16 * g + k] = q[32 * j + 2 * k] | (q[32 * j + 2 * k + 1] << 4);
          } else {
            codes.set(q.subarray(32 * j, 32 * j + 32), 32 * g);
          }
        }
      }
      return true;
    },
    planes: () => ({ codes, scales, biases }),
  };
}

function gcd(a: number, b: number): number {
  while (b) {
    const t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/** Q6_K -> affine8 group 32 (see the top of the file). */
function q6kConverter(n: number): Converter {
  const codes = allocateArray(Uint8Array, n, 'Q6_K codes');
  const scales = allocateArray(Uint16Array, n / 32, 'Q6_K scales');
  const biases = allocateArray(Uint16Array, n / 32, 'Q6_K biases');
  const stats = new ErrorStats();
  const q = new Uint8Array(256);
  const ints = new Int32Array(32);
  const trial = new Uint8Array(32);
  let requantized = 0, groups = 0, best = Infinity;
  const converter: Converter = {
    format: 'affine8',
    stats,
    exact: () => requantized === 0,
    blocks(src, first, count) {
      for (let i = 0; i < count; i++) {
        const o = i * 210, block = first + i;
        const d = halfToNumber(src[o + 208] | (src[o + 209] << 8));
        if (!Number.isFinite(d)) return false;
        kQuantCodes('Q6_K', src, o, q);
        for (let j = 0; j < 8; j++) {
          const g = 8 * block + j;
          groups++;
          // The group's values are d * ints[l]: sub-block scale times the signed code.
          let lo = Infinity, hi = -Infinity, least = Infinity;
          const big = Math.max(Math.abs((src[o + 192 + 2 * j] << 24) >> 24), Math.abs((src[o + 193 + 2 * j] << 24) >> 24));
          for (let l = 0; l < 32; l++) {
            const sc = (src[o + 192 + 2 * j + (l >> 4)] << 24) >> 24;
            const v = sc * (q[32 * j + l] - 32);
            ints[l] = v;
            if (v < lo) lo = v;
            if (v > hi) hi = v;
            if (v !== 0 && Math.abs(v) < least) least = Math.abs(v);
          }
          // An exact step divides every value, so it is at most the least nonzero one.
          let div = 0;
          if (least === Infinity || hi - lo <= 255 * least) for (let l = 0; l < 32; l++) div = gcd(div, Math.abs(ints[l]));
          else div = -1;
          if (!exactQ6Group(d, div, lo, hi, g)) {
            requantized++;
            if (!requantizeGroup(d, lo, hi, big, g)) return false;
          }
          const s = halfToNumber(scales[g]), b = halfToNumber(biases[g]);
          let max = 0, e2 = 0, r2 = 0;
          for (let l = 0; l < 32; l++) {
            const ref = d * ints[l];
            const e = Math.abs(Math.fround(s * codes[32 * g + l] + b) - ref);
            if (e > max) max = e;
            e2 += e * e;
            r2 += ref * ref;
          }
          stats.addSums(max, e2, r2);
        }
      }
      converter.note = `${requantized} of ${groups} groups of 32 (${(100 * requantized / Math.max(1, groups)).toFixed(1)}%) re-quantized to 8 bits from the float64 values (their two 16-element sub-blocks' values do not fit 256 steps of one float16 scale); the others exact`;
      return true;
    },
    planes: () => ({ codes, scales, biases }),
  };

  /** Exact: values d*ints = s*u + b with s = d*t, integer u in 0..255, b = s*lo/t; true if it fits. */
  function exactQ6Group(d: number, div: number, lo: number, hi: number, g: number): boolean {
    if (div < 0) return false;
    if (div === 0) {  // all zero
      scales[g] = 0; biases[g] = 0;
      codes.fill(0, 32 * g, 32 * g + 32);
      return true;
    }
    // The gcd, or its power-of-two part when d times the gcd needs more bits than float16 has.
    const pow2 = div & -div;
    return exactStep(d, div, lo, hi, g) || (pow2 !== div && exactStep(d, pow2, lo, hi, g));
  }

  function exactStep(d: number, t: number, lo: number, hi: number, g: number): boolean {
    if ((hi - lo) / t > 255) return false;
    const S = d * t, B = d * lo;
    const sBits = numberToHalf(S), bBits = numberToHalf(B);
    if (halfToNumber(sBits) !== S || halfToNumber(bBits) !== B) return false;
    scales[g] = sBits; biases[g] = bBits;
    for (let l = 0; l < 32; l++) codes[32 * g + l] = (ints[l] - lo) / t;
    return true;
  }

  /**
   * Lossy, the better (least squared error) of two float16 (scale, bias) pairs: 256 steps from the
   * group's least to its largest value; or a step of a quarter of the larger sub-block scale, on
   * which that sub-block's 64 levels lie exactly (only the other's are rounded).
   */
  function requantizeGroup(d: number, lo: number, hi: number, big: number, g: number): boolean {
    const vlo = Math.min(d * lo, d * hi), vhi = Math.max(d * lo, d * hi);
    best = Infinity;
    const bBits = numberToHalf(vlo);
    const b = halfToNumber(bBits);
    let sBits = vhi > b ? numberToHalf((vhi - b) / 255) : 0;
    // A scale rounded down would leave the top value more than half a step out of reach.
    if (halfToNumber(sBits) * 255 + b < vhi - halfToNumber(sBits) / 2) sBits++;
    tryGrid(d, sBits, bBits, g);
    const quarter = halfToNumber(numberToHalf(Math.abs(d * big) / 4));
    if (quarter > 0 && Number.isFinite(quarter)) tryGrid(d, numberToHalf(quarter), numberToHalf(quarter * Math.floor(vlo / quarter)), g);
    return best < Infinity;
  }

  /** Rounds the group to the grid s*u + b; keeps it when its squared error is the least so far. */
  function tryGrid(d: number, sBits: number, bBits: number, g: number): void {
    const s = halfToNumber(sBits), b = halfToNumber(bBits);
    if (!Number.isFinite(s) || !Number.isFinite(b)) return;
    const inv = s === 0 ? 0 : 1 / s;
    let sse = 0;
    for (let l = 0; l < 32; l++) {
      const v = d * ints[l];
      const u0 = Math.round((v - b) * inv);
      const u = u0 < 0 ? 0 : u0 > 255 ? 255 : u0;
      trial[l] = u;
      const e = s * u + b - v;
      sse += e * e;
    }
    if (sse < best) {
      best = sse;
      scales[g] = sBits; biases[g] = bBits;
      codes.set(trial, 32 * g);
    }
  }
  return converter;
}

function converterFor(type: GgmlTypeName, n: number): Converter {
  switch (type) {
    case 'Q8_0': return q80Converter(n);
    case 'Q4_0': case 'Q4_1': return q4Converter(n, type);
    case 'MXFP4': return mxfp4Converter(n);
    case 'Q4_K': case 'Q5_K': return k4Converter(n, type);
    case 'Q6_K': return q6kConverter(n);
    default: throw new Error(`internal: no converter for ${type}`);
  }
}

const FALLBACK_WHY: Partial<Record<GgmlTypeName, string>> = {
  Q8_0: 'a block scale is infinite or too large for the float16 bias -128*d (|d| > 511.75)',
  Q4_0: 'a block scale is infinite or too large for the float16 bias -8*d (|d| > 8188)',
  Q4_1: 'a block has an infinite scale or min',
  MXFP4: 'a block has scale byte 0xFF (ggml decodes it as 2^128, our mxfp4 as NaN)',
  Q4_K: 'a sub-block scale or bias is infinite or too large for float16',
  Q5_K: 'a sub-block scale or bias is infinite or too large for float16',
  Q6_K: 'a block scale is infinite or NaN',
};

/**
 * Loads a GGUF file's tensors onto a device, one tensor at a time, read in chunks of a few MiB.
 * `file` is readGgufInfo(path)'s answer. Our shape is ggml's dims reversed (ggml's dims[0] is the
 * contiguous axis). F32/F16/BF16/I32 load as dense tensors; Q8_0, Q4_0, Q4_1 and MXFP4 as affine8,
 * affine4 and mxfp4 tensors holding ggml's values exactly; Q4_K, Q5_K and Q6_K are converted and
 * their errors reported in `conversions`. Other types answer E_FORMAT naming the type and tensor,
 * before anything is read. On any failure the tensors already made are disposed.
 */
export async function loadGgufTensors(dev: Device, file: GgufFile, path: string, options: GgufLoadOptions = {}): Promise<GgufTensors> {
  const opts = checkOptions(options, 'options', ['onProgress', 'filter']);
  for (const key of ['onProgress', 'filter'] as const) {
    if (opts[key] !== undefined && typeof opts[key] !== 'function') {
      throw new TensorOpsError('E_ARG', `options.${key} must be a function; got ${describe(opts[key])}`);
    }
  }
  if (!file || !Array.isArray(file.tensors)) {
    throw new TensorOpsError('E_ARG', `file must be what readGgufInfo() returned; got ${describe(file)}`);
  }
  const onProgress = opts.onProgress as GgufLoadOptions['onProgress'];
  const filter = opts.filter as GgufLoadOptions['filter'];
  const selected = file.tensors.filter((t) => (filter ? filter(t) : true));
  for (const t of selected) {
    if (!GGUF_LOADABLE[t.type]) {
      throw new TensorOpsError('E_FORMAT', `GGUF file '${path}': tensor '${t.name}' has type ${t.type}, which this package does not load; accepted: ${Object.keys(GGUF_LOADABLE).join(', ')}`);
    }
  }
  const totalBytes = selected.reduce((s, t) => s + t.bytes, 0);
  const r = await GgufFileReader.open(path);
  const out = new Map<string, Tensor | QuantizedTensor>();
  const conversions: GgufConversion[] = [];
  let done = 0;
  try {
    for (const t of selected) {
      if (t.offset + t.bytes > r.size) {
        throw r.error(`tensor '${t.name}' has its data at bytes ${t.offset} to ${t.offset + t.bytes}, past the end of the file (${r.size} bytes); was it changed since it was parsed?`);
      }
      let reached = 0;
      const progress = (bytes: number) => {
        if (bytes <= reached) return;
        reached = bytes;
        onProgress?.({ bytesRead: done + bytes, totalBytes, tensor: t.name });
      };
      const loaded = await loadOne(dev, r, t, progress);
      out.set(t.name, loaded.tensor);
      if (loaded.conversion) conversions.push(loaded.conversion);
      done += t.bytes;
    }
  } catch (err) {
    for (const x of out.values()) if (!x.disposed) x.dispose();
    throw err;
  } finally {
    await r.close();
  }
  return Object.assign(out, { conversions });
}

type Loaded = { tensor: Tensor | QuantizedTensor; conversion?: GgufConversion };

/** Reads tensor t's bytes in whole-block chunks, giving each to `take` (which may stop the read). */
async function readBlocks(
  r: GgufFileReader, t: GgufTensorInfo, progress: (bytes: number) => void,
  take: (chunk: Uint8Array, firstBlock: number, blocks: number) => boolean,
): Promise<boolean> {
  const { bytes: blockBytes } = GGML_BLOCK[t.type];
  const perChunk = Math.max(1, Math.floor(CHUNK / blockBytes));
  const buf = allocateArray(Uint8Array, Math.min(t.bytes, perChunk * blockBytes), `reading tensor '${t.name}'`);
  const blocks = t.bytes / blockBytes;
  for (let b = 0; b < blocks; b += perChunk) {
    const count = Math.min(perChunk, blocks - b);
    const chunk = buf.subarray(0, count * blockBytes);
    await r.readAt(chunk, t.offset + b * blockBytes, `the data of tensor '${t.name}'`);
    progress((b + count) * blockBytes);
    if (!take(chunk, b, count)) return false;
  }
  return true;
}

async function loadOne(dev: Device, r: GgufFileReader, t: GgufTensorInfo, progress: (bytes: number) => void): Promise<Loaded> {
  const shape = [...t.dims].reverse();
  const n = t.dims.reduce((a, b) => a * b, 1);
  const what = `tensor '${t.name}'`;
  if (t.type === 'F32' || t.type === 'F16' || t.type === 'BF16' || t.type === 'I32') {
    const data = t.type === 'F32' ? allocateArray(Float32Array, n, what)
      : t.type === 'I32' ? allocateArray(Int32Array, n, what) : allocateArray(Uint16Array, n, what);
    const bytes = new Uint8Array(data.buffer, 0, t.bytes);
    for (let o = 0; o < t.bytes; o += CHUNK) {
      const end = Math.min(t.bytes, o + CHUNK);
      await r.readAt(bytes.subarray(o, end), t.offset + o, `the data of ${what}`);
      progress(end);
    }
    return { tensor: dev.tensor(data, shape, GGUF_LOADABLE[t.type] as DType) };
  }
  const conv = converterFor(t.type, n);
  const ok = await readBlocks(r, t, progress, (chunk, first, count) => conv.blocks(chunk, first, count));
  if (ok) {
    const planes = conv.planes();
    const tensor = dev.fromQuantized({ format: conv.format, shape, blockSize: 32, ...planes });
    if (!conv.stats) return { tensor };
    return {
      tensor,
      conversion: {
        tensor: t.name, type: t.type, to: conv.format, exact: conv.exact!(),
        maxAbsError: conv.stats.max, relRmsError: conv.stats.rel, note: conv.note!,
      },
    };
  }
  // Fallback: dense float32 with ggml's float32 values (Math.fround of the float64 decode).
  const values = allocateArray(Float32Array, n, what);
  const { elements } = GGML_BLOCK[t.type];
  const scratch = new Float64Array(elements);
  const stats = new ErrorStats();
  await readBlocks(r, t, progress, (chunk, first, count) => {
    const size = chunk.length / count;
    for (let i = 0; i < count; i++) {
      decodeBlock(t.type as Parameters<typeof decodeBlock>[0], chunk, i * size, scratch, 0);
      const at = (first + i) * elements;
      for (let k = 0; k < elements; k++) {
        values[at + k] = scratch[k];
        stats.add(values[at + k], scratch[k]);
      }
    }
    return true;
  });
  return {
    tensor: dev.tensor(values, shape, 'float32'),
    conversion: {
      tensor: t.name, type: t.type, to: 'float32', exact: true, maxAbsError: stats.max, relRmsError: stats.rel,
      note: `loaded as dense float32 with ggml's float32 values: ${FALLBACK_WHY[t.type] ?? 'its blocks do not fit the direct mapping'}`,
    },
  };
}
