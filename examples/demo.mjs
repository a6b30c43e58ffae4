// The main job on the default device: one decoder block (RMSNorm, GQA attention with RoPE and a
// KV cache, SwiGLU MLP, residual adds) over a prompt of a few hundred tokens, then a few decode
// steps appending to the cache, with weights quantized to mxfp8 (attention) and mxfp4 (MLP), next
// to the same block in float32. The whole block stays on the device: ops return their outputs at
// once and run in order; nothing is read back until the end of each step (toFloat32). Prints the
// device, each quantized path's error against float32, and the time of each step.
import { open } from 'metal-tensorops';

const T = 256;                 // tokens
const d = 1024;                // model width
const Hq = 16, Hkv = 4, D = 64; // GQA: 4 query heads per kv head
const ff = 2816;               // MLP width

// Deterministic normal-ish data (so runs compare), scaled like initialised weights.
function randn(n, seed, scale) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return Float32Array.from({ length: n }, () => (next() + next() + next() + next() - 2) * scale);
}

function relError(got, want) {
  let num = 0, den = 0;
  for (let i = 0; i < want.length; i++) { num += (got[i] - want[i]) ** 2; den += want[i] ** 2; }
  return Math.sqrt(num / den);
}

// Times fn's ops until they ran (synchronize), for the table at the end.
const timings = [];
async function step(name, fn) {
  const t0 = performance.now();
  const result = await fn();
  await dev.synchronize();
  timings.push([name, performance.now() - t0]);
  return result;
}

const dev = await open();
console.log(`device: ${dev.info.backend} (tier ${dev.info.tier}) on ${dev.info.name}, ${dev.info.os} ${dev.info.arch}` +
  (dev.info.threads ? `, ${dev.info.threads} threads` : ''));
if (dev.info.fallbackReason) console.log(`        (${dev.info.fallbackReason})`);
console.log(`block: ${T} tokens, width ${d}, attention Hq=${Hq} Hkv=${Hkv} D=${D} causal, MLP ${ff}\n`);

const x = dev.tensor(randn(T * d, 1, 1), [T, d]);
const w = {
  q: dev.tensor(randn(Hq * D * d, 2, 0.03), [Hq * D, d]),
  k: dev.tensor(randn(Hkv * D * d, 3, 0.03), [Hkv * D, d]),
  v: dev.tensor(randn(Hkv * D * d, 4, 0.03), [Hkv * D, d]),
  o: dev.tensor(randn(d * Hq * D, 5, 0.03), [d, Hq * D]),
  gate: dev.tensor(randn(ff * d, 6, 0.03), [ff, d]),
  up: dev.tensor(randn(ff * d, 7, 0.03), [ff, d]),
  down: dev.tensor(randn(d * ff, 8, 0.02), [d, ff]),
};
const formatOf = { q: 'mxfp8', k: 'mxfp8', v: 'mxfp8', o: 'mxfp8', gate: 'mxfp4', up: 'mxfp4', down: 'mxfp4' };
const wq = {};
await step('quantize weights (mxfp8 attention, mxfp4 MLP)', () => {
  for (const [name, t] of Object.entries(w)) wq[name] = dev.quantize(t, { format: formatOf[name] });  // queued
});

const ctx = T + 8;  // the KV cache holds the prompt and the decode steps
const ones = dev.tensor(new Float32Array(d).fill(1), [d]);  // RMSNorm weights

// One block over `L` new tokens at positions [pos, pos + L) of the sequence, appending their keys
// and values to the cache: every op is queued, nothing leaves the device.
function block(W, cache, input, L, pos) {
  const h = dev.rmsNorm(input, ones, { eps: 1e-6 });
  const heads = (t, H) => t.reshape([1, L, H, D]);  // a view: [L, H*D] as [1, L, H, D]
  const q = dev.rope(heads(dev.linear(h, W.q), Hq), { offset: pos, layout: 'blhd' });
  const k = dev.rope(heads(dev.linear(h, W.k), Hkv), { offset: pos, layout: 'blhd' });
  const v = heads(dev.linear(h, W.v), Hkv);
  // The cache is [1, Hkv, ctx, D]; the new rows go at positions pos.. (write is in place, in order).
  dev.write(cache.k, dev.transpose(k, [0, 2, 1, 3]), { axis: 2, offset: pos });
  dev.write(cache.v, dev.transpose(v, [0, 2, 1, 3]), { axis: 2, offset: pos });
  const seen = (c) => dev.slice(c, { axis: 2, start: 0, end: pos + L });
  const attn = dev.attention(dev.transpose(q, [0, 2, 1, 3]), seen(cache.k), seen(cache.v), { causal: true });
  const merged = dev.transpose(attn, [0, 2, 1, 3]).reshape([L, Hq * D]);
  const r = dev.add(input, dev.linear(merged, W.o));
  const m = dev.rmsNorm(r, ones, { eps: 1e-6 });
  const y = dev.add(r, dev.linear(dev.swiglu(dev.linear(m, W.gate), dev.linear(m, W.up)), W.down));
  return { attn, y };
}

async function run(W, label) {
  const cache = { k: dev.tensor(new Float32Array(Hkv * ctx * D), [1, Hkv, ctx, D]), v: dev.tensor(new Float32Array(Hkv * ctx * D), [1, Hkv, ctx, D]) };
  const prefill = await step(`${label} block, prompt of ${T} tokens`, () => block(W, cache, x, T, 0));
  const out = { attn: await prefill.attn.toFloat32(), y: await prefill.y.toFloat32(), decode: [] };
  let last = dev.slice(prefill.y, { axis: 0, start: T - 1, end: T });
  for (let t = 0; t < 4; t++) {
    const { y } = await step(`${label} block, decode step ${t + 1} (cache ${T + t + 1})`, () => block(W, cache, last, 1, T + t));
    out.decode.push(...await y.toFloat32());
    last = y;
  }
  return out;
}

const ref = await run(w, 'float32');
const quant = await run(wq, 'quantized');

console.log('error of the quantized block against float32 (relative RMS):');
console.log(`  attention output (prompt)  ${relError(quant.attn, ref.attn).toExponential(2)}`);
console.log(`  block output (prompt)      ${relError(quant.y, ref.y).toExponential(2)}`);
console.log(`  block output (4 decodes)   ${relError(quant.decode, ref.decode).toExponential(2)}\n`);

console.log('time of each step:');
for (const [name, ms] of timings) console.log(`  ${name.padEnd(48)} ${ms.toFixed(2).padStart(9)} ms`);
