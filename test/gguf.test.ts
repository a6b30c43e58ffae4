// GGUF (lib/loaders/gguf): files written with writeGguf and ggml's reference encoders, parsed back
// (every metadata value type), loaded onto the cpu device and compared with ggml's decode in
// float64: bit-exact for the direct mappings (and their dense float32 fallbacks), within the
// reported error for the K-quant conversions. Damaged files: gguf-bad-files.test.ts.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  QuantizedTensor, Tensor, decodeGgml, encodeGgml, loadGgufTensors, open, readGgufInfo,
  writeGguf, type Device, type GgmlDecodable, type GgmlEncodable, type GgufWriteTensor,
} from '../lib/index';
import { halfToNumber, numberToHalf } from '../lib/loaders/gguf/blocks';
import { GGML_BLOCK, GGML_TYPES } from '../lib/loaders/gguf/types';
import { randn, rng } from './helpers/compare';
import { rejects } from './helpers/errors';
import { kvU32, raw } from './helpers/gguf-bytes';

let dev: Device;
let dir: string;
let fileNo = 0;
beforeAll(async () => {
  dev = await open({ backend: 'cpu', threads: 2 });
  dir = mkdtempSync(join(tmpdir(), 'mto-gguf-'));
});
afterAll(async () => {
  await dev.close();
  rmSync(dir, { recursive: true, force: true });
});

const tmp = (name = 'f') => join(dir, `${name}-${fileNo++}.gguf`);

/** got equals want (float32 values): NaN matches NaN, +0 matches -0, everything else is ===. */
function expectSame(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  expect(got.length, `${what} length`).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const g = got[i], w = want[i];
    if (Number.isNaN(w) ? !Number.isNaN(g) : g !== w) expect.fail(`${what}[${i}]: got ${g}, want ${w}`);
  }
}

const fround = (x: Float64Array) => Float32Array.from(x);
const h = (x: number) => numberToHalf(x);
const le16 = (bytes: Uint8Array, o: number, v: number) => { bytes[o] = v & 0xff; bytes[o + 1] = v >> 8; };

async function values(t: Tensor | QuantizedTensor): Promise<Float32Array> {
  if (t instanceof QuantizedTensor) {
    const d = dev.dequantize(t);
    try { return await d.toFloat32(); } finally { d.dispose(); }
  }
  return t.toFloat32();
}

function writeRaw(b: Buffer): string {
  const p = tmp('raw');
  writeFileSync(p, b);
  return p;
}

