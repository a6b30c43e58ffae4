// Stream-ordered execution (docs/design/API.md "Execution model"): ops return their outputs at
// once and run in call order; only reads wait. On the cpu backend for real, and through the
// test-only asynchronous backend (native/addon/async_test_backend.h), which completes ops in
// order from another thread as a GPU queue does, declines some ops (the stream runs them on the
// cpu backend between the "GPU" ones) and fails scripted ops or batches as a GPU error would.
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { open, Tensor, type Device } from '../lib/index';
import { deviceInfo } from '../lib/backend';
import { Device as DeviceClass } from '../lib/device';
import { loadBinding, type NativeDeviceHandle } from '../lib/native';
import { expectBitExact, expectClose, randn } from './helpers/compare';
import { linearRef } from './helpers/reference';

interface Script {
  failOps?: number[]; failBatches?: number[]; failCode?: string; delayUs?: number;
  compileUs?: number; compileFail?: boolean; commitOps?: number;
}

function gpuLike(script: Script = {}): Device {
  const Native = loadBinding().NativeDevice as unknown as new (
    threads: number, backend: string, tier: string, test: Script & { asyncTestBackend: boolean },
  ) => NativeDeviceHandle;
  const native = new Native(2, 'cpu', '', { asyncTestBackend: true, ...script });
  return new DeviceClass(native, deviceInfo(native.info()));
}

let cpu: Device;
beforeAll(async () => {
  cpu = await open({ backend: 'cpu', threads: 2 });
});

const K = 64;
// One step of a chain: y = (x @ w^T) cast to float16 and back, so every step depends on the last
// and the chain mixes ops the test backend runs with ops it declines (cast).
function step(dev: Device, x: Tensor, w: Tensor): Tensor {
  return dev.cast(dev.cast(dev.linear(x, w), 'float16'), 'float32');
}

async function awaitedChain(dev: Device, steps: number, x0: Float32Array, wv: Float32Array): Promise<Float32Array> {
  let x = dev.tensor(x0, [1, K]);
  const w = dev.tensor(wv, [K, K]);
  for (let i = 0; i < steps; i++) {
    const y = step(dev, x, w);
    await y.data();  // one trip to JS per step, as 0.1's Promises made every op
    x = y;
  }
  return x.toFloat32();
}

function queuedChain(dev: Device, steps: number, x0: Float32Array, wv: Float32Array): Tensor {
  let x = dev.tensor(x0, [1, K]);
  const w = dev.tensor(wv, [K, K]);
  for (let i = 0; i < steps; i++) x = step(dev, x, w);  // no await: everything queues
  return x;
}

// w = 0.995 I + noise small enough (spectral norm ~0.01) that values stay O(1) over 334 steps.
const x0 = randn(K, 1);
const wv = Float32Array.from(randn(K * K, 2, 0.0005), (v, i) => v + (i % (K + 1) === 0 ? 0.995 : 0));

