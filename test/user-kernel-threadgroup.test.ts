// dev.kernel({ threadgroupMemory }): threadgroup memory the host sizes at each call (Metal's
// setThreadgroupMemoryLength), bound as `threadgroup T* name [[threadgroup(i)]]`. A row-sum
// reduction through it against float64 at two threadgroup sizes (the memory sized per call); a
// call that sizes it too small caught by the emulator; bad lengths and totals over 32 KiB E_ARG.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Device, KernelDescription } from '../lib/index';
import { emulatorDevice, failure, random, rejection, skipEmulator, skipReason } from './helpers/user-kernels';

// out[row] = sum of x[row, :], one threadgroup a row: each thread sums a strided part of the row
// into partial[t], then a tree over partial (its length: the threadgroup's threads, a power of 2).
const rowSum: KernelDescription = {
  name: 'row_sum',
  inputs: [{ name: 'x', dtype: 'float32' }],
  outputs: [{ name: 'out', dtype: 'float32' }],
  constants: [{ name: 'D', type: 'uint' }],
  threadgroupMemory: [{ name: 'partial', dtype: 'float32' }],
  source: [
    'const uint row = threadgroup_position_in_grid.x, t = thread_position_in_threadgroup.x;',
    'const uint T = threads_per_threadgroup.x;',
    'float s = 0.0f;',
    'for (uint i = t; i < D; i += T) s += x[row * D + i];',
    'partial[t] = s;',
    'threadgroup_barrier(mem_flags::mem_threadgroup);',
    'for (uint w = T / 2; w > 0; w /= 2) {',
    '  if (t < w) partial[t] += partial[t + w];',
    '  threadgroup_barrier(mem_flags::mem_threadgroup);',
    '}',
    'if (t == 0) out[row] = partial[0];',
  ].join('\n'),
};

describe.skipIf(skipEmulator)(`user kernels with host-sized threadgroup memory in the emulator${skipReason}`, () => {
  let dev: Device;
  let close: () => Promise<void>;
  beforeAll(async () => ({ dev, close } = await emulatorDevice()));
  afterAll(async () => close?.());

  it('binds threadgroup memory sized at each call: a row-sum reduction equals float64 at 64 and 256 threads', async () => {
    const k = await dev.kernel(rowSum);
    expect(k.mslSource).toContain('threadgroup float* partial [[threadgroup(0)]]');
    const [rows, D] = [5, 1000];
    const xs = random(rows * D, 7);
    const x = dev.tensor(xs, [rows, D]);
    for (const T of [64, 256]) {
      const [out] = k(x, { grid: [rows * T], threadgroup: [T], shapes: { out: [rows] }, constants: { D }, threadgroupMemory: { partial: T } });
      const got = await out.toFloat32();
      for (let r = 0; r < rows; r++) {
        let ref = 0, mag = 0;
        for (let i = 0; i < D; i++) {
          ref += xs[r * D + i];
          mag += Math.abs(xs[r * D + i]);
        }
        // float32 sums of D terms in some order: within D ulps of the sum of magnitudes.
        expect(Math.abs(got[r] - ref), `T=${T} row ${r}`).toBeLessThanOrEqual(mag * D * 2 ** -24);
      }
    }
  });

  it('reports a call that sizes the memory too small: a write past it, named as threadgroup(0) memory', async () => {
    const k = await dev.kernel(rowSum);
    const x = dev.tensor(random(2 * 64, 8), [2, 64]);
    const [out] = k(x, { grid: [128], threadgroup: [64], shapes: { out: [2] }, constants: { D: 64 }, threadgroupMemory: { partial: 32 } });
    const err = await failure(out);
    expect(err.code).toBe('E_KERNEL');
    // 32 floats: thread 32 writes partial[32], the first float past them.
    expect(err.message).toMatch(/^out_of_bounds: out-of-bounds write of threadgroup\(0\) memory \(128 bytes\) at byte offset 128, .* by thread 32 /);
  });

  it('checks entries and sizes with E_ARG naming the argument, the value and what is accepted', async () => {
    const base = { ...rowSum, name: 'tg_check' };
    const entry = (m: object) => ({ ...base, threadgroupMemory: [{ name: 'partial', dtype: 'float32', ...m }] as never });
    expect(await rejection(dev.kernel(entry({ length: 0 }))))
      .toBe('E_ARG: description.threadgroupMemory[0].length must be a positive integer (elements per threadgroup); got 0');
    expect(await rejection(dev.kernel(entry({ length: 2.5 })))).toMatch(/^E_ARG: description.threadgroupMemory\[0\].length must be a positive integer .*; got 2.5$/);
    expect(await rejection(dev.kernel(entry({ dtype: 'float64' })))).toMatch(/^E_DTYPE: description.threadgroupMemory\[0\].dtype/);
    expect(await rejection(dev.kernel(entry({ name: 'x' })))).toMatch(/^E_ARG: .*'x' names two things/);
    expect(await rejection(dev.kernel(entry({ bytes: 4 })))).toMatch(/^E_ARG: description.threadgroupMemory\[0\].bytes is not an option/);
    // 8193 float32 = 32772 bytes, rounded to 32784: over 32 KiB.
    expect(await rejection(dev.kernel(entry({ length: 8193 }))))
      .toBe('E_ARG: description.threadgroupMemory totals 32784 bytes (partial: 8193 x float32 = 32784 bytes; each rounded up to 16 bytes); at most 32768 (32 KiB per threadgroup on Apple GPUs)');
    const k = await dev.kernel({ ...base, threadgroupMemory: [{ name: 'partial', dtype: 'float32' }, { name: 'extra', dtype: 'float16', length: 1 }] });
    expect(k.mslSource).toContain('threadgroup float* partial [[threadgroup(0)]], threadgroup half* extra [[threadgroup(1)]]');
    const x = dev.tensor(random(64, 9), [1, 64]);
    const call = { grid: [64], threadgroup: [64], shapes: { out: [1] }, constants: { D: 64 } };
    expect(() => k(x, call)).toThrow(/^threadgroup memory 'partial' has no length: give it in the description or in options.threadgroupMemory$/);
    // 8188 float32 (32752 bytes) + 1 float16 (rounded to 16): 32768 fits; 8189 does not.
    expect(() => k(x, { ...call, threadgroupMemory: { partial: 8189 } })).toThrow(/^threadgroup memory totals 32784 bytes \(partial: 8189 x float32 = 32768 bytes, extra: 1 x float16 = 16 bytes; each rounded up to 16 bytes\); at most 32768/);
    expect(() => k(x, { ...call, threadgroupMemory: { partial: -1 } })).toThrow(/^options.threadgroupMemory.partial must be a positive integer \(elements per threadgroup\); got -1$/);
    expect(() => k(x, { ...call, threadgroupMemory: { partal: 64 } as never })).toThrow(/options.threadgroupMemory.partal is not an option/);
    const [out] = k(x, { ...call, threadgroupMemory: { partial: 8188 } });
    expect((await out.toFloat32())[0]).toBeCloseTo(Array.from(await x.toFloat32()).reduce((a, b) => a + b, 0), 4);
  });
});
