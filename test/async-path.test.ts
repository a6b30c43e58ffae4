// The addon's GPU-style op path, driven on Linux: a test-only backend (native/addon/
// async_test_backend.cc) accepts ops on the JS thread, holds them until the addon's flush at the
// end of the JS turn (as the metal backend holds one command buffer; an op never flushed would
// never settle), and completes them from another thread, as the metal backend's completed
// handlers do; like the metal backend it declines mixed-dtype matmul, dequantize and cast, so the
// addon runs those on the cpu backend. Results are compared with float64 references and with the
// plain cpu device (same kernels, so bit-identical), under concurrency and early dispose.
import { beforeAll, describe, expect, it } from 'vitest';
import { open, type Device } from '../lib/index';
import { deviceInfo } from '../lib/backend';
import { Device as DeviceClass } from '../lib/device';
import { loadBinding, type NativeDeviceHandle } from '../lib/native';
import { expectBitExact, expectBytes, expectClose, randn } from './helpers/compare';
import { asyncTestDevice } from './helpers/devices';
import { attentionRef, linearRef, roundToHalf } from './helpers/reference';

let cpu: Device;
let gpuLike: Device;
beforeAll(async () => {
  cpu = await open({ backend: 'cpu', threads: 2 });
  const Native = loadBinding().NativeDevice as unknown as new (
    threads: number, backend: string, tier: string, test: { asyncTestBackend: boolean },
  ) => NativeDeviceHandle;
  const native = new Native(2, 'cpu', '', { asyncTestBackend: true });
  gpuLike = new DeviceClass(native, deviceInfo(native.info()));
});

