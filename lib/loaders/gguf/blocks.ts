// ggml's block layouts (ggml-common.h) in TypeScript: encoders from float32 that follow ggml's
// reference quantizers (`quantize_row_*_ref` in ggml-quants.c, float32 arithmetic emulated step by
// step with Math.fround), so that files written with them are what llama.cpp itself would write;
// and float64 decoders, ggml's `dequantize_row_*` formulas computed without rounding (ggml's own
// float32 decode is Math.fround of these values for every type here).
import { TensorOpsError } from '../../errors';
import { GGML_BLOCK, type GgmlTypeName } from './types';

/** Types encodeGgml writes. */
export type GgmlEncodable = 'F32' | 'F16' | 'BF16' | 'Q8_0' | 'Q4_0' | 'Q4_1' | 'MXFP4';
/** Types decodeGgml reads. */
export type GgmlDecodable = GgmlEncodable | 'Q4_K' | 'Q5_K' | 'Q6_K';

// ---- float16 / bfloat16 / E8M0 scalars

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function halfBitsToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1024 + m) * 2 ** (e - 25);
}

/** Every float16 value by its bits. */
const HALF = Float64Array.from({ length: 65536 }, (_, h) => halfBitsToNumber(h));

/** float16 bits -> number. */
export function halfToNumber(h: number): number {
  return HALF[h & 0xffff];
}

/** float32 bits -> float16 bits, rounded to nearest-even (NaN to 0x7E00 with its sign). */
function f32BitsToHalf(u: number): number {
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  const mant = u & 0x7fffff;
  if (exp === 0xff) return sign | (mant ? 0x7e00 : 0x7c00);
  const e = exp - 112;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {  // a float16 subnormal (or zero)
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    const q = m >>> shift, rem = m & ((1 << shift) - 1), halfway = 1 << (shift - 1);
    return sign | (q + (rem > halfway || (rem === halfway && q & 1) ? 1 : 0));
  }
  const q = mant >>> 13, rem = mant & 0x1fff;
  // A carry out of the mantissa moves to the next exponent (up to infinity), as it should.
  return sign | (((e << 10) | q) + (rem > 0x1000 || (rem === 0x1000 && q & 1) ? 1 : 0));
}

/**
 * number -> float16 bits, rounded to nearest-even once from the exact value (overflow to
 * infinity, NaN to 0x7E00 as ggml's GGML_FP32_TO_FP16). A value that is not a float32 is first
 * rounded to float32 with round-to-odd (which keeps the second rounding correct: float32 has more
 * than two bits beyond float16's).
 */
export function numberToHalf(x: number): number {
  if (Number.isNaN(x)) return 0x7e00;
  f32[0] = x;
  let u = u32[0];
  if (f32[0] !== x && (u & 1) === 0) u += Math.abs(f32[0]) < Math.abs(x) ? 1 : -1;
  return f32BitsToHalf(u);
}

/** float32 value (given as a number) -> float16 bits; NaN keeps its sign, as ggml's conversion. */
function floatToHalf(x: number): number {
  f32[0] = x;
  return f32BitsToHalf(u32[0]);
}

/** bfloat16 bits -> number. */
export function bf16ToNumber(b: number): number {
  u32[0] = (b & 0xffff) << 16;
  return f32[0];
}

/** float32 bits -> bfloat16 bits as ggml's GGML_FP32_TO_BF16 (nearest-even; NaN made quiet). */
function bitsToBf16(u: number): number {
  if ((u & 0x7fffffff) >>> 0 > 0x7f800000) return ((u >>> 16) | 64) & 0xffff;
  return Math.floor((u + 0x7fff + ((u >>> 16) & 1)) / 65536) & 0xffff;
}

/** ggml's MXFP4 values doubled (kvalues_mxfp4): code c means FP4_DOUBLED[c] * 2^(e - 128). */
const FP4_DOUBLED = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/** The number an E8M0 byte scales an MXFP4 element's doubled value by in ggml: 2^(e - 128), 0xFF included. */
export function ggmlE8m0Half(e: number): number {
  return 2 ** (e - 128);
}

// ---- K-quant sub-block scales (get_scale_min_k4)

