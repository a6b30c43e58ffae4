// decode step: one token through a small model's layers (shaped like a 1B-class decoder: 16 layers
// of width 2048, GQA 32/8 heads of 64, MLP 8192, mxfp4 weights, an mxfp8 KV cache of 1024
// positions), timed end to end as tokens/s next to the sum of its ops' kernel-alone times, in the
// same run. Three ways of running the same step:
//   - "layer": the layer as a user writes it today: the ops queued, the layer's other ops
//     (RMS norms, residual adds, SiLU * up) in JavaScript between reads, until the library has them;
//   - "device ops, queued": the step's device ops only (the projections and attention, each
//     taking the previous op's output), queued without a read until the token's end: what the
//     stream costs on top of the kernels;
//   - "device ops, awaited one by one": the same ops with a wait after each, as every op cost
//     when ops returned Promises (0.1): the per-op overhead this change removed.
// The K/V caches are attended as they are (appending the new token's K and V needs the next
// issue's write()); the k and v projections still run.
import { randomFloats } from './data.mjs';
import { median, settle } from './timing.mjs';

export const DECODE_STEP_SHAPES = {
  full: { layers: 16, d: 2048, Hq: 32, Hkv: 8, D: 64, ff: 8192, context: 1024, tokens: 12 },
  quick: { layers: 16, d: 2048, Hq: 32, Hkv: 8, D: 64, ff: 8192, context: 1024, tokens: 4 },
  smoke: { layers: 2, d: 256, Hq: 4, Hkv: 2, D: 64, ff: 512, context: 64, tokens: 2 },
};

const now = () => Number(process.hrtime.bigint()) / 1e6;  // ms

// x / rms(x): the layer's norms (their weights are ones here).
function rmsNorm(x) {
  let ss = 0;
  for (const v of x) ss += v * v;
  const k = 1 / Math.sqrt(ss / x.length + 1e-6);
  return x.map((v) => v * k);
}

// Random codes and scales, imported as they are (quantizing 1 GB of float32 weights would cost
// the run seconds and change nothing timed here).
function randomBytes(n, seed, mask = 0xff) {
  const out = new Uint8Array(n);
  let s = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    out[i] = s & mask;
  }
  return out;
}
// Random mxfp4 codes have an RMS of ~2.93; the scale makes a row's dot product with an O(1) x
// O(1) too (2^-7 for K = 2048, 2^-8 for 8192), so values neither blow up nor sink into float32
// subnormals (which run far slower) over the layers.
function mxfp4Weight(dev, N, K, seed) {
  const scale = 127 - Math.round(Math.log2(Math.sqrt(K) * 2.93));
  return dev.fromQuantized({ format: 'mxfp4', shape: [N, K], codes: randomBytes(N * K / 2, seed), scales: new Uint8Array(N * K / 32).fill(scale) });
}
function mxfp8Cache(dev, s, seed) {
  const n = s.Hkv * s.context * s.D;
  // E4M3 codes without the NaN codes (magnitude 0x7F): mask 0xFE keeps bit 0 clear.
  return dev.fromQuantized({ format: 'mxfp8', shape: [1, s.Hkv, s.context, s.D], codes: randomBytes(n, seed, 0xfe), scales: new Uint8Array(n / 32).fill(124) });
}

