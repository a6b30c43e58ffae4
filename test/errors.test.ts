// Bad input: a TensorOpsError with a stable code and a message naming the argument and the value;
// the device stays usable and other tensors keep their contents.
import { beforeAll, describe, expect, it } from 'vitest';
import { TensorOpsError, open, type Device } from '../lib/index';
import { rejects } from './helpers/errors';

let dev: Device;
beforeAll(async () => {
  dev = await open({ backend: 'cpu' });
});

const f = (n: number) => new Float32Array(n).map((_, i) => (i % 13) - 6);

describe('errors', () => {
  it('wrong rank', async () => {
    const x = dev.tensor(f(64), [2, 32]);
    await rejects(() => dev.linear(x, dev.tensor(f(64), [64])), 'E_SHAPE', 'w', '[64]', '[N, K]');
    await rejects(() => dev.attention(x, x, x), 'E_SHAPE', 'q', 'rank 4');
    await rejects(() => dev.matmul(dev.tensor(f(4), [4]), x), 'E_SHAPE', /a must have rank >= 2/);
  });

  it('mismatched K', async () => {
    await rejects(() => dev.linear(dev.tensor(f(64), [2, 32]), dev.tensor(f(48), [3, 16])), 'E_SHAPE', 'K=32', '[3, 16]');
    await rejects(() => dev.matmul(dev.tensor(f(64), [2, 32]), dev.tensor(f(48), [16, 3])), 'E_SHAPE', 'K=32');
  });

  it('Hq not a multiple of Hkv', async () => {
    const q = dev.tensor(f(3 * 4 * 32), [1, 3, 4, 32]);
    const kv = dev.tensor(f(2 * 4 * 32), [1, 2, 4, 32]);
    await rejects(() => dev.attention(q, kv, kv), 'E_SHAPE', 'Hq=3', 'Hkv=2');
  });

  it('last dim not a multiple of the block', async () => {
    await rejects(() => dev.quantize(dev.tensor(f(40), [2, 20]), { format: 'mxfp4' }), 'E_SHAPE', '20', 'block size 32');
    await rejects(() => dev.quantize(dev.tensor(f(64), [1, 64]), { format: 'mxfp4', blockSize: 16 }), 'E_ARG', 'blockSize', '16');
    await rejects(() => dev.fromQuantized({ format: 'mxfp8', shape: [1, 48], codes: new Uint8Array(48), scales: new Uint8Array(2) }),
      'E_SHAPE', '48');
  });

  it('unknown format or dtype', async () => {
    const x = dev.tensor(f(32), [1, 32]);
    await rejects(() => dev.quantize(x, { format: 'mxfp3' as never }), 'E_FORMAT', "'mxfp3'", 'mxfp4');
    await rejects(() => dev.tensor(f(4), [4], 'float64' as never), 'E_DTYPE', "'float64'", 'float16');
    await rejects(() => dev.linear(x, x, { outDtype: 'int8' as never }), 'E_DTYPE', 'outDtype');
    await rejects(() => dev.linear(dev.tensor(new Uint8Array(32), [1, 32], 'bool'), x), 'E_DTYPE', 'bool');
    await rejects(() => x.astype('half' as never), 'E_DTYPE', "'half'");
  });

  it('wrong TypedArray length or type', async () => {
    await rejects(() => dev.tensor(f(5), [2, 3]), 'E_SHAPE', '5', '[2, 3]', '6');
    await rejects(() => dev.tensor(new Uint16Array(4), [4], 'float32'), 'E_DTYPE', 'float32');
    await rejects(() => dev.tensor(new Int32Array(4), [4]), 'E_DTYPE', "'float32'", 'Int32Array (int32)');
    await rejects(() => dev.tensor(new BigInt64Array(4) as never, [4]), 'E_ARG', 'Int32Array');
    await rejects(() => dev.tensor(f(4), [2, -1]), 'E_SHAPE', 'shape[1]', 'non-negative');
    await rejects(() => dev.tensor(f(4), [2, 0]), 'E_SHAPE', '4', '[2, 0]', 'needs 0');  // an empty tensor takes no data
    await rejects(() => dev.fromQuantized({ format: 'mxfp4', shape: [1, 64], codes: new Uint8Array(31), scales: new Uint8Array(2) }),
      'E_SHAPE', 'codes', '31', '32');
  });

  it('NaN blocks in fromQuantized: the encodings quantize writes import and decode to NaN; other non-finite scales are E_FORMAT', async () => {
    // MX: scale byte 0xFF is the E8M0 NaN: its block decodes to NaN, the other block is finite.
    const mx = dev.fromQuantized({ format: 'mxfp4', shape: [1, 64], codes: new Uint8Array(32).fill(0x22), scales: new Uint8Array([127, 255]) });
    const mxValues = await (await mx.dequantize()).toFloat32();
    expect(mxValues.slice(0, 32).every((v) => v === 1)).toBe(true);
    expect(mxValues.slice(32).every(Number.isNaN)).toBe(true);
    // affine: a group whose scale and bias are both NaN decodes to NaN.
    const nanGroup = dev.fromQuantized({ format: 'affine4', blockSize: 32, shape: [1, 64], codes: new Uint8Array(32).fill(0x11),
      scales: new Uint16Array([0x3c00, 0x7e00]), biases: new Uint16Array([0, 0x7e00]) });
    const affineValues = await (await nanGroup.dequantize()).toFloat32();
    expect(affineValues.slice(0, 32).every((v) => v === 1)).toBe(true);
    expect(affineValues.slice(32).every(Number.isNaN)).toBe(true);
    // A lone NaN or an infinite scale or bias is not an encoding the library makes.
    for (const [scales, biases, bad] of [[[0x3c00, 0x7e00], [0, 0], '0x7e00'], [[0x7c00, 0x3c00], [0, 0], '0x7c00'], [[0x3c00, 0x3c00], [0, 0xfc00], '0xfc00']]) {
      await rejects(() => dev.fromQuantized({ format: 'affine4', blockSize: 32, shape: [1, 64], codes: new Uint8Array(32),
        scales: new Uint16Array(scales), biases: new Uint16Array(biases) }), 'E_FORMAT', 'group', bad);
    }
  });

  it('shapes whose element count overflows are E_SHAPE before anything is allocated or run', async () => {
    await rejects(() => dev.tensor(new Float32Array(0), [2 ** 32, 2 ** 32]), 'E_SHAPE', 'shape', '2^53');
    await rejects(() => dev.tensor(f(1), [67280421310721, 1, 1, 274177]), 'E_SHAPE', 'shape', '2^53');  // wraps to 1 in 64 bits
    await rejects(() => dev.tensor(f(4), [2 ** 53, 2]), 'E_SHAPE', 'shape[0]');
    // A 0 makes the tensor empty, but its other dimensions must still multiply within range.
    await rejects(() => dev.tensor(new Float32Array(0), [0, 2 ** 32, 2 ** 32]), 'E_SHAPE', 'nonzero dimensions', '2^53');
    expect(dev.tensor(new Float32Array(0), [2 ** 26, 0, 2 ** 26]).shape).toEqual([2 ** 26, 0, 2 ** 26]);
    // fromQuantized checks its planes' lengths before allocating them (E_SHAPE, not E_OOM).
    await rejects(() => dev.fromQuantized({ format: 'mxfp4', shape: [2 ** 40, 32], codes: new Uint8Array(1), scales: new Uint8Array(1) }),
      'E_SHAPE', 'codes');
    await rejects(() => dev.fromQuantized({ format: 'mxfp4', shape: [2 ** 32, 2 ** 32], codes: new Uint8Array(1), scales: new Uint8Array(1) }),
      'E_SHAPE', '2^53');
  });

  it('a shape is read once and the copy is what gets checked and used', async () => {
    let reads = 0;
    const shifty = [2, 2];
    Object.defineProperty(shifty, 0, { get: () => (reads++ === 0 ? 2 : 2 ** 40), enumerable: true });
    const t = dev.tensor(f(4), shifty);
    expect(t.shape).toEqual([2, 2]);
    expect(reads).toBe(1);
    await rejects(() => dev.tensor(f(4), [2, Symbol('d') as never]), 'E_SHAPE', 'shape[1]', 'Symbol(d)');
    await rejects(() => dev.tensor(f(4), [2, 2n as never]), 'E_SHAPE', 'shape[1]', '2n');
    const trap = new Proxy([2, 2], { get() { throw new Error('trap says no'); } });
    await rejects(() => dev.tensor(f(4), trap), 'E_ARG', 'shape', 'trap says no');
  });

  it('SharedArrayBuffer-backed data is accepted (copied) like any other', async () => {
    const shared = new Float32Array(new SharedArrayBuffer(16));
    shared.set([1, -2, 3.5, 4]);
    const t = dev.tensor(shared, [2, 2]);
    shared[0] = 99;  // the tensor took a copy
    expect(Array.from(await t.toFloat32())).toEqual([1, -2, 3.5, 4]);
    const bits = new Uint16Array(new SharedArrayBuffer(4));
    bits.set([0x3c00, 0xc000]);
    expect(Array.from(await dev.tensor(bits, [2], 'float16').toFloat32())).toEqual([1, -2]);
    const codes = new Uint8Array(new SharedArrayBuffer(16)).fill(0x22);
    const scales = new Uint8Array(new SharedArrayBuffer(1)).fill(127);
    const q = dev.fromQuantized({ format: 'mxfp4', shape: [1, 32], codes, scales });
    expect(Array.from(await (await q.dequantize()).toFloat32())).toEqual(new Array(32).fill(1));
  });

  it('options that are not plain objects are E_ARG (a Map, Date or array would read as no options)', async () => {
    const x = dev.tensor(f(32), [1, 32]);
    const bias = dev.tensor(f(1), [1]);
    for (const options of [new Map([['bias', bias]]), new Date(), [bias], 'bias', 7, () => ({ bias })]) {
      await rejects(() => dev.linear(x, x, options as never), 'E_ARG', 'options must be a plain object');
    }
    await rejects(() => dev.quantize(x, new Map([['format', 'mxfp4']]) as never), 'E_ARG', 'options');
    // matmul takes no options: one given is named, not ignored.
    const a = dev.tensor(f(4), [2, 2]);
    await rejects(() => dev.matmul(a, a, { transposeB: true } as never), 'E_ARG', 'options.transposeB', 'takes none');
    // An option whose getter throws is E_ARG carrying the getter's message.
    const getter = Object.defineProperty({}, 'bias', { get() { throw new Error('getter says no'); }, enumerable: true });
    await rejects(() => dev.linear(x, x, getter as never), 'E_ARG', 'getter says no');
  });

  it('unknown options are rejected by name', async () => {
    const x = dev.tensor(f(32), [1, 32]);
    await rejects(() => dev.linear(x, x, { bais: x } as never), 'E_ARG', 'options.bais');
    await rejects(() => open({ backend: 'gpu' as never }), 'E_ARG', "'gpu'");
    await rejects(() => open({ threads: 0 }), 'E_ARG', 'threads');
  });

  it('asking for metal where it cannot run', async () => {
    if (process.platform === 'darwin' && process.arch === 'arm64') return;  // covered by the macOS workflow
    await rejects(() => open({ backend: 'metal' }), 'E_BACKEND', 'metal', process.platform);
  });

  it('use after dispose, and disposing twice', async () => {
    const x = dev.tensor(f(32), [1, 32]);
    const w = await dev.quantize(dev.tensor(f(64), [2, 32]), { format: 'mxfp8' });
    x.dispose();
    expect(x.disposed).toBe(true);
    await rejects(() => x.toFloat32(), 'E_DISPOSED', 'disposed');
    await rejects(() => dev.linear(x, w), 'E_DISPOSED', 'x');
    await rejects(() => x.dispose(), 'E_DISPOSED', 'already disposed');
    w.dispose();
    await rejects(() => w.codes(), 'E_DISPOSED');
    await rejects(() => w.dispose(), 'E_DISPOSED');
  });

  it('after errors the device still works and other tensors are untouched', async () => {
    const data = f(64);
    const keep = dev.tensor(data, [2, 32]);
    for (let i = 0; i < 20; i++) {
      await rejects(() => dev.linear(keep, dev.tensor(f(48), [3, 16])), 'E_SHAPE');
    }
    expect(Array.from(await keep.toFloat32())).toEqual(Array.from(data));
    const y = await dev.linear(keep, keep);
    expect(y.shape).toEqual([2, 2]);
  });

  it('passing a non-tensor names the argument', async () => {
    await rejects(() => dev.linear({} as never, {} as never), 'E_ARG', 'x must be a Tensor');
    await rejects(() => dev.attention(dev.tensor(f(32), [1, 1, 1, 32]), 42 as never, 42 as never), 'E_ARG', 'k');
  });
});