/** Q4_K/Q5_K: the 6-bit scale of sub-block j (0..7) from the block's 12 scale bytes at s[o..]. */
export function scaleK4(s: Uint8Array, o: number, j: number): number {
  return j < 4 ? s[o + j] & 63 : (s[o + j + 4] & 0xf) | ((s[o + j - 4] >> 6) << 4);
}

/** Q4_K/Q5_K: the 6-bit min of sub-block j. */
export function minK4(s: Uint8Array, o: number, j: number): number {
  return j < 4 ? s[o + j + 4] & 63 : (s[o + j + 4] >> 4) | ((s[o + j] >> 6) << 4);
}

/**
 * The unsigned codes of one K-quant block (256 elements, in element order) at src[o..]: Q4_K 0..15,
 * Q5_K 0..31, Q6_K 0..63 (the value uses code - 32).
 */
export function kQuantCodes(type: 'Q4_K' | 'Q5_K' | 'Q6_K', src: Uint8Array, o: number, codes: Uint8Array): void {
  if (type === 'Q6_K') {
    const ql = o, qh = o + 128;
    for (let e = 0; e < 256; e++) {
      const h = e >> 7, i = e & 127, k = i >> 5, l = i & 31;
      const lo = src[ql + h * 64 + l + (k & 1 ? 32 : 0)];
      const low4 = k < 2 ? lo & 0xf : lo >> 4;
      const hi2 = (src[qh + h * 32 + l] >> (2 * k)) & 3;
      codes[e] = low4 | (hi2 << 4);
    }
    return;
  }
  const qs = o + (type === 'Q4_K' ? 16 : 48);
  for (let j = 0; j < 8; j++) {
    const c = j >> 1;
    for (let l = 0; l < 32; l++) {
      const b = src[qs + 32 * c + l];
      let q = j & 1 ? b >> 4 : b & 0xf;
      if (type === 'Q5_K') q |= ((src[o + 16 + l] >> j) & 1) << 4;
      codes[32 * j + l] = q;
    }
  }
}

const half = (src: Uint8Array, o: number) => halfToNumber(src[o] | (src[o + 1] << 8));

// ---- float64 decoders, one block at a time

type BlockDecoder = (src: Uint8Array, o: number, out: Float64Array, at: number) => void;
const kCodes = new Uint8Array(256);

const DECODERS: Record<GgmlDecodable, BlockDecoder> = {
  F32: (src, o, out, at) => {
    u32[0] = (src[o] | (src[o + 1] << 8) | (src[o + 2] << 16) | (src[o + 3] << 24)) >>> 0;
    out[at] = f32[0];
  },
  F16: (src, o, out, at) => { out[at] = half(src, o); },
  BF16: (src, o, out, at) => { out[at] = bf16ToNumber(src[o] | (src[o + 1] << 8)); },
  Q8_0: (src, o, out, at) => {
    const d = half(src, o);
    for (let j = 0; j < 32; j++) out[at + j] = ((src[o + 2 + j] << 24) >> 24) * d;
  },
  Q4_0: (src, o, out, at) => {
    const d = half(src, o);
    for (let j = 0; j < 16; j++) {
      const b = src[o + 2 + j];
      out[at + j] = ((b & 0xf) - 8) * d;
      out[at + j + 16] = ((b >> 4) - 8) * d;
    }
  },
  Q4_1: (src, o, out, at) => {
    const d = half(src, o), m = half(src, o + 2);
    for (let j = 0; j < 16; j++) {
      const b = src[o + 4 + j];
      out[at + j] = (b & 0xf) * d + m;
      out[at + j + 16] = (b >> 4) * d + m;
    }
  },
  MXFP4: (src, o, out, at) => {
    const d = ggmlE8m0Half(src[o]);
    for (let j = 0; j < 16; j++) {
      const b = src[o + 1 + j];
      out[at + j] = FP4_DOUBLED[b & 0xf] * d;
      out[at + j + 16] = FP4_DOUBLED[b >> 4] * d;
    }
  },
  Q4_K: (src, o, out, at) => decodeK4(src, o, out, at, 'Q4_K'),
  Q5_K: (src, o, out, at) => decodeK4(src, o, out, at, 'Q5_K'),
  Q6_K: (src, o, out, at) => {
    const d = half(src, o + 208);
    kQuantCodes('Q6_K', src, o, kCodes);
    for (let e = 0; e < 256; e++) {
      const sc = (src[o + 192 + (e >> 4)] << 24) >> 24;
      out[at + e] = d * sc * (kCodes[e] - 32);  // |d * sc * q| < 2^26 * 2^11: exact in float64
    }
  },
};