export async function runDecodeStep(ctx) {
  const { dev, mode, log, wanted, kernelTimes } = ctx;
  if (!wanted('decode step')) return null;
  const s = DECODE_STEP_SHAPES[mode];
  log(`decode step: ${s.layers} layers of width ${s.d}, GQA ${s.Hq}/${s.Hkv} heads of ${s.D}, MLP ${s.ff}, mxfp4 weights, mxfp8 KV cache of ${s.context}`);
  const layers = Array.from({ length: s.layers }, (_, l) => ({
    q: mxfp4Weight(dev, s.Hq * s.D, s.d, 10 * l + 1),
    k: mxfp4Weight(dev, s.Hkv * s.D, s.d, 10 * l + 2),
    v: mxfp4Weight(dev, s.Hkv * s.D, s.d, 10 * l + 3),
    o: mxfp4Weight(dev, s.d, s.Hq * s.D, 10 * l + 4),
    gate: mxfp4Weight(dev, s.ff, s.d, 10 * l + 5),
    up: mxfp4Weight(dev, s.ff, s.d, 10 * l + 6),
    down: mxfp4Weight(dev, s.d, s.ff, 10 * l + 7),
    kc: mxfp8Cache(dev, s, 10 * l + 8),
    vc: mxfp8Cache(dev, s, 10 * l + 9),
  }));
  const weightBytes = layers.reduce((n, L) => n + Object.values(L).reduce((m, t) => m + t.bytes, 0), 0);
  const x0 = randomFloats(s.d, 99, 1);
  const queueUs = [];  // the JS thread's cost of each op call (device ops, queued)

  // The device ops of one layer, each taking the previous op's output: 8 ops.
  const deviceLayer = (L, x, timeCalls) => {
    const call = timeCalls ? (f) => { const t0 = now(); const r = f(); queueUs.push((now() - t0) * 1e3); return r; } : (f) => f();
    const q = call(() => dev.linear(x, L.q));
    call(() => dev.linear(x, L.k));
    call(() => dev.linear(x, L.v));
    const a = call(() => dev.attention(q.reshape([1, s.Hq, 1, s.D]), L.kc, L.vc));
    const o = call(() => dev.linear(a.reshape([1, s.Hq * s.D]), L.o));
    const g = call(() => dev.linear(o, L.gate));
    call(() => dev.linear(o, L.up));
    return call(() => dev.linear(g, L.down));
  };
  const opsPerToken = 8 * s.layers;

  const variants = {
    // The layer as written today: norms, residual adds and SiLU * up in JS, between reads.
    layer: async () => {
      let h = x0;
      for (const L of layers) {
        const x = dev.tensor(rmsNorm(h), [1, s.d]);
        const q = dev.linear(x, L.q);
        dev.linear(x, L.k);
        dev.linear(x, L.v);
        const a = dev.attention(q.reshape([1, s.Hq, 1, s.D]), L.kc, L.vc);
        const o = await dev.linear(a.reshape([1, s.Hq * s.D]), L.o).toFloat32();
        const r = h.map((v, i) => v + o[i]);
        const hx = dev.tensor(rmsNorm(r), [1, s.d]);
        const [g, u] = await Promise.all([dev.linear(hx, L.gate).toFloat32(), dev.linear(hx, L.up).toFloat32()]);
        const act = dev.tensor(g.map((v, i) => (v / (1 + Math.exp(-v))) * u[i]), [1, s.ff]);
        const down = await dev.linear(act, L.down).toFloat32();
        h = r.map((v, i) => v + down[i]);
      }
    },
    queued: async (timeCalls) => {
      let x = dev.tensor(x0, [1, s.d]);
      for (const L of layers) x = deviceLayer(L, x, timeCalls);
      await x.data();
    },
    awaited: async () => {
      let x = dev.tensor(x0, [1, s.d]);
      const step = async (t) => { await dev.synchronize(); return t; };
      for (const L of layers) {
        const q = await step(dev.linear(x, L.q));
        await step(dev.linear(x, L.k));
        await step(dev.linear(x, L.v));
        const a = await step(dev.attention(q.reshape([1, s.Hq, 1, s.D]), L.kc, L.vc));
        const o = await step(dev.linear(a.reshape([1, s.Hq * s.D]), L.o));
        const g = await step(dev.linear(o, L.gate));
        await step(dev.linear(o, L.up));
        x = await step(dev.linear(g, L.down));
      }
      await x.data();
    },
  };

  const result = { shape: { ...s, weights: 'mxfp4', kvCache: 'mxfp8' }, weightBytes, opsPerToken, variants: {} };
  for (const [name, run] of Object.entries(variants)) {
    await run(false);  // warm-up: first touches of the weights, buffer pool
    await settle();
    const stepMs = [], kernelMs = [];
    for (let t = 0; t < s.tokens; t++) {
      kernelTimes?.start();
      const t0 = now();
      await run(name === 'queued' && t === 0);
      stepMs.push(now() - t0);
      const k = kernelTimes?.take() ?? [];
      kernelMs.push(k.reduce((a, b) => a + b, 0) / 1e3);
    }
    const endToEnd = median(stepMs), kernels = median(kernelMs);
    result.variants[name] = {
      tokensPerSecond: Number((1e3 / endToEnd).toPrecision(4)),
      stepMs: Number(endToEnd.toPrecision(4)),
      kernelSumMs: kernelTimes ? Number(kernels.toPrecision(4)) : null,
      // End to end over the kernels alone: 1.0 is a step with no cost between kernels.
      overKernels: kernelTimes && kernels > 0 ? Number((endToEnd / kernels).toPrecision(4)) : null,
      // What each device op cost beyond its kernel (the layer variant's JS work included).
      perOpOverheadUs: kernelTimes ? Number((((endToEnd - kernels) * 1e3) / opsPerToken).toPrecision(3)) : null,
      tokens: s.tokens,
    };
    log(`decode step, ${name}: ${result.variants[name].tokensPerSecond} tokens/s, ${result.variants[name].stepMs} ms a token, kernels ${result.variants[name].kernelSumMs} ms`);
  }
  result.queueCallUs = { median: Number(median(queueUs).toPrecision(3)), calls: queueUs.length };
  for (const L of layers) for (const t of Object.values(L)) t.dispose();
  await settle();
  return result;
}