describe('metadata and tensor table', () => {
  it('every value type round-trips, scalars and arrays; typed arrays for numeric arrays', async () => {
    const path = tmp('meta');
    writeGguf(path, [
      ['general.architecture', { type: 'string', value: 'llama' }],
      ['general.alignment', { type: 'uint32', value: 64 }],
      ['u8', { type: 'uint8', value: 255 }], ['i8', { type: 'int8', value: -128 }],
      ['u16', { type: 'uint16', value: 65535 }], ['i16', { type: 'int16', value: -32768 }],
      ['u32', { type: 'uint32', value: 4294967295 }], ['i32', { type: 'int32', value: -2147483648 }],
      ['f32', { type: 'float32', value: 1.5 }], ['bool.t', { type: 'bool', value: true }], ['bool.f', { type: 'bool', value: false }],
      ['str', { type: 'string', value: 'héllo ✓ \u{1F600}' }], ['empty', { type: 'string', value: '' }],
      ['u64', { type: 'uint64', value: 2n ** 64n - 1n }], ['i64', { type: 'int64', value: -(2n ** 63n) }],
      ['f64', { type: 'float64', value: Math.PI }],
      ['a.u8', { type: 'array', of: 'uint8', value: [0, 1, 255] }],
      ['a.i8', { type: 'array', of: 'int8', value: [-128, 0, 127] }],
      ['a.u16', { type: 'array', of: 'uint16', value: [1, 65535] }],
      ['a.i16', { type: 'array', of: 'int16', value: [-32768, 7] }],
      ['a.u32', { type: 'array', of: 'uint32', value: [4294967295, 3] }],
      ['a.i32', { type: 'array', of: 'int32', value: [-5, 2147483647] }],
      ['a.f32', { type: 'array', of: 'float32', value: [0.25, -1e30, 3] }],
      ['a.bool', { type: 'array', of: 'bool', value: [true, false, true] }],
      ['a.str', { type: 'array', of: 'string', value: ['a', '', 'ß\u0000z'] }],
      ['a.u64', { type: 'array', of: 'uint64', value: [0n, 2n ** 64n - 1n] }],
      ['a.i64', { type: 'array', of: 'int64', value: [-(2n ** 63n), 5n] }],
      ['a.f64', { type: 'array', of: 'float64', value: [Math.E, -0.5] }],
      ['a.empty', { type: 'array', of: 'float32', value: [] }],
      ['a.big', { type: 'array', of: 'float32', value: Float32Array.from({ length: 70000 }, (_, i) => i / 7) }],
    ], [
      { name: 'w', dims: [64, 3], type: 'F32', data: encodeGgml('F32', randn(192, 1)) },
      { name: 'q', dims: [32, 5, 2], type: 'Q8_0', data: encodeGgml('Q8_0', randn(320, 2)) },
    ]);
    const info = await readGgufInfo(path);
    const m = info.metadata;
    expect(info.version).toBe(3);
    expect(info.alignment).toBe(64);
    expect(m.get('general.architecture')).toBe('llama');
    expect(m.get('general.alignment')).toBe(64);
    expect([m.get('u8'), m.get('i8'), m.get('u16'), m.get('i16'), m.get('u32'), m.get('i32'), m.get('f32')])
      .toEqual([255, -128, 65535, -32768, 4294967295, -2147483648, 1.5]);
    expect([m.get('bool.t'), m.get('bool.f'), m.get('str'), m.get('empty')]).toEqual([true, false, 'héllo ✓ \u{1F600}', '']);
    expect([m.get('u64'), m.get('i64'), m.get('f64')]).toEqual([2n ** 64n - 1n, -(2n ** 63n), Math.PI]);
    expect(m.get('a.u8')).toEqual(Uint8Array.from([0, 1, 255]));
    expect(m.get('a.i8')).toEqual(Int8Array.from([-128, 0, 127]));
    expect(m.get('a.u16')).toEqual(Uint16Array.from([1, 65535]));
    expect(m.get('a.i16')).toEqual(Int16Array.from([-32768, 7]));
    expect(m.get('a.u32')).toEqual(Uint32Array.from([4294967295, 3]));
    expect(m.get('a.i32')).toEqual(Int32Array.from([-5, 2147483647]));
    expect(m.get('a.f32')).toEqual(Float32Array.from([0.25, -1e30, 3]));
    expect(m.get('a.bool')).toEqual([true, false, true]);
    expect(m.get('a.str')).toEqual(['a', '', 'ß\u0000z']);
    expect(m.get('a.u64')).toEqual(BigUint64Array.from([0n, 2n ** 64n - 1n]));
    expect(m.get('a.i64')).toEqual(BigInt64Array.from([-(2n ** 63n), 5n]));
    expect(m.get('a.f64')).toEqual(Float64Array.from([Math.E, -0.5]));
    expect(m.get('a.empty')).toEqual(new Float32Array(0));
    const big = m.get('a.big') as Float32Array;
    expect(big).toBeInstanceOf(Float32Array);
    expect(big.length).toBe(70000);
    expect(big[69999]).toBe(Math.fround(69999 / 7));
    expect([...m.keys()].length).toBe(30);

    expect(info.tensors.map((t) => [t.name, t.type, t.dims, t.bytes])).toEqual([
      ['w', 'F32', [64, 3], 768], ['q', 'Q8_0', [32, 5, 2], 340],
    ]);
    expect(info.dataOffset % 64).toBe(0);
    expect(info.tensors[0].offset).toBe(info.dataOffset);
    expect(info.tensors[1].offset).toBe(info.dataOffset + 768);
    // The offsets point at the bytes written.
    const file = readFileSync(path);
    expect(file.subarray(info.tensors[1].offset, info.tensors[1].offset + 340)).toEqual(Buffer.from(encodeGgml('Q8_0', randn(320, 2))));
  });

  it('version 2 files, files without tensors, and the default alignment', async () => {
    const v2 = await readGgufInfo(writeRaw(raw({ version: 2, kvs: [kvU32('x', 7)] })));
    expect(v2.version).toBe(2);
    expect(v2.alignment).toBe(32);
    expect(v2.tensors).toEqual([]);
    expect(v2.metadata.get('x')).toBe(7);
  });
});