describe('stream-ordered execution', () => {
  for (const [name, make] of [['cpu backend', () => cpu], ['asynchronous backend', () => gpuLike()]] as const) {
    it(`${name}: a chain of 1,000 dependent ops queued without await equals the same ops awaited one by one, bit for bit`, async () => {
      const dev = make();
      const t0 = performance.now();
      const out = queuedChain(dev, 334, x0, wv);  // 3 ops a step: 1,002 ops
      const queueMs = performance.now() - t0;
      const queued = await out.toFloat32();
      const awaited = await awaitedChain(dev, 334, x0, wv);
      expectBitExact(queued, awaited, name);
      expect(queued.every(Number.isFinite)).toBe(true);
      // Queueing returned long before the work was done (no op waited for another on this thread).
      expect(queueMs).toBeLessThan(5000);
    });
  }

  it('ops return at once with their shape and dtype; reads in any order resolve with the right values', async () => {
    const M = 4, N = 48;
    const xs = [0, 1, 2].map((i) => randn(M * K, 10 + i));
    const w = cpu.tensor(randn(N * K, 20), [N, K]);
    const wd = await w.toFloat32();
    const ys = xs.map((x) => cpu.linear(cpu.tensor(x, [M, K]), w, { outDtype: 'float32' }));
    for (const y of ys) {
      expect(y.shape).toEqual([M, N]);
      expect(y.dtype).toBe('float32');
      expect(typeof (y as unknown as { then?: unknown }).then).toBe('undefined');  // not a thenable
    }
    const order = [2, 0, 1];
    const got = await Promise.all(order.map((i) => ys[i].toFloat32()));
    order.forEach((i, j) => expectClose(got[j], linearRef(xs[i], wd, M, N, K), 1e-5, `y${i}`));
    // `await` of an op still works as in 0.1: it returns the tensor itself.
    const again = await cpu.linear(cpu.tensor(xs[0], [M, K]), w);
    expect(again).toBeInstanceOf(Tensor);
  });

  it('synchronize() resolves once everything queued before it ran', async () => {
    const dev = gpuLike({ delayUs: 2000 });
    const ys = Array.from({ length: 5 }, (_, i) => dev.linear(dev.tensor(randn(K, 30 + i), [1, K]), dev.tensor(wv, [K, K])));
    let ran = 0;
    ys.forEach((y) => y.toFloat32().then(() => ran++));
    await dev.synchronize();
    await new Promise((r) => setImmediate(r));  // the reads' own continuations
    expect(ran).toBe(5);
  });

  describe('a failure while running', () => {
    it('fails the op, every output computed from it (through declined ops too), and nothing else; the device stays usable', async () => {
      // Op 2 accepted by the "GPU" fails (E_OOM). Ops: linear (1), linear (2, fails), then a cast
      // (declined: run on the cpu) and a linear (3) computed from op 2's output.
      const dev = gpuLike({ failOps: [2] });
      const w = dev.tensor(wv, [K, K]);
      const a = dev.linear(dev.tensor(x0, [1, K]), w);
      const bad = dev.linear(dev.tensor(x0, [1, K]), w);
      const viaCpu = dev.cast(bad, 'float16');
      const downstream = dev.linear(dev.cast(viaCpu, 'float32'), w);
      const independent = dev.linear(dev.tensor(x0, [1, K]), w);
      for (const t of [bad, viaCpu, downstream]) {
        await expect(t.toFloat32()).rejects.toMatchObject({ name: 'TensorOpsError', code: 'E_OOM', message: 'the GPU failed running op 2 (scripted)' });
      }
      const want = linearRef(x0, wv, 1, K, K);
      expectClose(await a.toFloat32(), want, 1e-5, 'the op before');
      expectClose(await independent.toFloat32(), want, 1e-5, 'an independent op after');
      await dev.synchronize();  // resolves: failed ops are done too
      expectClose(await dev.linear(dev.tensor(x0, [1, K]), w).toFloat32(), want, 1e-5, 'the device afterwards');
    });

    it('a failed command buffer fails its ops only', async () => {
      // Batch 1 holds the two ops of the first JS turn; batch 2 the op after the await.
      const dev = gpuLike({ failBatches: [1], failCode: 'E_BACKEND' });
      const w = dev.tensor(wv, [K, K]);
      const first = [dev.linear(dev.tensor(x0, [1, K]), w), dev.linear(dev.tensor(x0, [1, K]), w)];
      await new Promise((r) => setImmediate(r));  // the turn ends: batch 1 is committed
      const second = dev.linear(dev.tensor(x0, [1, K]), w);
      for (const t of first) {
        await expect(t.toFloat32()).rejects.toMatchObject({ code: 'E_BACKEND', message: 'the GPU failed running a command buffer (scripted)' });
      }
      expectClose(await second.toFloat32(), linearRef(x0, wv, 1, K, K), 1e-5, 'the next batch');
    });

    it('an input disposed while its op is queued stays alive until the op ran', async () => {
      const dev = gpuLike({ delayUs: 3000 });
      const x = dev.tensor(x0, [1, K]);
      const w = dev.tensor(wv, [K, K]);
      const y = dev.linear(x, w);
      x.dispose();
      w.dispose();
      // Churn the buffer pool with NaN-filled tensors while the op waits on the "GPU".
      for (let i = 0; i < 20; i++) dev.tensor(new Float32Array(K * K).fill(NaN), [K, K]).dispose();
      expectClose(await y.toFloat32(), linearRef(x0, wv, 1, K, K), 1e-5, 'y');
    });
  });

  describe('mid-turn commits (BatchBudget, native/core/commit_policy.h: as the metal CommandStream)', () => {
    const counters = () => (loadBinding()._internal as unknown as { asyncTestCounters(): { opsRun: number } }).asyncTestCounters();
    // Blocks the JS thread (the turn does not end, so nothing commits at its end) until the "GPU"
    // has run `n` ops since `before`, or `ms` passed; then how many it ran.
    function ranWithinTurn(before: number, n: number, ms: number): number {
      const deadline = performance.now() + ms;
      while (counters().opsRun - before < n && performance.now() < deadline) { /* spin */ }
      return counters().opsRun - before;
    }

    it('the default budget commits every 40 ops within one turn; the ops after it run in order and equal the cpu backend', async () => {
      const dev = gpuLike();
      const w = dev.tensor(wv, [K, K]);
      const before = counters().opsRun;
      let x = dev.tensor(x0, [1, K]);
      for (let i = 0; i < 100; i++) x = dev.linear(x, w);  // 100 dependent ops, one turn
      // Batches of ops 1-40 and 41-80 were committed by the budget and run while the turn goes
      // on; ops 81-100 stay in the open batch until the turn ends.
      expect(ranWithinTurn(before, 80, 5000)).toBe(80);
      expect(ranWithinTurn(before, 81, 50)).toBe(80);
      let r = cpu.tensor(x0, [1, K]);
      const wc = cpu.tensor(wv, [K, K]);
      for (let i = 0; i < 100; i++) r = cpu.linear(r, wc);
      expectBitExact(await x.toFloat32(), await r.toFloat32(), 'the 100th op');
    });

    it('a smaller budget (commitOps 4): every op runs once, in call order, bit for bit as the cpu backend', async () => {
      const dev = gpuLike({ commitOps: 4 });
      const w = dev.tensor(wv, [K, K]);
      const before = counters().opsRun;
      const xs: Tensor[] = [dev.tensor(x0, [1, K])];
      for (let i = 0; i < 10; i++) xs.push(dev.linear(xs[i], w));
      expect(ranWithinTurn(before, 8, 5000)).toBe(8);  // two full batches; ops 9-10 wait for the turn's end
      expect(ranWithinTurn(before, 9, 50)).toBe(8);
      const wc = cpu.tensor(wv, [K, K]);
      let r = cpu.tensor(x0, [1, K]);
      for (let i = 1; i <= 10; i++) {
        r = cpu.linear(r, wc);
        expectBitExact(await xs[i].toFloat32(), await r.toFloat32(), `op ${i}`);
      }
      await dev.synchronize();
      expect(counters().opsRun - before).toBe(10);
    });

    it('a failed batch committed mid-turn fails its own ops and their dependents only; a failed op of a later batch fails with its own error', async () => {
      // commitOps 4 in one turn: batch 1 = ops 1-4, batch 2 = ops 5-8 (the GPU fails it),
      // batch 3 = ops 9-12 (op 10 fails alone), batch 4 = op 13 (the turn's end).
      const dev = gpuLike({ commitOps: 4, failBatches: [2], failOps: [10], failCode: 'E_BACKEND' });
      const w = dev.tensor(wv, [K, K]);
      const x = dev.tensor(x0, [1, K]);
      const b1 = [dev.linear(x, w), dev.linear(x, w), dev.linear(x, w), dev.linear(x, w)];
      const b2: Tensor[] = [dev.linear(x, w)];
      for (let i = 0; i < 3; i++) b2.push(dev.linear(b2[i], w));
      const fromFailedBatch = dev.linear(b2[3], w);  // op 9
      const failedOp = dev.linear(x, w);  // op 10
      const fromEarlierBatch = dev.linear(b1[0], w);  // op 11
      const fromFailedOp = dev.linear(failedOp, w);  // op 12
      const last = dev.linear(x, w);  // op 13, committed at the turn's end
      const batchError = { name: 'TensorOpsError', code: 'E_BACKEND', message: 'the GPU failed running a command buffer (scripted)' };
      for (const t of [...b2, fromFailedBatch]) await expect(t.toFloat32()).rejects.toMatchObject(batchError);
      for (const t of [failedOp, fromFailedOp]) {
        await expect(t.toFloat32()).rejects.toMatchObject({ code: 'E_BACKEND', message: 'the GPU failed running op 10 (scripted)' });
      }
      const y1 = linearRef(x0, wv, 1, K, K);
      for (const t of [...b1, last]) expectClose(await t.toFloat32(), y1, 1e-5, 'an independent op');
      expectClose(await fromEarlierBatch.toFloat32(), linearRef(Float32Array.from(y1), wv, 1, K, K), 1e-4, 'op 11 (input from batch 1)');
      await dev.synchronize();  // failed batches are done too
      expectClose(await dev.linear(x, w).toFloat32(), y1, 1e-5, 'the device afterwards');
    });
  });

  it('close() with work queued: the work runs, then the device is gone', async () => {
    const dev = gpuLike({ delayUs: 1000 });
    const w = dev.tensor(wv, [K, K]);
    const ys = Array.from({ length: 50 }, () => dev.linear(dev.tensor(x0, [1, K]), w));
    await dev.close();
    expect(() => dev.linear(ys[0], w)).toThrow(expect.objectContaining({ code: 'E_DISPOSED' }));
    const want = linearRef(x0, wv, 1, K, K);
    for (const y of ys) expectClose(await y.toFloat32(), want, 1e-5, 'queued before close');
  });

  it('tensors of one device feed another device\'s ops (its stream waits for the op that writes them)', async () => {
    const slow = gpuLike({ delayUs: 5000 });
    const y = slow.linear(slow.tensor(x0, [1, K]), slow.tensor(wv, [K, K]));
    const z = cpu.linear(y, cpu.tensor(wv, [K, K]));
    const y64 = linearRef(x0, wv, 1, K, K);
    expectClose(await z.toFloat32(), linearRef(Float32Array.from(y64), wv, 1, K, K), 1e-4, 'z');
  });
});

