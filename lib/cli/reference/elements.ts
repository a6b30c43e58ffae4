// Element and dtype codecs for the self-test's reference, written from their definitions (API.md
// "Quantized formats", IEEE 754 binary16, bfloat16) and computed in float64. Nothing here calls
// the addon: the self-test compares the addon against this.
import type { Element } from '../../types';

/** An element encoding: the magnitude codes in value order and how a sign is attached. */
interface ElementSpec {
  /** Value of magnitude code c (c = 0 .. maxCode), all finite, increasing. */
  values: number[];
  /** Minifloats: a sign bit above the magnitude and their field widths; integers: two's complement. */
  minifloat?: { ebits: number; mbits: number };
  bits: number;
}

/** OCP minifloat with `ebits` exponent and `mbits` mantissa bits, bias 2^(ebits-1) - 1. */
function minifloatValue(code: number, ebits: number, mbits: number): number {
  const bias = 2 ** (ebits - 1) - 1;
  const e = (code >> mbits) & ((1 << ebits) - 1);
  const m = code & ((1 << mbits) - 1);
  return e === 0 ? m * 2 ** (1 - bias - mbits) : (1 + m / 2 ** mbits) * 2 ** (e - bias);
}

function minifloat(ebits: number, mbits: number, maxCode: number): ElementSpec {
  const values = Array.from({ length: maxCode + 1 }, (_, c) => minifloatValue(c, ebits, mbits));
  return { values, minifloat: { ebits, mbits }, bits: 1 + ebits + mbits };
}

/** Two's complement integer of `bits` bits, value q * 2^exp, |q| <= limit (symmetric). */
function integer(bits: number, exp: number, limit: number): ElementSpec {
  return { values: Array.from({ length: limit + 1 }, (_, q) => q * 2 ** exp), bits };
}

// Largest magnitude codes: E4M3 0x7E = 448 (0x7F is NaN), E5M2 0x7B = 57344 (0x7C is inf).
const SPECS: Record<Exclude<Element, 'e8m0'>, ElementSpec> = {
  fp8_e4m3: minifloat(4, 3, 0x7e),
  fp8_e5m2: minifloat(5, 2, 0x7b),
  fp6_e3m2: minifloat(3, 2, 0x1f),
  fp6_e2m3: minifloat(2, 3, 0x1f),
  fp4_e2m1: minifloat(2, 1, 0x7),
  int8: integer(8, -6, 127),
  int4: integer(4, -2, 7),
  int2: integer(2, 0, 1),
};

/** Bits per code of an element. */
export function elementBits(element: Exclude<Element, 'e8m0'>): number {
  return SPECS[element].bits;
}

/** The largest finite magnitude of an element (where encoding saturates). */
export function elementMax(element: Exclude<Element, 'e8m0'>): number {
  const v = SPECS[element].values;
  return v[v.length - 1];
}

/** Decodes one code (or E8M0 scale byte) to its value. */
export function decodeElement(element: Element, code: number): number {
  if (element === 'e8m0') return code === 0xff ? NaN : 2 ** (code - 127);
  const spec = SPECS[element];
  if (!spec.minifloat) {
    const q = code >= 1 << (spec.bits - 1) ? code - (1 << spec.bits) : code;
    return q * spec.values[1];
  }
  const magnitude = code & ((1 << (spec.bits - 1)) - 1);
  const sign = (code >> (spec.bits - 1)) & 1 ? -1 : 1;
  if (element === 'fp8_e4m3' && magnitude === 0x7f) return NaN;
  if (element === 'fp8_e5m2' && magnitude >= 0x7c) return magnitude === 0x7c ? sign * Infinity : NaN;
  return sign * minifloatValue(magnitude, spec.minifloat.ebits, spec.minifloat.mbits);
}

/**
 * Encodes a value that is not NaN: the nearest magnitude, ties to the even code, saturating at the
 * largest; a minifloat keeps the sign bit (also of a zero), an integer negates its code.
 */
export function encodeElement(element: Exclude<Element, 'e8m0'>, x: number): number {
  const spec = SPECS[element];
  const a = Math.abs(x);
  const v = spec.values;
  let c = v.length - 1;
  if (a < v[c]) {
    let lo = 0;
    while (v[lo + 1] <= a) lo++;  // v[lo] <= a < v[lo + 1]
    const below = a - v[lo], above = v[lo + 1] - a;
    c = below < above || (below === above && lo % 2 === 0) ? lo : lo + 1;
  }
  const negative = x < 0 || Object.is(x, -0);
  if (spec.minifloat) return negative ? c | (1 << (spec.bits - 1)) : c;
  return negative && c !== 0 ? (1 << spec.bits) - c : c;
}

/** Round half to even, as the default IEEE rounding (C's rint) does. */
export function rint(x: number): number {
  const r = Math.round(x);  // half up
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** float16 bits of a float32 value, rounded to nearest even (overflow to inf, NaN to 0x7E00). */
export function toHalfBits(x: number): number {
  if (Number.isNaN(x)) return 0x7e00;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a >= 65520) return sign | 0x7c00;  // 65520: halfway from 65504 (odd) to 2^16, ties up
  // The quantum 2^(e - 10) of a's binade [2^e, 2^(e+1)) (float32 exponent bits: exact), and
  // 2^-24 for every value below 2^-14, where float16 is subnormal.
  const e = Math.max(((float32Bits(a) >>> 23) & 0xff) - 127, -14);
  const n = rint(a / 2 ** (e - 10));  // exact division by a power of two; n <= 2^11
  // Subnormal: n counts 2^-24 (n = 1024 is the smallest normal); normal: n in [1024, 2048],
  // and 2048, rounded up out of the binade, carries into the exponent as it should.
  return sign | (a < 2 ** -14 ? n : ((e + 15) << 10) + n - 1024);
}

/** The value of float16 bits. */
export function fromHalfBits(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15));
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** float32 bits of a value (rounded to float32 first). */
export function float32Bits(x: number): number {
  f32[0] = x;
  return u32[0];
}

/** bfloat16 bits of a float32 value: its top 16 bits rounded to nearest even (NaN stays NaN). */
export function toBfloat16Bits(x: number): number {
  if (Number.isNaN(x)) return 0x7fc0;
  const bits = float32Bits(x);
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;  // a carry is the next binade
}

/** The value of bfloat16 bits. */
export function fromBfloat16Bits(b: number): number {
  u32[0] = (b & 0xffff) << 16;
  return f32[0];
}
