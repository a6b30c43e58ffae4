// The numbers of the safetensors loader, in plain JavaScript: float16/bfloat16 bits to and from
// float64 (round to nearest even), the FP8/FP4/E8M0 decode tables, and bit-stream unpacking of
// MLX's packed codes. Everything here is exact in float64 unless it says it rounds.

/** float16 bits -> value. */
export function f16ToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const e = (bits >> 10) & 0x1f, m = bits & 0x3ff;
  if (e === 0x1f) return m ? NaN : sign * Infinity;
  if (e === 0) return sign * m * 2 ** -24;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** bfloat16 bits -> value. */
export function bf16ToNumber(bits: number): number {
  U32[0] = (bits & 0xffff) << 16;
  return F32[0];
}

function roundHalfEven(y: number): number {
  const f = Math.floor(y), d = y - f;
  return d > 0.5 || (d === 0.5 && f % 2 !== 0) ? f + 1 : f;
}

/**
 * A value as the bits of a binary float with `ebits` exponent and `mbits` mantissa bits (IEEE
 * layout, all-ones exponent for infinity/NaN), rounded to nearest even from float64 in one step;
 * values past the largest finite round to infinity.
 */
function encodeIeee(x: number, ebits: number, mbits: number): number {
  const signBit = 1 << (ebits + mbits);
  const expAll = (1 << ebits) - 1;
  if (Number.isNaN(x)) return (expAll << mbits) | (1 << (mbits - 1));
  const sign = x < 0 || Object.is(x, -0) ? signBit : 0;
  const a = Math.abs(x);
  const bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
  if (a >= (2 - 2 ** -(mbits + 1)) * 2 ** bias) return sign | (expAll << mbits);
  if (a < 2 ** emin) return sign | roundHalfEven(a / 2 ** (emin - mbits));  // 2^mbits carries into the exponent
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  else if (2 ** (e + 1) <= a) e++;
  let q = roundHalfEven((a / 2 ** e - 1) * 2 ** mbits);
  if (q === 2 ** mbits) { q = 0; e++; }
  return sign | ((e + bias) << mbits) | q;
}

/** value -> float16 bits (RNE; overflow to infinity). */
export function numberToF16(x: number): number {
  return encodeIeee(x, 5, 10);
}

/** value -> bfloat16 bits (RNE; overflow to infinity). */
export function numberToBf16(x: number): number {
  return encodeIeee(x, 8, 7);
}

function table(decode: (code: number) => number, n = 256): Float64Array {
  const t = new Float64Array(n);
  for (let i = 0; i < n; i++) t[i] = decode(i);
  return t;
}

/** OCP FP8 E4M3 (the `fn` variant: no infinities, S.1111.111 is NaN; 448 the largest). */
export const E4M3_VALUES = table((c) => {
  const sign = c & 0x80 ? -1 : 1, e = (c >> 3) & 0xf, m = c & 7;
  if (e === 0xf && m === 7) return NaN;
  return sign * (e === 0 ? m * 2 ** -9 : (1 + m / 8) * 2 ** (e - 7));
});

/** FP8 E5M2 (IEEE-like: infinities and NaNs). */
export const E5M2_VALUES = table((c) => f16ToNumber(c << 8));

/** OCP E8M0 scale bytes: 2^(b - 127), 0xFF NaN. */
export const E8M0_VALUES = table((c) => (c === 0xff ? NaN : 2 ** (c - 127)));

/** FP4 E2M1 codes (0 to 15). */
export const E2M1_VALUES = table((c) => {
  const sign = c & 8 ? -1 : 1, e = (c >> 1) & 3, m = c & 1;
  return sign * (e === 0 ? m * 0.5 : (1 + m / 2) * 2 ** (e - 1));
}, 16);

/** The E8M0 byte of a power of two 2^k, k in [-127, 127]; undefined for any other value. */
export function e8m0OfPowerOfTwo(v: number): number | undefined {
  if (!(v > 0) || !Number.isFinite(v)) return undefined;
  const k = Math.round(Math.log2(v));
  return k >= -127 && k <= 127 && 2 ** k === v ? k + 127 : undefined;
}

/** Code `i` of `bits` bits from an LSB-first bit stream (MLX's packing, for any bit width). */
export function codeAt(bytes: Uint8Array, bits: number, i: number): number {
  const bit = i * bits, byte = bit >>> 3, shift = bit & 7;
  const word = bytes[byte] | (shift + bits > 8 ? bytes[byte + 1] << 8 : 0);
  return (word >>> shift) & ((1 << bits) - 1);
}

/** `count` codes of `bits` each from an LSB-first bit stream. */
export function unpackBits(bytes: Uint8Array, bits: number, count: number): Uint8Array {
  const out = new Uint8Array(count);
  for (let i = 0; i < count; i++) out[i] = codeAt(bytes, bits, i);
  return out;
}

/** Codes packed LSB-first at `bits` (4 or 8) per element: our affine4/affine8 code plane. */
export function packBits(codes: Uint8Array, bits: 4 | 8): Uint8Array {
  if (bits === 8) return codes;
  const out = new Uint8Array(Math.ceil(codes.length / 2));
  for (let i = 0; i < codes.length; i++) out[i >> 1] |= codes[i] << ((i & 1) * 4);
  return out;
}

/**
 * value -> bfloat16 bits, rounded to nearest even in one step like numberToBf16 but faster: the
 * float32 conversion rounds to odd (truncate, then set the last bit when inexact), which keeps
 * the second rounding, to bfloat16, correct.
 */
export function numberToBf16Fast(x: number): number {
  F32[0] = x;
  let u = U32[0];
  const f = F32[0];
  if (f !== x) {
    if (Number.isNaN(x)) return ((u >>> 16) & 0x8000) | 0x7fc0;
    if (Math.abs(f) > Math.abs(x)) u -= 1;  // the float32 just below |x| (truncation)
    u |= 1;
  }
  if ((u & 0x7f800000) === 0x7f800000) return (u & 0x7fffff) ? ((u >>> 16) | 0x40) & 0xffff : u >>> 16;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}
