// open() chooses and makes its backend on a pool thread (native/addon/device_open.cc): on a Mac
// that compiles each Metal tier's probe kernel, which must not stall the event loop. The delay
// below stands in for the compiler (tests only: binding.openDevice's 4th argument).
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { deviceInfo } from '../lib/backend';
import { Device } from '../lib/device';
import { open } from '../lib/index';
import { loadBinding } from '../lib/native';
import { expectClose, randn } from './helpers/compare';
import { linearRef } from './helpers/reference';

const binding = loadBinding();
const dist = join(resolve(__dirname, '..'), 'dist', 'cjs', 'index.js');  // built by `npm test`'s pretest

describe('open() off the JS thread', () => {
  it('the event loop keeps running while a device opens, and the device then computes', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const t0 = performance.now();
    const handle = await binding.openDevice(2, 'cpu', '', { openDelayUs: 300_000 });
    const ms = performance.now() - t0;
    clearInterval(timer);
    expect(ms).toBeGreaterThanOrEqual(290);
    // On the JS thread the 300 ms would have let no timer fire before the promise settled.
    expect(ticks).toBeGreaterThanOrEqual(10);
    const native = new binding.NativeDevice(handle);
    const dev = new Device(native, deviceInfo(native.info()));
    expect(dev.info.backend).toBe('cpu');
    const [M, N, K] = [2, 33, 70];
    const x = randn(M * K, 7), w = randn(N * K, 8);
    const y = await dev.linear(dev.tensor(x, [M, K]), dev.tensor(w, [N, K])).toFloat32();
    expectClose(y, linearRef(x, w, M, N, K), 1e-5, 'linear on a device opened off the JS thread');
    await dev.close();
  });

  it('a handle makes one device: a second use is E_ARG', async () => {
    const handle = await binding.openDevice(1, 'cpu', '');
    const native = new binding.NativeDevice(handle);
    let err: unknown;
    try {
      new binding.NativeDevice(handle);
    } catch (e) {
      err = e;
    }
    expect((err as { code?: string }).code).toBe('E_ARG');
    expect(String((err as Error).message)).toContain('already used');
    await new Device(native, deviceInfo(native.info())).close();
  });

  it('an open that fails rejects (E_BACKEND for metal here) instead of throwing at the call', async () => {
    const p = open({ backend: 'metal' });
    expect(p).toBeInstanceOf(Promise);
    await expect(p).rejects.toMatchObject({ code: 'E_BACKEND' });
  });

  it('a worker terminated while its device opens ends cleanly; opens after it work', async () => {
    const worker = new Worker(String.raw`
      const { parentPort, workerData } = require('node:worker_threads');
      const { loadBinding } = require(workerData.dist.replace(/index\.js$/, 'native.js'));
      loadBinding().openDevice(2, 'cpu', '', { openDelayUs: 400000 }).then(() => parentPort.postMessage('opened'));
      parentPort.postMessage('started');
    `, { eval: true, workerData: { dist } });
    const messages: unknown[] = [];
    worker.on('message', (m) => messages.push(m));
    await new Promise((r) => worker.once('message', r));
    await new Promise((r) => setTimeout(r, 50));
    const code = await worker.terminate();
    expect(code).toBe(1);
    expect(messages).toEqual(['started']);
    const dev = await open({ backend: 'cpu', threads: 1 });
    const x = randn(64, 3);
    const y = await dev.linear(dev.tensor(x, [1, 64]), dev.tensor(x, [1, 64])).toFloat32();
    expectClose(y, linearRef(x, x, 1, 1, 64), 1e-5, 'x . x after the terminated worker');
    await dev.close();
  });
});
