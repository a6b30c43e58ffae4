// The cpu backend's buffer pool (native/cpu/buffers.h): a dropped tensor's memory goes to the next
// tensor of its size class, and every op writes its whole output, so results in reused memory
// (still holding an earlier tensor's bytes) are the same, bit for bit, as in fresh memory.
import { afterAll, describe, expect, it } from 'vitest';
import { loadBinding, type NativeDeviceHandle, type NativeQTensorHandle, type NativeTensorHandle } from '../lib/native';
import { randn, rng } from './helpers/compare';

const { NativeDevice } = loadBinding();
// 4 threads: attention decode below splits its keys (flash-decoding) only with more threads than
// (batch, kv head) tasks. Every output below is at least 64 KiB (kCpuPoolMinBytes: smaller ones
// come from malloc).
const nd: NativeDeviceHandle = new NativeDevice(4, 'cpu', '');
const held: { dispose(): void }[] = [];
afterAll(() => held.forEach((t) => t.dispose()));

function tensor(data: Float32Array, shape: number[]): NativeTensorHandle {
  const t = nd.tensor(data, shape, 'float32');
  held.push(t);
  return t;
}
const randomTensor = (shape: number[], seed: number) => tensor(randn(shape.reduce((a, b) => a * b, 1), rng(seed)), shape);
const stats = () => {
  const s = nd.bufferStats();
  if (!s) throw new Error('the cpu backend reports no buffer pool');
  return s;
};
const bytesOf = async (t: NativeTensorHandle) => {
  await t.whenReady();
  const d = new Uint8Array(t.bytes);
  await t.readInto(t.dtype === 'float32' ? new Float32Array(d.buffer) : t.dtype === 'bool' ? d : new Uint16Array(d.buffer));
  return Buffer.from(d.buffer);
};
type Result = NativeTensorHandle | NativeQTensorHandle;
const planes = async (r: Result): Promise<Buffer[]> => {
  if (!('format' in r)) return [await bytesOf(r)];
  await r.whenReady();
  const n = r.planeLengths();
  const affine = r.format.startsWith('affine');
  const codes = new Uint8Array(n.codes);
  await r.codesInto(codes);
  const scales = affine ? new Uint16Array(n.scales) : new Uint8Array(n.scales);
  await r.scalesInto(scales);
  const out = [codes, scales];
  if (affine) {
    const biases = new Uint16Array(n.biases);
    await r.biasesInto(biases);
    out.push(biases);
  }
  return out.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength));
};

/** Leaves a dropped block full of NaN bytes in the pool for each of `sizes` (bytes). */
function poison(sizes: number[]) {
  const ts = sizes.map((n) => nd.tensor(new Float32Array(Math.ceil(n / 4)).fill(NaN), [Math.ceil(n / 4)], 'float32'));
  ts.forEach((t) => t.dispose());
}

describe('cpu buffer pool', () => {
  it('gives a dropped tensor\'s memory to the next tensor of its size class', () => {
    const n = 300_000;  // 1.2 MB: above malloc's mmap threshold, where each fresh buffer faults in new pages
    const a = nd.tensor(new Float32Array(n), [n], 'float32');
    const before = stats();
    expect(before.liveBytes).toBeGreaterThanOrEqual(4 * n);
    a.dispose();
    const dropped = stats();
    expect(dropped.liveBytes).toBe(before.liveBytes - dropped.cachedBytes + before.cachedBytes);
    expect(dropped.cachedBytes).toBeGreaterThan(before.cachedBytes);
    const b = nd.tensor(new Float32Array(n + 1000), [n + 1000], 'float32');  // same class (classes are ~25% apart)
    const after = stats();
    expect(after.reuses).toBe(dropped.reuses + 1);
    expect(after.allocations).toBe(dropped.allocations);
    expect(after.cachedBytes).toBe(before.cachedBytes);
    b.dispose();
  });

  it('is one pool for every cpu device of the process: its cache is bounded per process', () => {
    const other: NativeDeviceHandle = new NativeDevice(1, 'cpu', '');
    const n = 200_000;
    const a = other.tensor(new Float32Array(n), [n], 'float32');
    expect(other.bufferStats()).toEqual(stats());
    a.dispose();
    const before = stats();
    const b = nd.tensor(new Float32Array(n), [n], 'float32');  // the other device's block
    expect(stats().reuses).toBe(before.reuses + 1);
    expect(stats().allocations).toBe(before.allocations);
    b.dispose();
  });

  it('leaves tensors under 64 KiB to malloc (the pool would round each up to a 16 KiB page)', () => {
    const before = stats();
    const t = nd.tensor(new Float32Array(4000), [4000], 'float32');
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
  const q = async (format: string) => { const t = await nd.quantize(w(), format, 32); held.push(t); return t; };
  cases.push(['linear decode, float32 weights', async () => { const x = x1(), wt = w(); return () => nd.linear(x, wt, null, null); }]);
  cases.push(['linear prefill, float32 weights', async () => { const x = x64(), wt = w(); return () => nd.linear(x, wt, null, null); }]);
  for (const format of ['mxfp4', 'mxfp8', 'affine4']) {
    cases.push([`quantize to ${format}`, async () => { const wt = w(); return () => nd.quantize(wt, format, 32); }]);
    cases.push([`dequantize ${format}`, async () => { const wq = await q(format); return () => nd.dequantize(wq, null); }]);
    cases.push([`linear decode, ${format} weights`, async () => { const x = x1(), wq = await q(format); return () => nd.linear(x, wq, null, null); }]);
    cases.push([`linear prefill, ${format} weights`, async () => { const x = x64(), wq = await q(format); return () => nd.linear(x, wq, null, null); }]);
  }
  cases.push(['cast to float16', async () => { const wt = w(); return () => nd.cast(wt, 'float16'); }]);
  cases.push(['matmul', async () => { const a = randomTensor([3, 70, 40], 4), b = randomTensor([3, 40, 90], 5); return () => nd.matmul(a, b); }]);
  cases.push(['attention prefill, causal GQA', async () => {
    const qt = randomTensor([1, 8, 100, 64], 6), k = randomTensor([1, 2, 100, 64], 7), v = randomTensor([1, 2, 100, 64], 8);
    return () => nd.attention(qt, k, v, null, true, null);
  }]);
  cases.push(['attention decode, keys split across threads', async () => {
    const qt = randomTensor([1, 32, 1, 512], 9), k = randomTensor([1, 4, 1024, 512], 10), v = randomTensor([1, 4, 1024, 512], 11);
    return () => nd.attention(qt, k, v, null, false, null);
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
