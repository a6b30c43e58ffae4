// The cpu backend runs ops on its own thread pool (native/addon/host_op.cc), never on libuv's,
// which the app's file system, DNS, zlib and crypto work share: an op must not wait behind that
// work, and that work must not wait behind ops. Checked with libuv's pool kept busy by slow
// pbkdf2 calls (more of them than libuv has threads), against a float64 reference.
import { pbkdf2 } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { open, type Device } from '../lib/index';
import { expectClose, randn } from './helpers/compare';
import { linearRef } from './helpers/reference';

// Long enough to outlast the ops below many times over on a loaded machine (~1 s each here).
const SLOW_ITERATIONS = 1_500_000;
const libuvThreads = Number(process.env.UV_THREADPOOL_SIZE) || 4;

let dev: Device;
beforeAll(async () => {
  dev = await open({ backend: 'cpu', threads: 2 });
});

function slowLibuvJob(): Promise<number> {
  return new Promise((resolve, reject) =>
    pbkdf2('password', 'salt', SLOW_ITERATIONS, 64, 'sha512', (err) => (err ? reject(err) : resolve(performance.now()))),
  );
}

describe('cpu ops and the libuv thread pool', () => {
  it('ops past the inline limit settle while every libuv thread is busy', async () => {
    const [M, N, K] = [2, 512, 1024];  // ~1M multiply-adds: far past the inline limit
    const x = randn(M * K, 41), w = randn(N * K, 42);
    const xt = dev.tensor(x, [M, K]);
    const wt = dev.tensor(w, [N, K]);
    const busy = Array.from({ length: libuvThreads + 2 }, slowLibuvJob);
    const done: number[] = [];
    const ys: Float32Array[] = [];
    for (let i = 0; i < 5; i++) {
      const y = await dev.linear(xt, wt);
      ys.push(await y.toFloat32());
      y.dispose();
      done.push(performance.now());
    }
    const firstLibuvDone = Math.min(...(await Promise.all(busy)));
    // Every op settled before libuv's pool freed a single thread.
    for (const t of done) expect(t).toBeLessThan(firstLibuvDone);
    const ref = linearRef(x, w, M, N, K);
    for (const y of ys) expectClose(y, ref, 1e-4, 'linear under a busy libuv pool');
    xt.dispose();
    wt.dispose();
  }, 120_000);
});