describe('ggml block codecs against hand-computed cases', () => {
  it('Q8_0: d = amax / 127, q = round half away from zero of x / d', () => {
    // amax 127 -> d = 1: q is x rounded half away from zero.
    const x = new Float32Array(32);
    x.set([127, -63.5, 0.5, -0.5, 2.5, 1.49, -126.51, 0]);
    const b = encodeGgml('Q8_0', x);
    expect(b.length).toBe(34);
    expect(b[0] | (b[1] << 8)).toBe(0x3c00);  // float16 1.0
    expect(Array.from(new Int8Array(b.buffer, 2, 8))).toEqual([127, -64, 1, -1, 3, 1, -127, 0]);
    // amax 12.7 -> d = 0.1 (float32, stored as float16 0x2E66); q from the float32 d, not the float16 one.
    const y = new Float32Array(32);
    y.set([12.7, -6.35, 1, 0.04, -0.06]);
    const c = encodeGgml('Q8_0', y);
    expect(c[0] | (c[1] << 8)).toBe(0x2e66);
    expect(Array.from(new Int8Array(c.buffer, 2, 5))).toEqual([127, -64, 10, 0, -1]);
    // An independent float64 reference over random blocks (no value within 1e-4 of a rounding tie).
    const r = randn(32 * 64, 11, 3);
    const e = encodeGgml('Q8_0', r);
    for (let blk = 0; blk < 64; blk++) {
      const v = r.subarray(32 * blk, 32 * blk + 32);
      const amax = Math.max(...Array.from(v, Math.abs));
      const d = amax / 127;
      expect(e[34 * blk] | (e[34 * blk + 1] << 8), `block ${blk} d`).toBe(numberToHalf(Math.fround(d)));
      for (let j = 0; j < 32; j++) {
        const t = v[j] / d;
        if (Math.abs(Math.abs(t) % 1 - 0.5) < 1e-4) continue;
        expect((e[34 * blk + 2 + j] << 24) >> 24, `block ${blk}[${j}]`).toBe(Math.sign(t) * Math.round(Math.abs(t)) + 0);
      }
    }
  });

  it('Q4_0: d = (the value of largest magnitude) / -8, q = min(15, trunc(x / d + 8.5)), j and j + 16 in one byte', () => {
    const x = new Float32Array(32);
    // max |x| is 16 at -16 -> d = 2: q = trunc(x / 2 + 8.5), capped at 15.
    x.set([-16, 14, 15, 1, -1, 0, 13.9, 16, 3]);
    x[16] = -3; x[17] = 0.999; x[31] = 7;
    const b = encodeGgml('Q4_0', x);
    expect(b[0] | (b[1] << 8)).toBe(0x4000);  // float16 2.0
    const q = (j: number) => (j < 16 ? b[2 + j] & 0xf : b[2 + j - 16] >> 4);
    // x / 2 + 8.5 truncated: -16 -> 0.5 -> 0; 14 -> 15.5 -> 15; 15 -> 16 -> 15 (cap); 1 -> 9; -1 -> 8; 0 -> 8;
    // 13.9 -> 15.45 -> 15; 16 -> 16.5 -> 15 (cap); 3 -> 10; -3 -> 7; 0.999 -> 8.9995 -> 8; 7 -> 12.
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 17, 31].map(q)).toEqual([0, 15, 15, 9, 8, 8, 15, 15, 10, 7, 8, 12]);
    // The first of equal magnitudes decides the sign of d: 8 then -8 -> d = -1.
    const y = new Float32Array(32);
    y[3] = 8; y[4] = -8; y[5] = 1;
    const c = encodeGgml('Q4_0', y);
    expect(c[0] | (c[1] << 8)).toBe(0xbc00);  // float16 -1.0
    expect([c[2 + 3] & 0xf, c[2 + 4] & 0xf, c[2 + 5] & 0xf]).toEqual([0, 15, 7]);
    // Independent float64 reference over random blocks (no value near a truncation edge).
    const r = randn(32 * 64, 12, 2);
    const e = encodeGgml('Q4_0', r);
    for (let blk = 0; blk < 64; blk++) {
      const v = Array.from(r.subarray(32 * blk, 32 * blk + 32));
      let max = 0;
      for (const a of v) if (Math.abs(a) > Math.abs(max)) max = a;
      const d = max / -8;
      expect(e[18 * blk] | (e[18 * blk + 1] << 8)).toBe(numberToHalf(d));
      for (let j = 0; j < 32; j++) {
        const t = v[j] / d + 8.5;
        if (Math.abs(t - Math.round(t)) < 1e-4) continue;
        const want = Math.min(15, Math.trunc(t));
        const got = j < 16 ? e[18 * blk + 2 + j] & 0xf : e[18 * blk + 2 + j - 16] >> 4;
        expect(got, `block ${blk}[${j}]`).toBe(want);
      }
    }
  });

  it('Q4_1, MXFP4, F16 and BF16 on hand-computed cases', () => {
    const x = new Float32Array(32).fill(0);
    x.set([-1, 14, 0.49, 0.51, 6, -0.6]);
    // min -1, max 14 -> d = 1, m = -1: q = trunc(x + 1 + 0.5).
    const b = encodeGgml('Q4_1', x);
    expect([b[0] | (b[1] << 8), b[2] | (b[3] << 8)]).toEqual([0x3c00, 0xbc00]);
    expect([0, 1, 2, 3, 4, 5, 6].map((j) => b[4 + j] & 0xf)).toEqual([0, 15, 1, 2, 7, 0, 1]);

    // amax 6 -> e = floor(log2 6) - 2 + 127 = 127, ggml's half scale 2^-1: the values are the FP4
    // grid 0, 0.5, 1, 1.5, 2, 3, 4, 6; ties go to the first index (5 -> 4; -0.25 -> 0; 0.75 -> 0.5).
    const y = new Float32Array(32);
    y.set([6, 5, -0.25, 0.75, -6, 2.4, -3.1]);
    y[16] = 1;
    const c = encodeGgml('MXFP4', y);
    expect(c[0]).toBe(127);
    const q = (j: number) => (j < 16 ? c[1 + j] & 0xf : c[1 + j - 16] >> 4);
    expect([0, 1, 2, 3, 4, 5, 6, 16].map(q)).toEqual([7, 6, 0, 1, 15, 4, 13, 2]);
    expect(c[1 + 0] >> 4).toBe(2);  // element 16 shares byte 0 with element 0
    // amax 0 -> e = 0.
    expect(encodeGgml('MXFP4', new Float32Array(32))[0]).toBe(0);

    const f = Float32Array.from([1 / 3, 65504, 65519, 65520, -(2 ** -25), 3 * 2 ** -26, 2 ** -14, NaN, -Infinity]);
    expect(Array.from(new Uint16Array(encodeGgml('F16', f).buffer)))
      .toEqual([0x3555, 0x7bff, 0x7bff, 0x7c00, 0x8000, 0x0001, 0x0400, 0x7e00, 0xfc00]);
    const g = Float32Array.from([1 / 3, 1 + 2 ** -8, 1 + 3 * 2 ** -8, NaN, -Infinity]);
    expect(Array.from(new Uint16Array(encodeGgml('BF16', g).buffer))).toEqual([0x3eab, 0x3f80, 0x3f82, 0x7fc0, 0xff80]);
  });

  it('equal to ggml itself: SHA-256 digests of ggml-quants.c\'s output on these inputs', () => {
    // Digests of the output of ggml's quantize_row_{q8_0,q4_0,q4_1,mxfp4}_ref and
    // dequantize_row_* (ggml-org/ggml d99724f, gcc 12 -O1, x86-64), run once on the inputs made
    // here; float32 NaNs made canonical (0x7FC00000) before hashing, as ggml's NaN payloads vary.
    const digest = (b: Uint8Array) => createHash('sha256').update(b).digest('hex').slice(0, 16);
    const encoded: Record<string, string[]> = {
      Q8_0: ['b7df107b2d9154f8', '5569ba5de2110ef0', '4e26a453b7547863'],
      Q4_0: ['303c381db84fbeaa', '3cae42fb3bcdfa00', '9523a7d25b2df40d'],
      Q4_1: ['10e83954cc59fff9', 'bffd298dc9962f59', 'd8b5d5ee528ab53f'],
      MXFP4: ['03bc262fc3d6a9a1', 'ae0f0c27af90af1b', '2996489e887e4daa'],
    };
    [1e-3, 1, 1e4].forEach((scale, k) => {
      const x = randn(32 * 128, 500 + k, scale);
      for (let i = 0; i < x.length; i += 61) x[i] = Math.round(x[i] / scale * 4) / 4 * scale;  // ties
      for (const [type, want] of Object.entries(encoded)) {
        expect(digest(encodeGgml(type as GgmlEncodable, x)), `${type} at scale ${scale}`).toBe(want[k]);
      }
    });
    // Random bytes (NaN, infinite and subnormal scales included), decoded.
    const decoded: [GgmlDecodable, number, number, string][] = [
      ['Q8_0', 256, 700, '6e9d8c47af3aa45b'], ['Q4_0', 256, 700, 'be7dd79527881f15'],
      ['Q4_1', 256, 700, '4155e992eea0b319'], ['MXFP4', 256, 700, '367ab012bbc4f016'],
      ['Q4_K', 32, 600, 'df3b7094601f82b5'], ['Q5_K', 32, 600, '66ee30bc8f71235d'], ['Q6_K', 32, 600, '87b81d19002cccc8'],
    ];
    for (const [type, blocks, seed, want] of decoded) {
      const size = GGML_BLOCK[type].bytes;
      const r = rng(seed + size);
      const bytes = Uint8Array.from({ length: blocks * size }, () => Math.floor(r() * 256));
      const f = Float32Array.from(decodeGgml(type, bytes));
      const u = new Uint32Array(f.buffer);
      for (let i = 0; i < f.length; i++) if (Number.isNaN(f[i])) u[i] = 0x7fc00000;
      expect(digest(new Uint8Array(f.buffer)), type).toBe(want);
    }
  });

  it('numberToHalf rounds any number to the nearest float16 (ties to even), as a search of the float16 values finds', () => {
    // The finite non-negative float16 values in order are the bit patterns 0 to 0x7BFF.
    const nearest = (x: number): number => {
      const a = Math.abs(x), sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
      if (a >= 65520) return sign | 0x7c00;
      let lo = 0, hi = 0x7bff;
      while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (halfToNumber(mid) <= a) lo = mid; else hi = mid; }
      const dl = a - halfToNumber(lo), dh = halfToNumber(hi) - a;
      return sign | (dl < dh ? lo : dh < dl ? hi : (lo & 1 ? hi : lo));
    };
    const r = rng(77);
    const xs: number[] = [0, -0, 65504, 65519.99, 65520, 1e-10, 2 ** -24, 2 ** -25, 2 ** -25 * (1 + 2 ** -40), 3 * 2 ** -25, 1 + 2 ** -11, 1 + 2 ** -11 + 2 ** -40, 1 + 3 * 2 ** -11];
    for (let i = 0; i < 20000; i++) {
      const e = Math.floor(r() * 44) - 28;
      let x = (r() < 0.5 ? -1 : 1) * (1 + r()) * 2 ** e;
      if (i % 4 === 0) x = halfToNumber(Math.floor(r() * 0x7bff)) + (r() < 0.5 ? 1 : -1) * 2 ** (e - 11);  // near float16 values and ties
      xs.push(x);
    }
    for (const x of xs) expect(numberToHalf(x), `${x}`).toBe(nearest(x));
  });

  it('K-quant decoders follow the block layouts (hand-set blocks)', () => {
    // Q4_K: d = 1, dmin = 0.5; sub-block j has scale j + 1 and min j (6-bit packing of
    // get_scale_min_k4); codes: element 32j + l is l % 16 in its nibble.
    const q4 = new Uint8Array(144);
    le16(q4, 0, h(1)); le16(q4, 2, h(0.5));
    const sc = [1, 2, 3, 4, 5, 6, 7, 8], mn = [0, 1, 2, 3, 4, 5, 6, 7];
    for (let j = 0; j < 4; j++) { q4[4 + j] = sc[j]; q4[8 + j] = mn[j]; }
    for (let j = 4; j < 8; j++) { q4[8 + j] = (sc[j] & 0xf) | ((mn[j] & 0xf) << 4); q4[4 + j - 4] |= (sc[j] >> 4) << 6; q4[4 + j] |= (mn[j] >> 4) << 6; }
    for (let c = 0; c < 4; c++) for (let l = 0; l < 32; l++) q4[16 + 32 * c + l] = (l % 16) | ((15 - (l % 16)) << 4);
    const v4 = decodeGgml('Q4_K', q4);
    for (let j = 0; j < 8; j++) {
      for (const l of [0, 5, 31]) {
        const code = j % 2 === 0 ? l % 16 : 15 - (l % 16);
        expect(v4[32 * j + l], `Q4_K[${32 * j + l}]`).toBe(sc[j] * code - 0.5 * mn[j]);
      }
    }
    // Q5_K adds bit j of qh[l] as the code's bit 4.
    const q5 = new Uint8Array(176);
    q5.set(q4.subarray(0, 16));
    q5.set(q4.subarray(16), 48);
    for (let l = 0; l < 32; l++) q5[16 + l] = l % 2 ? 0b10100101 : 0;
    const v5 = decodeGgml('Q5_K', q5);
    for (let j = 0; j < 8; j++) {
      for (const l of [0, 1, 30, 31]) {
        const code = (j % 2 === 0 ? l % 16 : 15 - (l % 16)) + (l % 2 && (0b10100101 >> j) & 1 ? 16 : 0);
        expect(v5[32 * j + l], `Q5_K[${32 * j + l}]`).toBe(sc[j] * code - 0.5 * mn[j]);
      }
    }
    // Q6_K: d = 0.25, sub-block k (16 elements) has scale k - 8; element e's 6-bit code is e % 64,
    // its low 4 bits in ql and high 2 in qh as dequantize_row_q6_K reads them.
    const q6 = new Uint8Array(210);
    le16(q6, 208, h(0.25));
    for (let k = 0; k < 16; k++) q6[192 + k] = (k - 8) & 0xff;
    for (let e = 0; e < 256; e++) {
      const code = e % 64, half = e >> 7, i = e & 127, quarter = i >> 5, l = i & 31;
      const qlAt = half * 64 + l + (quarter & 1 ? 32 : 0);
      q6[qlAt] |= quarter < 2 ? code & 0xf : (code & 0xf) << 4;
      q6[128 + half * 32 + l] |= (code >> 4) << (2 * quarter);
    }
    const v6 = decodeGgml('Q6_K', q6);
    for (let e = 0; e < 256; e++) expect(v6[e], `Q6_K[${e}]`).toBe(0.25 * ((e >> 4) - 8) * ((e % 64) - 32));
  });
});

