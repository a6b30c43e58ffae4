// The kernel-time recorder behind the bench's "kernel" fractions (native/core/stream.h,
// internal hostOpTimes): one time per op the cpu backend runs on its pool, each within that op's
// round trip from the JS call to the read of its output; nothing for ops run inline on the JS
// thread, nothing outside a recording.
import { afterAll, describe, expect, it } from 'vitest';
import { open, type Device, type Tensor } from '../lib';
import { loadBinding } from '../lib/native';

const internal = (loadBinding() as unknown as { _internal: { hostOpTimes(start: boolean): number[] | undefined } })._internal;
const take = () => internal.hostOpTimes(false) ?? [];

let dev: Device;
const held: Tensor[] = [];
afterAll(() => held.forEach((t) => t.dispose()));

async function linearTimes(n: number, N: number) {
  dev ??= await open({ backend: 'cpu', threads: 2 });
  const x = dev.tensor(new Float32Array(N).fill(0.5), [1, N]);
  const w = dev.tensor(new Float32Array(N * N).fill(0.25), [N, N]);
  held.push(x, w);
  const roundTrips: number[] = [];
  internal.hostOpTimes(true);
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    const y = dev.linear(x, w);
    await dev.synchronize();
    roundTrips.push(Number(process.hrtime.bigint() - t0) / 1e3);
    y.dispose();
  }
  return { kernels: take(), roundTrips };
}

describe('host op kernel times', () => {
  it('records one time per pooled op, within its round trip', async () => {
    // 1 x 512 x 512: 262144 multiply-adds, above the inline limit (stream.h: kInlineWork).
    const { kernels, roundTrips } = await linearTimes(20, 512);
    expect(kernels).toHaveLength(20);
    kernels.forEach((k, i) => {
      expect(k, `op ${i}`).toBeGreaterThan(0);
      expect(k, `op ${i}`).toBeLessThanOrEqual(roundTrips[i]);
    });
  });

  it('records nothing for ops run inline on the JS thread', async () => {
    // 1 x 32 x 32: 1024 multiply-adds, run inline.
    const { kernels } = await linearTimes(5, 32);
    expect(kernels).toEqual([]);
  });

  it('records nothing outside a recording', async () => {
    await linearTimes(3, 512);  // started and taken
    const x = dev.tensor(new Float32Array(512).fill(1), [1, 512]);
    const w = dev.tensor(new Float32Array(512 * 512).fill(1), [512, 512]);
    held.push(x, w);
    dev.linear(x, w).dispose();
    await dev.synchronize();
    expect(take()).toEqual([]);
  });
});
