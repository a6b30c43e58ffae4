// decode step: one token through a small model's layers (shaped like a 1B-class decoder: 16 layers
// of width 2048, GQA 32/8 heads of 64, MLP 8192, mxfp4 weights, an mxfp8 KV cache of 1024
// positions), timed end to end as tokens/s next to the sum of its ops' kernel-alone times, in the
// same run. Three ways of running the same step:
//   - "layer": the whole layer on the device, as a model runs it: RMS norms, the projections, RoPE,
//     the KV cache append (write), attention, residual adds, SwiGLU, all queued, one read a token;
//   - "device ops, queued": the step's device ops only (the projections and attention, each
//     taking the previous op's output), queued without a read until the token's end: what the
//     stream costs on top of the kernels;
//   - "device ops, awaited one by one": the same ops with a wait after each, as every op cost
//     when ops returned Promises (0.1): the per-op overhead this change removed.
// "device ops" attend the caches as they are; "layer" appends the token's K and V (quantized to
// the caches' mxfp8 on the way) at the last position first.
import { randomFloats } from './data.mjs';
import { measureQueueCost } from './queue-cost.mjs';
import { median, settle } from './timing.mjs';

export const DECODE_STEP_SHAPES = {
  full: { layers: 16, d: 2048, Hq: 32, Hkv: 8, D: 64, ff: 8192, context: 1024, tokens: 12 },
  quick: { layers: 16, d: 2048, Hq: 32, Hkv: 8, D: 64, ff: 8192, context: 1024, tokens: 4 },
  smoke: { layers: 2, d: 256, Hq: 4, Hkv: 2, D: 64, ff: 512, context: 64, tokens: 2 },
};

const now = () => Number(process.hrtime.bigint()) / 1e6;  // ms

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
    kd: dev.dequantize(mxfp8Cache(dev, s, 10 * l + 8), 'float16'),  // the layer variant's caches
    vd: dev.dequantize(mxfp8Cache(dev, s, 10 * l + 9), 'float16'),
  }));
  const streamed = ['q', 'k', 'v', 'o', 'gate', 'up', 'down', 'kc', 'vc'];  // weights and mxfp8 caches
  const weightBytes = layers.reduce((n, L) => n + streamed.reduce((m, key) => m + L[key].bytes, 0), 0);
  const x0 = randomFloats(s.d, 99, 1);
  const ones = dev.tensor(new Float32Array(s.d).fill(1), [s.d]);  // the norms' weights
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
  const opsPerToken = { layer: 20 * s.layers, queued: 8 * s.layers, awaited: 8 * s.layers };

  const variants = {
    // The whole layer on the device; the token's K and V go into dense float16 caches of the
    // same length (mxfp8 caches append whole blocks: the next step), then attention reads them.
    layer: async () => {
      let h = dev.tensor(x0, [1, s.d]);
      const pos = s.context - 1;
      for (const L of layers) {
        const x = dev.rmsNorm(h, ones, { eps: 1e-6 });
        const q = dev.rope(dev.linear(x, L.q).reshape([1, s.Hq, 1, s.D]), { offset: pos });
        const k = dev.rope(dev.linear(x, L.k).reshape([1, s.Hkv, 1, s.D]), { offset: pos });
        dev.write(L.kd, dev.cast(k, 'float16'), { axis: 2, offset: pos });
        dev.write(L.vd, dev.cast(dev.linear(x, L.v).reshape([1, s.Hkv, 1, s.D]), 'float16'), { axis: 2, offset: pos });
        const a = dev.attention(dev.cast(q, 'float16'), L.kd, L.vd);
        const r = dev.add(h, dev.linear(a.reshape([1, s.Hq * s.D]), L.o));
        const m = dev.rmsNorm(r, ones, { eps: 1e-6 });
        h = dev.add(r, dev.linear(dev.swiglu(dev.linear(m, L.gate), dev.linear(m, L.up)), L.down));
      }
      await h.data();
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
      perOpOverheadUs: kernelTimes ? Number((((endToEnd - kernels) * 1e3) / opsPerToken[name]).toPrecision(3)) : null,
      ops: opsPerToken[name],
      tokens: s.tokens,
    };
    log(`decode step, ${name}: ${result.variants[name].tokensPerSecond} tokens/s, ${result.variants[name].stepMs} ms a token, kernels ${result.variants[name].kernelSumMs} ms`);
  }
  result.queueCallUs = { median: Number(median(queueUs).toPrecision(3)), calls: queueUs.length };
  for (const L of layers) for (const t of Object.values(L)) t.dispose();
  await settle();
  result.queueCost = await measureQueueCost(ctx);
  log(`queueing a ${result.queueCost.op}: ${result.queueCost.medianUs} us median, ${result.queueCost.meanUs} us mean`);
  await settle();
  return result;
}
