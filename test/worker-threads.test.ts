// The addon in Node worker threads (each its own Node-API environment, as in Electron's and
// Node's worker pools): results there match a float64 reference, and a worker terminated while
// its ops are still running on the cpu backend's threads ends cleanly, with the main thread's
// device unaffected. Terminating tears down the worker's environment under running ops: their
// thread-safe functions are closed, and the last reference to the worker's backend (and its
// pool) is dropped by a pool thread, which then destroys the pool it runs on.
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { beforeAll, describe, expect, it } from 'vitest';
import { open, type Device } from '../lib/index';
import { expectClose, randn } from './helpers/compare';
import { linearRef } from './helpers/reference';

const dist = join(resolve(__dirname, '..'), 'dist', 'cjs', 'index.js');  // built by `npm test`'s pretest

// The worker: plain CommonJS against the built package.
const WORKER = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const { open } = require(workerData.dist);
(async () => {
  const { M, N, K, x, w, ops, wait } = workerData;
  const dev = await open({ backend: 'cpu', threads: 2 });
  const xt = dev.tensor(x, [M, K]);
  const wt = dev.tensor(w, [N, K]);
  if (!wait) {
    // Start ops and leave them running: the main thread terminates this worker now.
    for (let i = 0; i < ops; i++) dev.linear(xt, wt).toFloat32().catch(() => {});
    parentPort.postMessage({ started: ops });
    return;
  }
  const y = dev.linear(xt, wt);
  parentPort.postMessage({ y: await y.toFloat32(), backend: dev.info.backend });
})().catch((e) => parentPort.postMessage({ error: String(e && e.stack || e) }));
`;

function startWorker(data: Record<string, unknown>): Worker {
  return new Worker(WORKER, { eval: true, workerData: { dist, ...data } });
}

const firstMessage = (w: Worker) =>
  new Promise<Record<string, unknown>>((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
const exited = (w: Worker) => new Promise<number>((resolve) => w.once('exit', resolve));

let dev: Device;
beforeAll(async () => {
  dev = await open({ backend: 'cpu', threads: 2 });
});

describe('worker threads', () => {
  it('a device opened in a worker computes linear like the float64 reference', async () => {
    const [M, N, K] = [3, 256, 512];
    const x = randn(M * K, 51), w = randn(N * K, 52);
    const worker = startWorker({ M, N, K, x, w, wait: true });
    const msg = await firstMessage(worker);
    expect(msg.error).toBeUndefined();
    expect(msg.backend).toBe('cpu');
    expectClose(msg.y as Float32Array, linearRef(x, w, M, N, K), 1e-4, 'linear in a worker');
    await worker.terminate();
  });

  it('terminating a worker with ops still running ends it cleanly; the main device still works', async () => {
    const [M, N, K] = [8, 2048, 2048];  // ~34M multiply-adds per op: milliseconds each
    const x = randn(M * K, 53), w = randn(N * K, 54);
    for (let round = 0; round < 3; round++) {
      const worker = startWorker({ M, N, K, x, w, ops: 40, wait: false });
      const done = exited(worker);
      const msg = await firstMessage(worker);
      expect(msg.started).toBe(40);
      await worker.terminate();
      expect(await done).toBe(1);  // terminated, not crashed or hung
    }
    // Let the terminated workers' pool threads finish and destroy their pools.
    await new Promise((r) => setTimeout(r, 500));
    const [m, n, k] = [2, 128, 256];
    const xs = randn(m * k, 55), ws = randn(n * k, 56);
    const y = await dev.linear(dev.tensor(xs, [m, k]), dev.tensor(ws, [n, k]));
    expectClose(await y.toFloat32(), linearRef(xs, ws, m, n, k), 1e-4, 'main device after the workers');
  });
});
