// The cpu backend's buffer pool (native/cpu/buffers.h): a dropped tensor's memory goes to the next
// tensor of its size class, and every op writes its whole output, so results in reused memory
// (still holding an earlier tensor's bytes) are the same, bit for bit, as in fresh memory.
import { afterAll, describe, expect, it } from 'vitest';
import { deviceInfo } from '../lib/backend';
import { Device } from '../lib/device';
import { QuantizedTensor, type Tensor } from '../lib/index';
import { loadBinding, type NativeDeviceHandle } from '../lib/native';
import { randn, rng } from './helpers/compare';

const { NativeDevice } = loadBinding();
// 4 threads: attention decode below splits its keys (flash-decoding) only with more threads than
// (batch, kv head) tasks. Every output below is at least 64 KiB (kCpuPoolMinBytes: smaller ones
// come from malloc).
const device = (threads: number): [NativeDeviceHandle, Device] => {
  const native: NativeDeviceHandle = new NativeDevice(threads, 'cpu', '');
  return [native, new Device(native, deviceInfo(native.info()))];
};
const [nd, dev] = device(4);
const held: { dispose(): void }[] = [];
afterAll(() => held.forEach((t) => t.dispose()));

function tensor(data: Float32Array, shape: number[]): Tensor {
  const t = dev.tensor(data, shape);
  held.push(t);
  return t;
}
const randomTensor = (shape: number[], seed: number) => tensor(randn(shape.reduce((a, b) => a * b, 1), rng(seed)), shape);
const stats = () => {
  const s = nd.bufferStats();
  if (!s) throw new Error('the cpu backend reports no buffer pool');
  return s;
};
type Result = Tensor | QuantizedTensor;
const planes = async (r: Result): Promise<Buffer[]> => {
  const out = r instanceof QuantizedTensor
    ? [await r.codes(), await r.scales(), ...(r.format.startsWith('affine') ? [await r.biases()] : [])]
    : [await r.data()];
  return out.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength));
};

/** Leaves a dropped block full of NaN bytes in the pool for each of `sizes` (bytes). */
function poison(sizes: number[]) {
  const ts = sizes.map((n) => dev.tensor(new Float32Array(Math.ceil(n / 4)).fill(NaN), [Math.ceil(n / 4)]));
  ts.forEach((t) => t.dispose());
}

describe('cpu buffer pool', () => {
  it('gives a dropped tensor\'s memory to the next tensor of its size class', () => {
    const n = 300_000;  // 1.2 MB: above malloc's mmap threshold, where each fresh buffer faults in new pages
    const a = dev.tensor(new Float32Array(n), [n]);
    const before = stats();
    expect(before.liveBytes).toBeGreaterThanOrEqual(4 * n);
    a.dispose();
    const dropped = stats();
    expect(dropped.liveBytes).toBe(before.liveBytes - dropped.cachedBytes + before.cachedBytes);
    expect(dropped.cachedBytes).toBeGreaterThan(before.cachedBytes);
    const b = dev.tensor(new Float32Array(n + 1000), [n + 1000]);  // same class (classes are ~25% apart)
    const after = stats();
    expect(after.reuses).toBe(dropped.reuses + 1);
    expect(after.allocations).toBe(dropped.allocations);
    expect(after.cachedBytes).toBe(before.cachedBytes);
    b.dispose();
  });

  it('is one pool for every cpu device of the process: its cache is bounded per process', () => {
    const [other, otherDev] = device(1);
    const n = 200_000;
    const a = otherDev.tensor(new Float32Array(n), [n]);
    expect(other.bufferStats()).toEqual(stats());
    a.dispose();
    const before = stats();
    const b = dev.tensor(new Float32Array(n), [n]);  // the other device's block
    expect(stats().reuses).toBe(before.reuses + 1);
    expect(stats().allocations).toBe(before.allocations);
    b.dispose();
  });

  it('leaves tensors under 64 KiB to malloc (the pool would round each up to a 16 KiB page)', () => {
    const before = stats();
    const t = dev.tensor(new Float32Array(4000), [4000]);
    const after = stats();
    expect(after.liveBytes).toBe(before.liveBytes);
    expect(after.allocations + after.reuses).toBe(before.allocations + before.reuses);
    t.dispose();
  });

  // Each op twice on the same inputs: into fresh memory, then into memory left full of NaN bytes
  // by dropped tensors. A case makes its inputs and returns the op.
  type Case = () => Promise<() => Promise<Result>>;
  const cases: [string, Case][] = [];
  const x1 = () => randomTensor([1, 64], 1);
  const x64 = () => randomTensor([64, 64], 2);
  const w = () => randomTensor([65536, 64], 3);
  const q = async (format: 'mxfp4' | 'mxfp8' | 'affine4') => { const t = dev.quantize(w(), { format, blockSize: 32 }); held.push(t); return t; };
  cases.push(['linear decode, float32 weights', async () => { const x = x1(), wt = w(); return async () => dev.linear(x, wt); }]);
  cases.push(['linear prefill, float32 weights', async () => { const x = x64(), wt = w(); return async () => dev.linear(x, wt); }]);
  for (const format of ['mxfp4', 'mxfp8', 'affine4'] as const) {
    cases.push([`quantize to ${format}`, async () => { const wt = w(); return async () => dev.quantize(wt, { format, blockSize: 32 }); }]);
    cases.push([`dequantize ${format}`, async () => { const wq = await q(format); return async () => dev.dequantize(wq); }]);
    cases.push([`linear decode, ${format} weights`, async () => { const x = x1(), wq = await q(format); return async () => dev.linear(x, wq); }]);
    cases.push([`linear prefill, ${format} weights`, async () => { const x = x64(), wq = await q(format); return async () => dev.linear(x, wq); }]);
  }
  cases.push(['cast to float16', async () => { const wt = w(); return async () => dev.cast(wt, 'float16'); }]);
  cases.push(['matmul', async () => { const a = randomTensor([3, 70, 40], 4), b = randomTensor([3, 40, 90], 5); return async () => dev.matmul(a, b); }]);
  cases.push(['attention prefill, causal GQA', async () => {
    const qt = randomTensor([1, 8, 100, 64], 6), k = randomTensor([1, 2, 100, 64], 7), v = randomTensor([1, 2, 100, 64], 8);
    return async () => dev.attention(qt, k, v, { causal: true });
  }]);
  cases.push(['attention decode, keys split across threads', async () => {
    const qt = randomTensor([1, 32, 1, 512], 9), k = randomTensor([1, 4, 1024, 512], 10), v = randomTensor([1, 4, 1024, 512], 11);
    return async () => dev.attention(qt, k, v);
  }]);

  for (const [name, setup] of cases) {
    it(`${name}: the same bytes in reused memory as in fresh`, async () => {
      const run = await setup();
      const fresh = await run();
      const want = await planes(fresh);
      const sizes = want.map((p) => p.byteLength);
      fresh.dispose();
      poison(sizes);
      const before = stats();
      const again = await run();
      held.push(again);
      expect(stats().reuses - before.reuses).toBe(sizes.length);  // every output plane came from the pool
      const got = await planes(again);
      for (let i = 0; i < want.length; i++) expect(got[i].equals(want[i]), `plane ${i}`).toBe(true);
    });
  }
});
