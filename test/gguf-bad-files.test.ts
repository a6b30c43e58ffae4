// GGUF files that are damaged or hostile answer E_FORMAT naming what is wrong, quickly and before
// any allocation sized from the file; truncation at every point and a seeded byte-flip fuzz never
// throw anything but a TensorOpsError.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeGgml, loadGgufTensors, open, readGgufInfo, writeGguf, TensorOpsError, type Device } from '../lib/index';
import { GGML_TYPES } from '../lib/loaders/gguf/types';
import { randn, rng } from './helpers/compare';
import { rejects } from './helpers/errors';
import { kvU32, raw, str, tinfo, u32, u64 } from './helpers/gguf-bytes';

let dev: Device;
let dir: string;
let fileNo = 0;
beforeAll(async () => {
  dev = await open({ backend: 'cpu', threads: 2 });
  dir = mkdtempSync(join(tmpdir(), 'mto-gguf-bad-'));
});
afterAll(async () => {
  await dev.close();
  rmSync(dir, { recursive: true, force: true });
});

const tmp = (name = 'f') => join(dir, `${name}-${fileNo++}.gguf`);
function writeRaw(b: Buffer): string {
  const p = tmp('raw');
  writeFileSync(p, b);
  return p;
}

describe('bad files answer E_FORMAT, quickly', () => {
  /** A small valid file: metadata of several types, three tensors. */
  function sample(): { path: string; bytes: Buffer } {
    const path = tmp('sample');
    writeGguf(path, [
      ['general.architecture', { type: 'string', value: 'llama' }],
      ['n', { type: 'uint32', value: 3 }],
      ['tokens', { type: 'array', of: 'string', value: ['a', 'bc', 'def'] }],
      ['scores', { type: 'array', of: 'float32', value: [1, 2, 3] }],
      ['b', { type: 'bool', value: true }],
    ], [
      { name: 'x', dims: [32, 2], type: 'Q8_0', data: encodeGgml('Q8_0', randn(64, 1)) },
      { name: 'y', dims: [32], type: 'MXFP4', data: encodeGgml('MXFP4', randn(32, 2)) },
      { name: 'z', dims: [8], type: 'F32', data: encodeGgml('F32', randn(8, 3)) },
    ]);
    return { path, bytes: readFileSync(path) };
  }

  async function timedReject(bytes: Buffer, ...mentions: (string | RegExp)[]): Promise<TensorOpsError> {
    const heap = process.memoryUsage().heapUsed;
    const t0 = performance.now();
    const e = await rejects(readGgufInfo(writeRaw(bytes)), 'E_FORMAT', ...mentions);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(process.memoryUsage().heapUsed - heap).toBeLessThan(64 << 20);
    return e;
  }

  it('truncated at every byte of the header, metadata and table, and at many places in the data', async () => {
    const { bytes, path } = sample();
    const info = await readGgufInfo(path);
    const end = Math.max(...info.tensors.map((t) => t.offset + t.bytes));
    const cuts = [...Array(info.dataOffset).keys(), ...Array.from({ length: 40 }, (_, i) => info.dataOffset + Math.floor((i * (end - info.dataOffset)) / 40)), end - 1];
    for (const cut of cuts) {
      const p = join(dir, 'cut.gguf');
      writeFileSync(p, bytes.subarray(0, cut));
      const e = await rejects(readGgufInfo(p), 'E_FORMAT');
      expect(e.message, `cut at ${cut}`).toMatch(/cut\.gguf/);
    }
    // Truncated after it was parsed: the loader says so.
    writeFileSync(join(dir, 'later.gguf'), bytes);
    const later = await readGgufInfo(join(dir, 'later.gguf'));
    writeFileSync(join(dir, 'later.gguf'), bytes.subarray(0, end - 10));
    await rejects(loadGgufTensors(dev, later, join(dir, 'later.gguf')), 'E_FORMAT', /'z'/, /past the end/);
  });

  it('files that cannot be read answer E_LOAD; bad options E_ARG', async () => {
    await rejects(readGgufInfo(join(dir, 'missing.gguf')), 'E_LOAD', /missing\.gguf/);
    await rejects(readGgufInfo(dir), 'E_LOAD', /not a regular file/);
    const { path } = sample();
    const info = await readGgufInfo(path);
    await rejects(loadGgufTensors(dev, info, path, { progress: () => 0 } as never), 'E_ARG', /options\.progress/);
    await rejects(loadGgufTensors(dev, info, path, { filter: 'x' } as never), 'E_ARG', /options\.filter/);
  });

  it('wrong magic, unsupported versions', async () => {
    await timedReject(raw({ magic: 'GGML' }), /not a GGUF file/, /'GGML'/);
    await timedReject(raw({ magic: '\x00\x01GU' }), /not a GGUF file/);
    await timedReject(raw({ version: 1 }), /version 1/, /v1/);
    await timedReject(raw({ version: 4 }), /version 4/);
    await timedReject(raw({ version: 0x03000000 }), /big-endian/);
    await timedReject(Buffer.from('GGUF'), /the version/, /truncated/);
    await timedReject(Buffer.alloc(0), /magic/);
  });

  it('counts, lengths and dims larger than the file could hold; unknown types', async () => {
    await timedReject(raw({ nTensors: 2n ** 63n }), /tensors/);
    await timedReject(raw({ nKv: 2n ** 64n - 1n }), /metadata entries/);
    await timedReject(raw({ nKv: 1n, kvs: [Buffer.concat([u64(2n ** 62n), Buffer.from('k')])] }), /length 4611686018427387904/, /past the end/);
    await timedReject(raw({ kvs: [Buffer.concat([str('k'), u32(9), u32(10), u64(2n ** 61n)])] }), /array 'k'/, /2305843009213693952/);
    await timedReject(raw({ kvs: [Buffer.concat([str('k'), u32(9), u32(8), u64(1000000), str('a')])] }), /array 'k'/, /1000000/);
    await timedReject(raw({ kvs: [Buffer.concat([str('k'), u32(8), u64(2n ** 40n)])] }), /key 'k'/, /length 1099511627776/);
    await timedReject(raw({ kvs: [Buffer.concat([str('k'), u32(13), u32(0)])] }), /key 'k'/, /value type 13/);
    await timedReject(raw({ kvs: [Buffer.concat([str('k'), u32(9), u32(9), u32(4), u64(1)])] }), /array of arrays/);
    await timedReject(raw({ kvs: [Buffer.concat([str('k'), u32(7), Buffer.from([2])])] }), /bool/, /byte 2/);
    await timedReject(raw({ kvs: [kvU32('k', 1), kvU32('k', 2)] }), /'k' appears twice/);
    await timedReject(raw({ kvs: [kvU32('', 1)] }), /empty key/);
    await timedReject(raw({ kvs: [kvU32('general.alignment', 48)] }), /alignment is 48/, /power of two/);
    await timedReject(raw({ kvs: [kvU32('general.alignment', 0)] }), /alignment is 0/);
    await timedReject(raw({ kvs: [Buffer.concat([str('general.alignment'), u32(10), u64(32)])] }), /uint32/);
    const data = Buffer.alloc(64);
    await timedReject(raw({ tensors: [tinfo('t', [], 0, 0)], data }), /'t' has 0 dimensions/);
    await timedReject(raw({ tensors: [tinfo('t', [1, 1, 1, 1, 1], 0, 0)], data }), /'t' has 5 dimensions/);
    await timedReject(raw({ tensors: [tinfo('t', [4, 0], 0, 0)], data }), /'t' has dimension 1 of 0/);
    await timedReject(raw({ tensors: [tinfo('t', [2n ** 60n], 0, 0)], data }), /'t' has dimension 0 of 1152921504606846976/);
    await timedReject(raw({ tensors: [tinfo('t', [2 ** 40, 2 ** 40], 0, 0)], data }), /'t'/, /2\^53/);
    await timedReject(raw({ tensors: [tinfo('t', [2 ** 20, 2 ** 20], 0, 0)], data }), /'t'/, /past the end/);
    await timedReject(raw({ tensors: [tinfo('t', [32], 99, 0)], data }), /'t'/, /type id 99/);
    await timedReject(raw({ tensors: [tinfo('t', [32], 4, 0)], data }), /'t'/, /type id 4/);
    await timedReject(raw({ tensors: [tinfo('t', [48], GGML_TYPES.Q8_0, 0)], data }), /'t'/, /48 elements per row/, /32/);
  });

  it('offsets: misaligned, past the end, overlapping; duplicate names', async () => {
    const data = Buffer.alloc(128);
    await timedReject(raw({ tensors: [tinfo('t', [4], 0, 8)], data }), /'t'/, /offset 8/, /alignment 32/);
    await timedReject(raw({ tensors: [tinfo('t', [4], 0, 2n ** 63n)], data }), /'t'/, /past the end/);
    await timedReject(raw({ tensors: [tinfo('t', [16], 0, 96)], data }), /'t'/, /past the end/);
    await timedReject(raw({ tensors: [tinfo('a', [16], 0, 0), tinfo('b', [8], 0, 32)], data }), /'a'/, /'b'/, /overlap/);
    await timedReject(raw({ tensors: [tinfo('a', [8], 0, 0), tinfo('a', [8], 0, 32)], data }), /'a' appears twice/);
    await timedReject(raw({ tensors: [tinfo('t', [8], 0, 0)], data: Buffer.alloc(0), alignment: 1 }), /past the end/);
    // Out of order but disjoint is fine.
    const ok = await readGgufInfo(writeRaw(raw({ tensors: [tinfo('a', [8], 0, 32), tinfo('b', [8], 0, 0)], data })));
    expect(ok.tensors.map((t) => t.offset - ok.dataOffset)).toEqual([32, 0]);
  });

  it('a seeded byte-flip fuzz never throws anything but a TensorOpsError', async () => {
    const { bytes } = sample();
    const r = rng(2026);
    const p = join(dir, 'fuzz.gguf');
    let parsed = 0, loadedOk = 0;
    for (let iter = 0; iter < 300; iter++) {
      const b = Buffer.from(bytes);
      const flips = 1 + Math.floor(r() * 4);
      // Mostly the header and table, where the structure is.
      for (let f = 0; f < flips; f++) b[Math.floor(r() * (r() < 0.8 ? 200 : b.length))] = Math.floor(r() * 256);
      writeFileSync(p, b);
      try {
        const info = await readGgufInfo(p);
        parsed++;
        const t = await loadGgufTensors(dev, info, p);
        loadedOk++;
        for (const x of t.values()) x.dispose();
      } catch (err) {
        if (!(err instanceof TensorOpsError)) throw err;
      }
    }
    expect(parsed).toBeGreaterThan(0);
    expect(loadedOk).toBeGreaterThan(0);
  });
});