function decodeK4(src: Uint8Array, o: number, out: Float64Array, at: number, type: 'Q4_K' | 'Q5_K'): void {
  const d = half(src, o), dmin = half(src, o + 2);
  kQuantCodes(type, src, o, kCodes);
  for (let j = 0; j < 8; j++) {
    const s = d * scaleK4(src, o + 4, j), b = dmin * minK4(src, o + 4, j);
    for (let l = 0; l < 32; l++) out[at + 32 * j + l] = s * kCodes[32 * j + l] - b;
  }
}

/** Decodes one block of `type` at src[o..] into out[at..] (float64). */
export function decodeBlock(type: GgmlDecodable, src: Uint8Array, o: number, out: Float64Array, at: number): void {
  DECODERS[type](src, o, out, at);
}

/**
 * ggml data of `type` -> float64 values, ggml's dequantization formulas without rounding (ggml's
 * float32 dequantize_row_* gives Math.fround of each). `data` holds whole blocks.
 */
export function decodeGgml(type: GgmlDecodable, data: Uint8Array): Float64Array {
  const decoder = DECODERS[type];
  if (!decoder) throw new TensorOpsError('E_FORMAT', `decodeGgml: type ${String(type)} is not one of ${Object.keys(DECODERS).join(', ')}`);
  const { elements, bytes } = GGML_BLOCK[type];
  if (data.length % bytes !== 0) {
    throw new TensorOpsError('E_SHAPE', `decodeGgml: ${data.length} bytes is not a whole number of ${type} blocks (${bytes} bytes each)`);
  }
  const blocks = data.length / bytes;
  const out = new Float64Array(blocks * elements);
  for (let i = 0; i < blocks; i++) decoder(data, i * bytes, out, i * elements);
  return out;
}

// ---- encoders (ggml's reference quantizers)

const fr = Math.fround;
/** C's roundf: half away from zero. */
const roundf = (x: number) => Math.sign(x) * Math.floor(Math.abs(x) + 0.5);
/** C's float -> integer conversion: toward zero. */
const trunc = Math.trunc;

function quantizeQ8_0(x: Float32Array, i: number, out: Uint8Array, o: number): void {
  let amax = 0;
  for (let j = 0; j < 32; j++) { const a = Math.abs(x[i + j]); amax = amax > a ? amax : a; }
  const d = fr(amax / 127);
  const id = d ? fr(1 / d) : 0;
  const h = floatToHalf(d);
  out[o] = h & 0xff; out[o + 1] = h >> 8;
  for (let j = 0; j < 32; j++) out[o + 2 + j] = roundf(fr(x[i + j] * id)) & 0xff;
}

function quantizeQ4_0(x: Float32Array, i: number, out: Uint8Array, o: number): void {
  let amax = 0, max = 0;
  for (let j = 0; j < 32; j++) {
    const v = x[i + j];
    if (amax < Math.abs(v)) { amax = Math.abs(v); max = v; }
  }
  const d = fr(max / -8);
  const id = d ? fr(1 / d) : 0;
  const h = floatToHalf(d);
  out[o] = h & 0xff; out[o + 1] = h >> 8;
  for (let j = 0; j < 16; j++) {
    const q0 = Math.min(15, trunc(fr(fr(x[i + j] * id) + 8.5)));
    const q1 = Math.min(15, trunc(fr(fr(x[i + 16 + j] * id) + 8.5)));
    out[o + 2 + j] = q0 | (q1 << 4);
  }
}

