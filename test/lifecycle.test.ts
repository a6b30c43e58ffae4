// Native memory: dispose, `using`, external-memory accounting, ops outliving their inputs.
import { beforeAll, describe, expect, it } from 'vitest';
import { open, type Device } from '../lib/index';
import { randn } from './helpers/compare';

let dev: Device;
beforeAll(async () => {
  dev = await open({ backend: 'cpu', threads: 2 });
});

describe('lifecycle', () => {
  it('reports device info', () => {
    expect(dev.info.backend).toBe('cpu');
    expect(dev.info.tier).toBe('cpu');
    expect(dev.info.threads).toBe(2);
    expect(dev.info.neuralAccelerators).toBe(false);
    expect(dev.info.arch).toBe(process.arch);
    expect(typeof dev.info.name).toBe('string');
    expect(dev.info.fallbackReason).toBeUndefined();  // cpu was asked for: nothing fell back
  });

  it('auto on a machine without Metal falls back to cpu and says why', async () => {
    if (process.platform === 'darwin') return;
    const auto = await open();
    expect(auto.info.backend).toBe('cpu');
    expect(auto.info.fallbackReason).toMatch(/macOS/);
  });

  it('tensor bytes match the dtype and reading returns copies in the storage type', async () => {
    const data = randn(6, 1);
    const t32 = dev.tensor(data, [2, 3]);
    const t16 = dev.tensor(data, [2, 3], 'float16');
    expect(t32.bytes).toBe(24);
    expect(t16.bytes).toBe(12);
    const a = await t32.data();
    expect(a).toBeInstanceOf(Float32Array);
    a[0] = 1234;  // a copy: the tensor is untouched
    expect((await t32.toFloat32())[0]).toBe(data[0]);
    expect(await t16.data()).toBeInstanceOf(Uint16Array);
  });

  it('`using` disposes at the end of the scope, and explicit dispose before it is fine', () => {
    let seen: { disposed: boolean } | undefined;
    {
      using t = dev.tensor(randn(4, 2), [4]);
      seen = t;
      expect(t.disposed).toBe(false);
    }
    expect(seen.disposed).toBe(true);
    {
      using t = dev.tensor(randn(4, 2), [4]);
      t.dispose();
    }
  });

  it('an op keeps its inputs alive when they are disposed while it runs', async () => {
    const M = 64, N = 256, K = 1024;
    const x = dev.tensor(randn(M * K, 3), [M, K]);
    const w = dev.tensor(randn(N * K, 4), [N, K]);
    const ref = await (await dev.linear(x, w)).toFloat32();
    const pending = dev.linear(x, w);
    x.dispose();
    w.dispose();
    expect(await (await pending).toFloat32()).toEqual(ref);
  });

  it('dispose releases native memory at once: 200 MiB of tensors do not grow RSS', async () => {
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 200; i++) {
      const t = dev.tensor(new Float32Array(1 << 18), [1 << 18]);  // 1 MiB
      const q = await dev.quantize(t, { format: 'mxfp4' });
      t.dispose();
      q.dispose();
    }
    const grown = process.memoryUsage().rss - before;
    expect(grown).toBeLessThan(64 * 1024 * 1024);  // 200 MiB allocated in all
  });

  it('close() waits for the ops already started, then later calls throw E_DISPOSED; closing twice is safe', async () => {
    const own = await open({ backend: 'cpu', threads: 2 });
    const M = 64, N = 256, K = 1024;
    const xs = randn(M * K, 7), ws = randn(N * K, 8);
    const x = own.tensor(xs, [M, K]);
    const w = own.tensor(ws, [N, K]);
    const pending = own.linear(x, w);
    const closing = own.close();
    expect(own.closed).toBe(true);
    expect(() => own.tensor(xs, [M, K])).toThrow(expect.objectContaining({ code: 'E_DISPOSED' }));
    expect(() => own.linear(x, w)).toThrow(expect.objectContaining({ code: 'E_DISPOSED' }));
    const y = await pending;  // started before close(): it completes
    await closing;
    await own.close();
    // Tensors outlive their device's close(): the result and the inputs are still readable.
    const want = await (await dev.linear(dev.tensor(xs, [M, K]), dev.tensor(ws, [N, K]))).toFloat32();
    expect(await y.toFloat32()).toEqual(want);
    expect(await x.toFloat32()).toEqual(xs);
  });

  it('`await using` closes a device at the end of its scope', async () => {
    let seen: Device | undefined;
    {
      await using own = await open({ backend: 'cpu', threads: 1 });
      seen = own;
      expect(own.closed).toBe(false);
    }
    expect(seen!.closed).toBe(true);
  });

  it('toString says what a tensor is', async () => {
    const t = dev.tensor(randn(64, 5), [2, 32], 'bfloat16');
    expect(String(t)).toBe('Tensor(bfloat16, [2, 32])');
    const q = await dev.quantize(t, { format: 'mxint4' });
    expect(String(q)).toBe('QuantizedTensor(mxint4, [2, 32])');
    expect(q.blockSize).toBe(32);
  });
});