/** Writes the tensors, loads them, and checks every one against ggml's decode (fround of float64). */
async function loadAndCompare(tensors: GgufWriteTensor[], expectFormat: Record<string, string>) {
  const path = tmp('load');
  writeGguf(path, [['general.architecture', { type: 'string', value: 'test' }]], tensors);
  const info = await readGgufInfo(path);
  const loaded = await loadGgufTensors(dev, info, path);
  for (const t of tensors) {
    const got = loaded.get(t.name)!;
    expect(got, t.name).toBeDefined();
    expect(got.shape, t.name).toEqual([...t.dims].reverse());
    const kind = got instanceof QuantizedTensor ? `${got.format}/${got.blockSize}` : got.dtype;
    expect(kind, t.name).toBe(expectFormat[t.name]);
    const bytes = t.data as Uint8Array;
    expectSame(await values(got), fround(decodeGgml(t.type as GgmlDecodable, bytes)), t.name);
  }
  return loaded;
}

describe('loading: the direct mappings are exact', () => {
  it('F32, F16, BF16 dense with the bits as they are; Q8_0, Q4_0, Q4_1, MXFP4 quantized; odd row counts, ranks 1 to 4', async () => {
    const kinds: Record<GgmlEncodable, string> = {
      F32: 'float32', F16: 'float16', BF16: 'bfloat16', Q8_0: 'affine8/32', Q4_0: 'affine4/32', Q4_1: 'affine4/32', MXFP4: 'mxfp4/32',
    };
    const shapes = [[64, 5], [32], [96, 3, 1], [32, 1, 3, 2], [256, 7]];
    const tensors: GgufWriteTensor[] = [];
    const expectFormat: Record<string, string> = {};
    let seed = 100;
    for (const type of Object.keys(kinds) as GgmlEncodable[]) {
      for (const dims of shapes) {
        const n = dims.reduce((a, b) => a * b, 1);
        const v = randn(n, seed++, seed % 3 === 0 ? 0.01 : 4);
        if (type === 'F32' || type === 'F16' || type === 'BF16') v.set([NaN, Infinity, -0, 1e-8, 70000, -3e38].slice(0, Math.min(6, n)));
        const name = `${type}.${dims.join('x')}`;
        tensors.push({ name, dims, type, data: encodeGgml(type, v) });
        expectFormat[name] = kinds[type];
      }
    }
    const loaded = await loadAndCompare(tensors, expectFormat);
    expect(loaded.conversions).toEqual([]);
    // Dense float16/bfloat16 keep the file's bits.
    for (const name of ['F16.64x5', 'BF16.64x5']) {
      const t = loaded.get(name) as Tensor;
      const want = new Uint16Array((tensors.find((x) => x.name === name)!.data as Uint8Array).slice().buffer);
      expect(await t.data()).toEqual(want);
    }
    for (const t of loaded.values()) t.dispose();
  });

  it('I32 loads as an int32 tensor', async () => {
    const ids = Int32Array.from([0, -1, 2147483647, -2147483648, 7, 9]);
    const path = tmp('i32');
    writeGguf(path, [], [{ name: 'ids', dims: [3, 2], type: 'I32', data: new Uint8Array(ids.buffer) }]);
    const loaded = await loadGgufTensors(dev, await readGgufInfo(path), path);
    const t = loaded.get('ids') as Tensor;
    expect([t.dtype, t.shape]).toEqual(['int32', [2, 3]]);
    expect(await t.data()).toEqual(ids);
  });

  it('special blocks: NaN scales decode to NaN, -0 and subnormal scales, the largest bias that fits, q = -128, E8M0 0 and 254', async () => {
    const q8 = encodeGgml('Q8_0', randn(32 * 6, 7));
    le16(q8, 0, 0x7e00);  // NaN: the whole block is NaN
    le16(q8, 34, 0x8000);  // -0
    le16(q8, 68, 0x0001);  // the smallest subnormal
    le16(q8, 102, h(511.75));  // bias -65504: the largest that fits float16
    q8[136 + 2] = 0x80;  // q = -128
    le16(q8, 170, 0xfc01);  // a NaN with the sign set
    const q40 = encodeGgml('Q4_0', randn(32 * 4, 8));
    le16(q40, 0, 0xfe00);
    le16(q40, 18, h(-8188));  // bias 65504
    le16(q40, 36, 0x83ff);
    const q41 = encodeGgml('Q4_1', randn(32 * 4, 9));
    le16(q41, 0, 0x7e00);  // d NaN: all NaN
    le16(q41, 20 + 2, 0x7e00);  // m NaN: all NaN
    le16(q41, 40, h(65504)); le16(q41, 42, h(-65504));
    const mx = encodeGgml('MXFP4', randn(32 * 3, 10));
    mx[0] = 0; mx[17] = 254; mx[34] = 1;
    const loaded = await loadAndCompare([
      { name: 'q8', dims: [64, 3], type: 'Q8_0', data: q8 },
      { name: 'q40', dims: [128], type: 'Q4_0', data: q40 },
      { name: 'q41', dims: [32, 4], type: 'Q4_1', data: q41 },
      { name: 'mx', dims: [96], type: 'MXFP4', data: mx },
    ], { q8: 'affine8/32', q40: 'affine4/32', q41: 'affine4/32', mx: 'mxfp4/32' });
    expect(loaded.conversions).toEqual([]);
    const v = await values(loaded.get('q8')!);
    expect(v.subarray(0, 32).every(Number.isNaN)).toBe(true);
    expect(Number.isNaN(v[32])).toBe(false);
    const m = await values(loaded.get('mx')!);
    expect(m.subarray(32, 64).some((x) => x === Infinity || x === -Infinity)).toBe(true);  // 254: 6 * 2^127 overflows float32, in ggml too
  });

  it('blocks the direct mapping cannot hold load as dense float32 with ggml\'s values, and are reported', async () => {
    const q8 = encodeGgml('Q8_0', randn(64, 20));
    le16(q8, 34, h(512));  // -128 * 512 = -65536 overflows float16
    const q8inf = encodeGgml('Q8_0', randn(32, 21));
    le16(q8inf, 0, 0x7c00);
    const q40 = encodeGgml('Q4_0', randn(64, 22));
    le16(q40, 18, h(-8192));  // bias 65536
    const q41 = encodeGgml('Q4_1', randn(32, 23));
    le16(q41, 2, 0xfc00);  // m = -inf
    const mx = encodeGgml('MXFP4', randn(64, 24, 4));
    mx[17] = 0xff;  // ggml: 2^127 per unit (+-inf in float32 past +-0.5), where our mxfp4 would be NaN
    const loaded = await loadAndCompare([
      { name: 'q8', dims: [32, 2], type: 'Q8_0', data: q8 },
      { name: 'q8inf', dims: [32], type: 'Q8_0', data: q8inf },
      { name: 'q40', dims: [64], type: 'Q4_0', data: q40 },
      { name: 'q41', dims: [32], type: 'Q4_1', data: q41 },
      { name: 'mx', dims: [32, 2], type: 'MXFP4', data: mx },
    ], { q8: 'float32', q8inf: 'float32', q40: 'float32', q41: 'float32', mx: 'float32' });
    expect(loaded.conversions.map((c) => [c.tensor, c.type, c.to, c.exact])).toEqual([
      ['q8', 'Q8_0', 'float32', true], ['q8inf', 'Q8_0', 'float32', true], ['q40', 'Q4_0', 'float32', true],
      ['q41', 'Q4_1', 'float32', true], ['mx', 'MXFP4', 'float32', true],
    ]);
    expect(loaded.conversions[0].note).toMatch(/511\.75/);
    expect(loaded.conversions[4].note).toMatch(/0xFF/);
    const m = await values(loaded.get('mx')!);
    const second = m.subarray(32, 64);
    const mxCodes = Array.from({ length: 32 }, (_, j) => (j < 16 ? mx[18 + j] & 0xf : mx[18 + j - 16] >> 4));
    mxCodes.forEach((c, j) => {
      const mag = c & 7;
      const want = mag === 0 ? 0 : mag === 1 ? 2 ** 127 : Infinity;
      expect(Math.abs(second[j]), `mx[${32 + j}] code ${c}`).toBe(want);
    });
  });
});