function quantizeQ4_1(x: Float32Array, i: number, out: Uint8Array, o: number): void {
  let min = 3.4028234663852886e38, max = -3.4028234663852886e38;
  for (let j = 0; j < 32; j++) {
    const v = x[i + j];
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const d = fr(fr(max - min) / 15);
  const id = d ? fr(1 / d) : 0;
  const hd = floatToHalf(d), hm = floatToHalf(min);
  out[o] = hd & 0xff; out[o + 1] = hd >> 8; out[o + 2] = hm & 0xff; out[o + 3] = hm >> 8;
  for (let j = 0; j < 16; j++) {
    const q0 = Math.min(15, trunc(fr(fr(fr(x[i + j] - min) * id) + 0.5)));
    const q1 = Math.min(15, trunc(fr(fr(fr(x[i + 16 + j] - min) * id) + 0.5)));
    out[o + 4 + j] = q0 | (q1 << 4);
  }
}

function bestIndexMxfp4(x: number, e: number): number {
  // ggml tries the 16 codes in order and keeps the first least |value - x| (in float32). A code of
  // the other sign is never closer than code 0 (value 0), nor is code 8 (-0, after code 0): the
  // search can skip them.
  let best = 0;
  let bestErr = Math.abs(x);
  const from = x < 0 ? 9 : 1;
  for (let k = from; k < from + 7; k++) {
    const err = Math.abs(fr(fr(FP4_DOUBLED[k] * e) - x));
    if (err < bestErr) { best = k; bestErr = err; }
  }
  return best;
}

function quantizeMxfp4(x: Float32Array, i: number, out: Uint8Array, o: number): void {
  let amax = 0;
  for (let j = 0; j < 32; j++) if (amax < Math.abs(x[i + j])) amax = Math.abs(x[i + j]);
  // ggml: (uint8_t)(floorf(log2f(amax)) - 2 + 127); below 2^-125 that is negative (undefined in C):
  // byte 0 here.
  const e = amax > 0 ? Math.max(0, Math.floor(fr(Math.log2(amax))) - 2 + 127) : 0;
  const d = fr(ggmlE8m0Half(e));
  out[o] = e;
  for (let j = 0; j < 16; j++) out[o + 1 + j] = bestIndexMxfp4(x[i + j], d) | (bestIndexMxfp4(x[i + 16 + j], d) << 4);
}

const QUANTIZERS: Partial<Record<GgmlEncodable, (x: Float32Array, i: number, out: Uint8Array, o: number) => void>> = {
  Q8_0: quantizeQ8_0, Q4_0: quantizeQ4_0, Q4_1: quantizeQ4_1, MXFP4: quantizeMxfp4,
};

/**
 * float32 values -> ggml data of `type`, as llama.cpp's reference quantizers write it (F32, F16,
 * BF16, Q8_0, Q4_0, Q4_1, MXFP4). The length must be a whole number of blocks; the quantized types
 * take finite values only (ggml's quantizers are undefined for NaN and infinity).
 */
export function encodeGgml(type: GgmlEncodable, values: Float32Array): Uint8Array {
  if (!(values instanceof Float32Array)) throw new TensorOpsError('E_ARG', 'encodeGgml: values must be a Float32Array');
  const block = GGML_BLOCK[type as GgmlTypeName];
  if (!block || !(type === 'F32' || type === 'F16' || type === 'BF16' || type in QUANTIZERS)) {
    throw new TensorOpsError('E_FORMAT', `encodeGgml: type ${String(type)} is not one of F32, F16, BF16, Q8_0, Q4_0, Q4_1, MXFP4`);
  }
  const n = values.length;
  if (n % block.elements !== 0) {
    throw new TensorOpsError('E_SHAPE', `encodeGgml: ${n} values are not a whole number of ${type} blocks (${block.elements} each)`);
  }
  if (type === 'F32') return new Uint8Array(Float32Array.from(values).buffer);
  if (type === 'F16' || type === 'BF16') {
    const out = new Uint16Array(n);
    const bits = new Uint32Array(values.buffer, values.byteOffset, n);
    for (let i = 0; i < n; i++) out[i] = type === 'F16' ? f32BitsToHalf(bits[i]) : bitsToBf16(bits[i]);
    return new Uint8Array(out.buffer);
  }
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(values[i])) {
      throw new TensorOpsError('E_ARG', `encodeGgml: values[${i}] is ${values[i]}; ${type} takes finite values`);
    }
  }
  const out = new Uint8Array((n / block.elements) * block.bytes);
  const quantize = QUANTIZERS[type]!;
  for (let b = 0; b * block.elements < n; b++) quantize(values, b * block.elements, out, b * block.bytes);
  return out;
}