describe('kernels still to compile (a Metal pipeline\'s first use)', () => {
  const internal = () => loadBinding()._internal as unknown as {
    asyncTestCounters(): { opsRun: number; preparedOnJsThread: number };
  };

  it('compile on a pool thread, never the JS thread: the op returns at once, the ops after it keep their order', async () => {
    const before = internal().asyncTestCounters().preparedOnJsThread;
    const dev = gpuLike({ compileUs: 300_000 });  // the first linear, matmul, ... each "compile" 300 ms
    const w = dev.tensor(wv, [K, K]);
    const t0 = performance.now();
    const chain = queuedChain(dev, 5, x0, wv);  // linear (compiles), then cast (declined), linear...
    const m = dev.matmul(chain, dev.tensor(wv, [K, K]));  // a second kernel to compile, behind them
    const queued = performance.now() - t0;
    expect(queued).toBeLessThan(100);
    let timerRan = false;
    setTimeout(() => { timerRan = true; }, 0);
    const got = await chain.toFloat32();
    expect(timerRan).toBe(true);
    expectBitExact(got, await awaitedChain(cpu, 5, x0, wv), 'the chain');
    const want = await cpu.matmul(cpu.tensor(got, [1, K]), cpu.tensor(wv, [K, K])).toFloat32();
    expectBitExact(await m.toFloat32(), want, 'the matmul after it');
    expect(performance.now() - t0).toBeGreaterThan(550);  // both compiles did happen
    // Compiled once: later ops encode on the JS thread at once.
    const t1 = performance.now();
    const again = dev.linear(dev.tensor(x0, [1, K]), w);
    expect(performance.now() - t1).toBeLessThan(50);
    expectClose(await again.toFloat32(), linearRef(x0, wv, 1, K, K), 1e-5, 'after compiling');
    expect(internal().asyncTestCounters().preparedOnJsThread).toBe(before);
  });

  it('a preparation that throws fails its op and what is computed from it; others run (a failed Metal compile falls back instead: library-fallback.test.ts)', async () => {
    const dev = gpuLike({ compileUs: 1000, compileFail: true });
    const x = dev.tensor(x0, [1, K]);
    const y = dev.linear(x, dev.tensor(wv, [K, K]));
    const downstream = dev.cast(y, 'float16');
    const independent = dev.cast(x, 'float16');  // declined by the "GPU": runs on the cpu backend
    for (const t of [y, downstream]) {
      await expect(t.toFloat32()).rejects.toMatchObject({ code: 'E_BACKEND', message: 'compiling the pipeline for linear failed (scripted)' });
    }
    expectBitExact(await independent.toFloat32(), await cpu.cast(cpu.tensor(x0, [1, K]), 'float16').toFloat32(), 'independent');
  });

  it('a worker that ends with ops in the open batch (no JS turn end to commit it) still runs them', async () => {
    const { Worker } = await import('node:worker_threads');
    const before = internal().asyncTestCounters().opsRun;
    const bindingPath = join(resolve(__dirname, '..'), 'dist', 'cjs', 'native.js');  // built by pretest
    // The worker queues 40 linears in one turn and exits in that turn, before setImmediate could
    // commit them: the device's finalizer, run as the environment goes, commits them (commitOps
    // above 40: no mid-turn commit does it first).
    const worker = new Worker(`
      const { loadBinding } = require(${JSON.stringify(bindingPath)});
      const b = loadBinding();
      const d = new b.NativeDevice(1, 'cpu', '', { asyncTestBackend: true, commitOps: 1000 });
      const w = d.tensor(new Float32Array(64 * 64).fill(0.01), [64, 64], 'float32');
      for (let i = 0; i < 40; i++) d.linear(d.tensor(new Float32Array(64).fill(1), [1, 64], 'float32'), w, null, null);
      process.exit(0);
    `, { eval: true });
    await new Promise((resolve) => worker.once('exit', resolve));
    const deadline = Date.now() + 5000;
    while (internal().asyncTestCounters().opsRun < before + 40 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(internal().asyncTestCounters().opsRun - before).toBe(40);
  });
});

describe('reads', () => {
  it('a large read copies off the JS thread: a zero-delay timer runs first, and the values are right', async () => {
    const n = 16 << 20;  // 64 MiB of float32
    const values = new Float32Array(n);
    for (let i = 0; i < n; i += 4099) values[i] = i;
    const t = cpu.tensor(values, [n]);
    const read = t.toFloat32().then((v) => ({ v }));
    const timer = new Promise((resolve) => setTimeout(() => resolve('timer'), 0));
    expect(await Promise.race([read, timer])).toBe('timer');
    const { v } = await read;
    expect(v.length).toBe(n);
    for (let i = 0; i < n; i += 4099) if (v[i] !== i) expect.fail(`[${i}] = ${v[i]}`);
    const bits = await cpu.cast(t, 'bfloat16').data();  // a large read in the storage type too
    expect(bits).toBeInstanceOf(Uint16Array);
    expect(bits[4099 * 2]).toBe(new Uint16Array(new Float32Array([4099 * 2]).buffer)[1]);
  });
});

describe('reshape', () => {
  it('is a view of the same storage, ready with the op that writes it, with one -1 worked out', async () => {
    const dev = gpuLike({ delayUs: 2000 });
    const y = dev.linear(dev.tensor(x0, [1, K]), dev.tensor(wv, [K, K]));  // queued on the "GPU"
    const heads = y.reshape([1, 4, 1, -1]);
    expect(heads.shape).toEqual([1, 4, 1, K / 4]);
    expect(heads.bytes).toBe(y.bytes);
    expectBitExact(await heads.toFloat32(), await y.toFloat32(), 'view');
    // An op on the view waits for y's op too, and disposing y leaves the view intact.
    const z = dev.linear(heads.reshape([1, K]), dev.tensor(wv, [K, K]));
    y.dispose();
    expectClose(await z.toFloat32(), linearRef(Float32Array.from(linearRef(x0, wv, 1, K, K)), wv, 1, K, K), 1e-4, 'z');
  });

  it('rejects shapes that do not hold the elements', () => {
    const t = cpu.tensor(new Float32Array(12), [3, 4]);
    expect(() => t.reshape([5, -1])).toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining('cannot hold') }));
    expect(() => t.reshape([2, 2])).toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining('12') }));
    expect(() => t.reshape([-1, -1])).toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining('more than one -1') }));
    expect(t.reshape([12]).shape).toEqual([12]);
  });
});