/** Random K-quant blocks: random bytes, with realistic float16 super-block scales. */
function randomKBlocks(type: 'Q4_K' | 'Q5_K' | 'Q6_K', blocks: number, seed: number): Uint8Array {
  const r = rng(seed);
  const { bytes } = GGML_BLOCK[type];
  const out = Uint8Array.from({ length: blocks * bytes }, () => Math.floor(r() * 256));
  for (let b = 0; b < blocks; b++) {
    if (type === 'Q6_K') {
      le16(out, b * bytes + 208, h((0.5 + r()) * 2e-4));
    } else {
      le16(out, b * bytes, h((0.5 + r()) * 1e-3));
      le16(out, b * bytes + 2, h((0.5 + r()) * 2e-3));
    }
  }
  return out;
}

describe('loading: K-quant conversions', () => {
  it('Q4_K -> affine4, Q5_K -> affine8, Q6_K -> affine8 group 32: the dequantized values are within the reported error of ggml\'s float64 decode', async () => {
    const tensors: GgufWriteTensor[] = [
      { name: 'q4k', dims: [512, 5], type: 'Q4_K', data: randomKBlocks('Q4_K', 10, 1) },
      { name: 'q5k', dims: [256, 3, 2], type: 'Q5_K', data: randomKBlocks('Q5_K', 6, 2) },
      { name: 'q6k', dims: [768, 3], type: 'Q6_K', data: randomKBlocks('Q6_K', 9, 3) },
    ];
    const path = tmp('kq');
    writeGguf(path, [], tensors);
    const loaded = await loadGgufTensors(dev, await readGgufInfo(path), path);
    const formats = { q4k: 'affine4', q5k: 'affine8', q6k: 'affine8' } as Record<string, string>;
    expect(loaded.conversions.map((c) => c.tensor)).toEqual(['q4k', 'q5k', 'q6k']);
    for (const c of loaded.conversions) {
      const t = tensors.find((x) => x.name === c.tensor)!;
      const q = loaded.get(c.tensor) as QuantizedTensor;
      expect([q.format, q.blockSize, c.to]).toEqual([formats[c.tensor], 32, formats[c.tensor]]);
      const ref = decodeGgml(t.type as GgmlDecodable, t.data as Uint8Array);
      const got = await values(q);
      let max = 0, e2 = 0, r2 = 0;
      for (let i = 0; i < ref.length; i++) {
        const e = Math.abs(got[i] - ref[i]);
        max = Math.max(max, e);
        e2 += e * e;
        r2 += ref[i] * ref[i];
      }
      // The report is what the device gives back, measured.
      expect(c.maxAbsError, c.tensor).toBe(max);
      expect(c.relRmsError, c.tensor).toBeCloseTo(Math.sqrt(e2 / r2), 12);
      expect(c.exact, c.tensor).toBe(false);
      console.log(`${c.tensor} (${c.type} -> ${c.to}): max abs error ${c.maxAbsError.toExponential(3)}, relative RMS ${c.relRmsError.toExponential(3)}; ${c.note}`);
    }
    const byName = Object.fromEntries(loaded.conversions.map((c) => [c.tensor, c]));
    // Q4_K/Q5_K keep ggml's codes: only the float16 rounding of the sub-block scale and bias.
    expect(byName.q4k.relRmsError).toBeLessThan(2e-4);
    expect(byName.q5k.relRmsError).toBeLessThan(2e-4);
    // Q6_K re-quantizes to 8 bits: a step of range/255 instead of ggml's range/63.
    expect(byName.q6k.relRmsError).toBeLessThan(1e-2);
  });

  it('groups that fit exactly are exact: integer scales, equal Q6_K sub-block scales', async () => {
    const q4 = randomKBlocks('Q4_K', 2, 5);
    le16(q4, 0, h(0.5)); le16(q4, 2, h(0.25));
    le16(q4, 144, h(2)); le16(q4, 146, h(1));
    const q6 = randomKBlocks('Q6_K', 2, 6);
    for (let b = 0; b < 2; b++) {
      le16(q6, 210 * b + 208, h(0.125));
      for (let k = 0; k < 16; k++) q6[210 * b + 192 + k] = (k >> 1) * 3 - 7;  // the two halves of each group alike
    }
    const tensors: GgufWriteTensor[] = [
      { name: 'q4k', dims: [256, 2], type: 'Q4_K', data: q4 },
      { name: 'q6k', dims: [512], type: 'Q6_K', data: q6 },
    ];
    const path = tmp('kq-exact');
    writeGguf(path, [], tensors);
    const loaded = await loadGgufTensors(dev, await readGgufInfo(path), path);
    for (const t of tensors) {
      const c = loaded.conversions.find((x) => x.tensor === t.name)!;
      expect([c.exact, c.maxAbsError, c.relRmsError], t.name).toEqual([true, 0, 0]);
      expectSame(await values(loaded.get(t.name)!), fround(decodeGgml(t.type as GgmlDecodable, t.data as Uint8Array)), t.name);
    }
  });

  it('a K-quant block whose scales overflow float16 loads as dense float32', async () => {
    const q4 = randomKBlocks('Q4_K', 1, 7);
    le16(q4, 0, h(60000));
    q4[4] = 63;  // sub-block 0 scale 63: 60000 * 63 > 65504
    const path = tmp('kq-big');
    writeGguf(path, [], [{ name: 'big', dims: [256], type: 'Q4_K', data: q4 }]);
    const loaded = await loadGgufTensors(dev, await readGgufInfo(path), path);
    expect((loaded.get('big') as Tensor).dtype).toBe('float32');
    expect(loaded.conversions[0]).toMatchObject({ tensor: 'big', to: 'float32', exact: true });
    expectSame(await values(loaded.get('big')!), fround(decodeGgml('Q4_K', q4)), 'big');
  });
});