describe('ops completed from another thread', () => {
  it('linear (quantized w, bias, float16 out): equal to the cpu device, close to float64', async () => {
    const [M, N, K] = [5, 24, 64];
    const x = randn(M * K, 1), w = randn(N * K, 2), bias = randn(N, 3);
    const run = async (dev: Device) => {
      const wq = await dev.quantize(dev.tensor(w, [N, K]), { format: 'mxfp8' });
      const y = await dev.linear(dev.tensor(x, [M, K]), wq, { bias: dev.tensor(bias, [N]), outDtype: 'float16' });
      return { y: await y.toFloat32(), wq: await dev.dequantize(wq).toFloat32() };
    };
    const a = await run(gpuLike);
    const b = await run(cpu);
    expectBitExact(a.y, b.y, 'linear');
    expectClose(a.y, linearRef(x, a.wq, M, N, K, bias), 1e-2, 'linear vs float64');
  });

  it('quantize writes the same planes', async () => {
    const data = randn(4 * 96, 4);
    const [qa, qb] = await Promise.all([gpuLike, cpu].map((d) => d.quantize(d.tensor(data, [4, 96]), { format: 'mxfp4' })));
    expectBytes(await qa.codes(), await qb.codes(), 'codes');
    expectBytes(await qa.scales(), await qb.scales(), 'scales');
  });

  it('attention (GQA, causal): equal to the cpu device, close to float64', async () => {
    const d = { B: 1, Hq: 4, Hkv: 2, Lq: 3, Lk: 7, D: 64 };
    const q = randn(d.B * d.Hq * d.Lq * d.D, 5), k = randn(d.B * d.Hkv * d.Lk * d.D, 6), v = randn(d.B * d.Hkv * d.Lk * d.D, 7);
    const run = async (dev: Device) => (await dev.attention(
      dev.tensor(q, [d.B, d.Hq, d.Lq, d.D]), dev.tensor(k, [d.B, d.Hkv, d.Lk, d.D]), dev.tensor(v, [d.B, d.Hkv, d.Lk, d.D]),
      { causal: true },
    )).toFloat32();
    const a = await run(gpuLike);
    expectBitExact(a, await run(cpu), 'attention');
    expectClose(a, attentionRef(q, k, v, d, { causal: true }), 1e-4, 'attention vs float64');
  });

  it('matmul (batched a, float16 a and b, as the metal backend takes them): equal to the cpu device, close to float64', async () => {
    const [batch, M, N, K] = [2, 3, 5, 8];
    const a = roundToHalf(randn(batch * M * K, 14)), b = roundToHalf(randn(K * N, 15));
    const run = async (dev: Device) => (await dev.matmul(dev.tensor(a, [batch, M, K], 'float16'),
      dev.tensor(b, [K, N], 'float16'))).toFloat32();
    const c = await run(gpuLike);
    expectBitExact(c, await run(cpu), 'matmul');
    const bt = Float32Array.from({ length: N * K }, (_, i) => b[(i % K) * N + Math.floor(i / K)]);
    expectClose(c, linearRef(a, bt, batch * M, N, K), 1e-3, 'matmul vs float64 (float16 output)');
  });

  it('declined ops (mixed-dtype matmul, dequantize, cast) run on the cpu backend', async () => {
    const a = randn(3 * 8, 8), b = roundToHalf(randn(8 * 5, 9));
    const c = await gpuLike.matmul(gpuLike.tensor(a, [3, 8]), gpuLike.tensor(b, [8, 5], 'float16'));
    expectClose(await c.toFloat32(), linearRef(a, Float32Array.from({ length: 40 }, (_, i) => b[(i % 8) * 5 + Math.floor(i / 8)]), 3, 5, 8), 1e-5, 'matmul');
    const h = await gpuLike.cast(gpuLike.tensor(a, [3, 8]), 'bfloat16');
    expect((await h.data()).length).toBe(24);
  });

  it('200 concurrent linears all resolve to the right rows, inputs disposed while in flight', async () => {
    const K = 32, N = 8;
    const w = randn(N * K, 10);
    const wq = await gpuLike.quantize(gpuLike.tensor(w, [N, K]), { format: 'mxfp8' });
    const wd = await (await gpuLike.dequantize(wq)).toFloat32();
    const xs = Array.from({ length: 200 }, (_, i) => randn(K, 100 + i));
    const pending = xs.map((x) => {
      const t = gpuLike.tensor(x, [1, K]);
      const p = gpuLike.linear(t, wq);
      t.dispose();  // the op holds its own reference
      return p;
    });
    const ys = await Promise.all(pending);
    for (let i = 0; i < ys.length; i++) expectClose(await ys[i].toFloat32(), linearRef(xs[i], wd, 1, N, K), 1e-4, `y${i}`);
  });

  it('a backend that fails to encode an op fails its output with the message; the device stays usable', async () => {
    const x = gpuLike.tensor(randn(64, 13), [2, 32]);
    const failed = gpuLike.quantize(x, { format: 'mxint2' });
    const err = await failed.codes().catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'TensorOpsError', code: 'E_BACKEND' });
    expect((err as Error).message).toBe('encoding quantize to mxint2 failed: simulated encode error');
    const q = await gpuLike.quantize(x, { format: 'mxint8' });
    expect(q.shape).toEqual([2, 32]);
  });

  it('empty work never reaches it (Metal has no zero-size grid): the cpu backend writes it, in order, failing with a failed input', async () => {
    const counters = () => (loadBinding()._internal as unknown as { asyncTestCounters(): { opsRun: number } }).asyncTestCounters().opsRun;
    const wq = gpuLike.quantize(gpuLike.tensor(randn(8 * 32, 21), [8, 32]), { format: 'mxfp8' });
    await wq.codes();
    const before = counters();
    const bias = randn(8, 22);
    const empty = gpuLike.tensor(new Float32Array(0), [0, 32]);
    const outs = [
      gpuLike.linear(empty, wq), gpuLike.quantize(empty, { format: 'mxfp4' }).dequantize(), gpuLike.add(empty, gpuLike.tensor(randn(32, 1), [32])),
      gpuLike.softmax(empty), gpuLike.matmul(gpuLike.tensor(new Float32Array(0), [3, 0]), gpuLike.tensor(new Float32Array(0), [0, 4])),
      gpuLike.linear(gpuLike.tensor(new Float32Array(0), [2, 0]), gpuLike.quantize(gpuLike.tensor(new Float32Array(0), [8, 0]), { format: 'mxfp8' }),
        { bias: gpuLike.tensor(bias, [8]) }),
      gpuLike.attention(gpuLike.tensor(randn(2 * 3 * 64, 23), [1, 2, 3, 64]), gpuLike.tensor(new Float32Array(0), [1, 1, 0, 64]),
        gpuLike.tensor(new Float32Array(0), [1, 1, 0, 64])),
    ];
    const values = await Promise.all(outs.map((t) => t.toFloat32()));
    expect(values.slice(0, 4).map((v) => v.length)).toEqual([0, 0, 0, 0]);
    expect(Array.from(values[4])).toEqual(new Array(12).fill(0));
    expect(Array.from(values[5])).toEqual([...bias, ...bias]);
    expect(Array.from(values[6])).toEqual(new Array(2 * 3 * 64).fill(0));
    expect(counters()).toBe(before);
    // An empty op after a failed one fails with it, as any op computed from a failed input.
    const failing = asyncTestDevice({ failOps: [1] });
    const a = failing.quantize(failing.tensor(randn(64, 24), [2, 32]), { format: 'mxfp8' });
    await expect(failing.linear(a, failing.tensor(new Float32Array(0), [0, 32])).data()).rejects.toMatchObject({ code: 'E_OOM' });
    await failing.close();
  });

  it('bad input still fails at the call with a coded error, and the device stays usable', async () => {
    const x = gpuLike.tensor(randn(32, 11), [1, 32]);
    expect(() => gpuLike.linear(x, gpuLike.tensor(randn(32, 12), [2, 16]))).toThrow(expect.objectContaining({ code: "E_SHAPE" }));
    const y = await gpuLike.linear(x, gpuLike.tensor(randn(64, 12), [2, 32]));
    expect(y.shape).toEqual([1, 2]);
  });
});
