// Native memory: dispose, `using`, external-memory accounting, ops outliving their inputs, and
// the safety net for tensors never disposed.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { beforeAll, describe, expect, it } from 'vitest';
import { deviceInfo } from '../lib/backend';
import { Device as DeviceClass } from '../lib/device';
import { open, type Device } from '../lib/index';
import { loadBinding, type NativeDeviceHandle } from '../lib/native';
import { randn } from './helpers/compare';

// A full collection on demand, then a few event-loop turns for FinalizationRegistry callbacks.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
async function collect(): Promise<void> {
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

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
    // One input array for every tensor: 200 MiB of JS garbage would grow RSS until V8 collects it,
    // by 10-50 MiB from one run to the next, whatever the native side does.
    const data = new Float32Array(1 << 18);
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 200; i++) {
      const t = dev.tensor(data, [1 << 18]);  // 1 MiB
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

describe('tensors never disposed', () => {
  // A device whose buffer pool counters the test can read.
  const counted = (): [NativeDeviceHandle, Device] => {
    const native: NativeDeviceHandle = new (loadBinding().NativeDevice)(1, 'cpu', '');
    return [native, new DeviceClass(native, deviceInfo(native.info()))];
  };

  it('have their storage freed once their objects are collected (the FinalizationRegistry)', async () => {
    const [native, own] = counted();
    const live = () => native.bufferStats()!.liveBytes;
    await collect();  // the pool is the process's: earlier tests' garbage goes first
    const before = live();
    const n = 1 << 20;  // 4 MiB each: the page pool, which counts live bytes
    const data = new Float32Array(n);
    const x = own.tensor(data, [1, n]);
    (() => {
      for (let i = 0; i < 4; i++) own.tensor(data, [n]);  // dropped at once
      own.add(x, x);  // an op's output, dropped too
    })();
    // Before any await: a FinalizationRegistry callback only runs in a later task.
    expect(live() - before).toBeGreaterThanOrEqual(6 * 4 * n);
    await own.synchronize();
    await collect();
    expect(live() - before).toBe(4 * n);  // x alone: it is still held here
    expect(await x.toFloat32()).toEqual(data);
  });

  it('a disposed tensor stays disposed and keeps its shape while others are made and collected', async () => {
    const t = dev.tensor(randn(6, 9), [2, 3], 'float16');
    const kept = dev.tensor(randn(6, 10), [2, 3]);
    t.dispose();
    for (let round = 0; round < 3; round++) {
      (() => {
        for (let i = 0; i < 64; i++) dev.add(kept, dev.tensor(randn(6, i), [2, 3]));
      })();
      await collect();
    }
    expect(t.disposed).toBe(true);
    expect(t.shape).toEqual([2, 3]);
    expect(String(t)).toBe('Tensor(float16, [2, 3], disposed)');
    expect(() => dev.add(t, kept)).toThrow(expect.objectContaining({ code: 'E_DISPOSED' }));
    expect(() => t.dispose()).toThrow(expect.objectContaining({ code: 'E_DISPOSED' }));
    expect(await kept.toFloat32()).toEqual(randn(6, 10));
  });
});

describe('a device\'s native methods', () => {
  it('throw E_DISPOSED when one is called after its device object was collected', async () => {
    let method: ((...args: unknown[]) => unknown) | undefined;
    let x = 0;
    (() => {
      const native = new (loadBinding().NativeDevice)(1, 'cpu', '');
      x = native.tensor(new Float32Array(4), [1, 4], 'float32');
      method = native.linear as unknown as (...args: unknown[]) => unknown;  // kept; the device is not
      expect(method(x, x, null, null)).toEqual(expect.any(Number));  // while it lives, it works
    })();
    await collect();
    expect(() => method!(x, x, null, null)).toThrow(expect.objectContaining({ code: 'E_DISPOSED' }));
  });
});