describe('loading: progress, filter, unsupported types', () => {
  it('progress counts the bytes read up to the total; filter picks tensors', async () => {
    const path = tmp('progress');
    const big = randn(4096 * 600, 3);
    writeGguf(path, [], [
      { name: 'a', dims: [4096, 600], type: 'F32', data: encodeGgml('F32', big) },
      { name: 'b', dims: [4096, 600], type: 'Q8_0', data: encodeGgml('Q8_0', big) },
      { name: 'c', dims: [32], type: 'F16', data: encodeGgml('F16', randn(32, 4)) },
    ]);
    const info = await readGgufInfo(path);
    const seen: { bytesRead: number; totalBytes: number; tensor: string }[] = [];
    const loaded = await loadGgufTensors(dev, info, path, { onProgress: (p) => seen.push(p), filter: (t) => t.name !== 'c' });
    expect([...loaded.keys()]).toEqual(['a', 'b']);
    const total = info.tensors[0].bytes + info.tensors[1].bytes;
    expect(seen.every((p) => p.totalBytes === total)).toBe(true);
    expect(seen.length).toBeGreaterThan(2);
    for (let i = 1; i < seen.length; i++) expect(seen[i].bytesRead).toBeGreaterThan(seen[i - 1].bytesRead);
    expect(seen.at(-1)!.bytesRead).toBe(total);
    expect(seen.some((p) => p.tensor === 'a') && seen.some((p) => p.tensor === 'b')).toBe(true);
    for (const t of loaded.values()) t.dispose();
  });

  it('a type with no mapping answers E_FORMAT naming the type and the tensor, before reading anything', async () => {
    const path = tmp('unsupported');
    writeGguf(path, [], [
      { name: 'ok', dims: [32], type: 'F32', data: encodeGgml('F32', randn(32, 1)) },
      { name: 'odd', dims: [64], type: 'Q5_0', data: new Uint8Array(44) },
    ]);
    const info = await readGgufInfo(path);
    let progressed = false;
    await rejects(loadGgufTensors(dev, info, path, { onProgress: () => { progressed = true; } }), 'E_FORMAT', /'odd'/, /Q5_0/);
    expect(progressed).toBe(false);
    // Without it the rest loads.
    const ok = await loadGgufTensors(dev, info, path, { filter: (t) => t.name === 'ok' });
    expect([...ok.keys()]).toEqual(['ok']);
  });
});
