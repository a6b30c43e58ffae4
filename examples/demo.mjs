// The main job on the default device: one transformer block (GQA attention + SwiGLU MLP) over a
// few hundred tokens, with weights quantized to mxfp8 (attention) and mxfp4 (MLP), run next to the
// same block in float32. Prints the device, each quantized path's error against float32, and the
// time of each step. Ops return their outputs at once and run in order on the device; only reads
// (toFloat32) wait. Until the library has the layer's other ops (heads split, SiLU, residual add),
// those run here in JavaScript, between reads.
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

// [T, H*D] <-> [1, H, T, D]: the layout change between projections and attention.
function toHeads(x, H) {
  const out = new Float32Array(x.length);
  for (let t = 0; t < T; t++) for (let h = 0; h < H; h++) {
    out.set(x.subarray(t * H * D + h * D, t * H * D + (h + 1) * D), (h * T + t) * D);
  }
  return out;
}
function fromHeads(x, H) {
  const out = new Float32Array(x.length);
  for (let h = 0; h < H; h++) for (let t = 0; t < T; t++) {
    out.set(x.subarray((h * T + t) * D, (h * T + t + 1) * D), t * H * D + h * D);
  }
  return out;
}
const silu = (v) => v / (1 + Math.exp(-v));

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

async function block(W, label) {
  const proj = (name, input) => step(`${label} linear ${name}`, () => dev.linear(input, W[name]));
  const q = await proj('q', x), k = await proj('k', x), v = await proj('v', x);
  const heads = async (t, H) => dev.tensor(toHeads(await t.toFloat32(), H), [1, H, T, D]);
  const attn = await step(`${label} attention`, async () =>
    dev.attention(await heads(q, Hq), await heads(k, Hkv), await heads(v, Hkv), { causal: true }));
  const merged = dev.tensor(fromHeads(await attn.toFloat32(), Hq), [T, Hq * D]);
  const o = await proj('o', merged);
  const h = dev.tensor((await o.toFloat32()).map((val, i) => val + x_[i]), [T, d]);
  const gate = await (await proj('gate', h)).toFloat32();
  const up = await (await proj('up', h)).toFloat32();  // (the next issue's swiglu keeps this on the device)
  const act = dev.tensor(gate.map((g, i) => silu(g) * up[i]), [T, ff]);
  const y = await proj('down', act);
  return { q: await q.toFloat32(), attn: await attn.toFloat32(), o: await o.toFloat32(), y: await y.toFloat32() };
}
const x_ = await x.toFloat32();

const ref = await block(w, 'float32');
const quant = await block(wq, 'quantized');

console.log('error of the quantized block against float32 (relative RMS):');
console.log(`  q projection (mxfp8)      ${relError(quant.q, ref.q).toExponential(2)}`);
console.log(`  attention output          ${relError(quant.attn, ref.attn).toExponential(2)}`);
console.log(`  o projection (mxfp8)      ${relError(quant.o, ref.o).toExponential(2)}`);
console.log(`  block output (mxfp4 MLP)  ${relError(quant.y, ref.y).toExponential(2)}\n`);

console.log('time of each step:');
for (const [name, ms] of timings) console.log(`  ${name.padEnd(48)} ${ms.toFixed(2).padStart(9)} ms`);
