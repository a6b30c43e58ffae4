// A seeded fuzz of every public entry point, run in a child process by fuzz.test.ts (a crash
// takes down only the child, and the parent sees its signal). Each call gets arguments drawn
// from hostile values: shapes whose products overflow, wrong or shared typed arrays, getters
// and Proxies, options of every type, disposed tensors, a closed device. The only acceptable
// outcomes are success or a TensorOpsError with a stable code; anything else is reported.
// Usage: node fuzz-child.cjs <dist/cjs/index.js> <seed> <calls>
'use strict';
const [distPath, seedArg, callsArg] = process.argv.slice(2);
const mto = require(distPath);
const { open, TensorOpsError, encodeElements, decodeElements } = mto;

const CODES = new Set(['E_SHAPE', 'E_DTYPE', 'E_FORMAT', 'E_DISPOSED', 'E_BACKEND', 'E_OOM', 'E_ARG', 'E_LOAD']);

// mulberry32: a small, well-known seeded generator; the sequence only has to be repeatable.
let state = Number(seedArg) >>> 0;
function rand() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (n) => Math.floor(rand() * n);
const pick = (xs) => xs[int(xs.length)];
const chance = (p) => rand() < p;

const FORMATS = ['mxfp8', 'mxfp8_e5m2', 'mxfp6_e3m2', 'mxfp6_e2m3', 'mxfp4', 'mxint8', 'mxint4', 'mxint2', 'affine4', 'affine8'];
const DTYPES = ['float32', 'float16', 'bfloat16', 'bool', 'int32'];
const ELEMENTS = ['fp8_e4m3', 'fp8_e5m2', 'fp6_e3m2', 'fp6_e2m3', 'fp4_e2m1', 'int8', 'int4', 'int2', 'e8m0'];

function throwingProxy(target) {
  return new Proxy(target, { get() { throw new Error('trap'); }, ownKeys() { throw new Error('trap'); } });
}
function shiftingArray(first, later) {
  // Reads `first` once, then `later`: a check that reads twice sees two different shapes.
  const a = [...first];
  let reads = 0;
  Object.defineProperty(a, 0, { get: () => (reads++ === 0 ? first[0] : later), enumerable: true });
  return a;
}

function smallShape() {
  const rank = 1 + int(4);
  return Array.from({ length: rank }, () => pick([1, 2, 3, 4, 8, 32, 64]));
}
function anyShape() {
  return pick([
    smallShape, smallShape, smallShape,
    () => [2 ** 32, 2 ** 32], () => [67280421310721, 1, 1, 274177], () => [2 ** 53, 2], () => [2 ** 26, 2 ** 26],
    () => [0], () => [-1, 4], () => [1.5], () => [NaN], () => [Infinity], () => ['2'], () => [Symbol('d')],
    () => [2n], () => null, () => ({}), () => 'shape', () => new Array(9).fill(1), () => [, 2], () => [],
    () => shiftingArray([2, 2], 2 ** 40), () => throwingProxy([2, 2]), () => new Proxy([4, 32], {}),
    () => new Int32Array([2, 2]),
  ])();
}
function count(shape) {
  try { return Array.isArray(shape) ? shape.reduce((n, d) => n * (typeof d === 'number' ? d : 1), 1) : 4; } catch { return 4; }
}
function anyData(shape) {
  const n = count(shape);
  const ok = Number.isSafeInteger(n) && n >= 0 && n <= 1 << 16 ? n : 4;
  const len = chance(0.7) ? ok : pick([0, 1, ok + 1, 3]);
  return pick([
    () => new Float32Array(len).map(() => rand() * 8 - 4),
    () => new Uint16Array(len).map(() => int(65536)),
    () => new Uint8Array(len).map(() => int(2)),
    () => new Float32Array(new SharedArrayBuffer(len * 4)),
    () => new Uint16Array(new SharedArrayBuffer(len * 2)),
    () => new Float64Array(len), () => new Int32Array(len), () => new DataView(new ArrayBuffer(len * 4)),
    () => new ArrayBuffer(len * 4), () => Array.from({ length: Math.min(len, 64) }, () => rand()),
    () => ['a', 'b'], () => null, () => undefined, () => 42, () => throwingProxy([1, 2]),
    () => { const a = new Float32Array(len); structuredClone(a.buffer, { transfer: [a.buffer] }); return a; },  // detached
    () => new Float32Array([NaN, Infinity, -Infinity, 3.4e38, -0, 1e-45, 2 ** 120, -(2 ** 126)].slice(0, Math.max(len, 1))),
  ])();
}

// Tensors the fuzz keeps: made by the calls themselves (live, disposed, from a closed device).
const pool = [];
function anyTensor() {
  if (pool.length && chance(0.85)) return pick(pool);
  return pick([null, undefined, {}, { shape: [2, 2] }, 'tensor', 7, throwingProxy({}), () => {}]);
}
function keep(t) {
  if (t && typeof t === 'object' && 'shape' in t) {
    pool.push(t);
    if (pool.length > 48) pool.splice(int(pool.length), 1);
  }
}
function anyValue() {
  return pick([
    undefined, null, 0, -1, 1.5, NaN, Infinity, 2 ** 53, 'x', '', true, Symbol('v'), 3n, [], {}, new Map(), new Date(),
    () => {}, throwingProxy({}), pick(FORMATS), pick(DTYPES), 32, 64, 128, anyTensor(),
  ]);
}
function anyOptions(keys) {
  return pick([
    () => undefined, () => null, () => new Map([[keys[0] ?? 'x', anyValue()]]), () => new Date(), () => [anyValue()],
    () => 'options', () => 5, () => Symbol('o'), () => throwingProxy({}),
    () => { const o = {}; Object.defineProperty(o, keys[0] ?? 'x', { get() { throw new Error('getter'); }, enumerable: true }); return o; },
    () => ({ [pick([...keys, 'typo', 'transposeB'])]: anyValue() }),
    () => Object.fromEntries(keys.filter(() => chance(0.5)).map((k) => [k, anyValue()])),
    () => Object.fromEntries(keys.filter(() => chance(0.6)).map((k) => [k, sensible(k)])),
  ])();
}
function sensible(key) {
  switch (key) {
    case 'format': return pick(FORMATS);
    case 'blockSize': return pick([32, 64, 128, undefined]);
    case 'bias': case 'mask': return anyTensor();
    case 'outDtype': return pick(['float32', 'float16', 'bfloat16']);
    case 'scale': return pick([0.125, 1, -2, NaN]);
    case 'causal': return pick([true, false]);
    case 'backend': return pick(['cpu', 'auto', 'metal', 'gpu']);
    case 'threads': return pick([1, 2, 0, 2000, 1.5]);
    case 'shape': return chance(0.6) ? [pick([1, 2, 4]), pick([32, 64, 128])] : anyShape();
    case 'axis': return pick([0, 1, -1, 2, 5, -9, 1.5]);
    case 'offset': case 'start': return pick([0, 1, 2, -1, 2 ** 40]);
    case 'end': return pick([1, 2, 4, 0, 2 ** 53]);
    case 'eps': return pick([1e-6, 0, -1, NaN]);
    case 'positions': case 'freqs': return anyTensor();
    case 'dims': return pick([2, 4, 7, 64, 0]);
    case 'style': return pick(['neox', 'interleaved', 'gptj']);
    case 'layout': return pick(['bhld', 'blhd', 'bshd']);
    case 'approximate': return pick(['none', 'tanh', 'erf']);
    case 'temperature': return pick([0, 0.7, 1, -1, Infinity]);
    case 'topK': return pick([0, 1, 5, -3, 1e9]);
    case 'topP': return pick([0.9, 1, 0, 1.5]);
    case 'seed': return pick([0, 7, 2 ** 53, -1]);
    case 'codes': return anyData([int(300)]);
    case 'scales': case 'biases': return pick([new Uint8Array(int(16)), new Uint16Array(int(16)).fill(0x3c00), new Uint16Array(4).fill(0x7e00), anyData([4])]);
    default: return anyValue();
  }
}

let dev;
// Consistent operands most of the time (so that calls reach the kernels), hostile ones otherwise.
function dense(shape, dtype = pick(['float32', 'float32', 'float16', 'bfloat16'])) {
  const n = shape.reduce((a, b) => a * b, 1);
  const values = new Float32Array(n).map(() => (chance(0.02) ? pick([NaN, Infinity, 3e38, 2 ** 110]) : rand() * 4 - 2));
  return dev.tensor(values, shape, dtype);
}
async function weight(N, K) {
  const w = dense([N, K], 'float32');
  if (chance(0.3)) return w;
  const format = pick(FORMATS);
  return dev.quantize(w, { format, blockSize: format.startsWith('affine') ? pick([32, 64]) : 32 });
}
const sometimes = (good, bad) => (chance(0.7) ? good() : bad());
const calls = {
  open: async () => { const d = await open(sometimes(() => ({ backend: 'cpu', threads: 1 + int(3) }), () => anyOptions(['backend', 'threads']))); await d.close(); },
  tensor: () => sometimes(
    () => dense(smallShape()),
    () => { const s = anyShape(); return dev.tensor(anyData(s), s, chance(0.7) ? pick(DTYPES) : anyValue()); }),
  fromQuantized: () => sometimes(
    async () => { const q = await weight(2 + int(3), 64); return q.codes ? dev.fromQuantized({ format: q.format, shape: [...q.shape], blockSize: q.blockSize,
      codes: await q.codes(), scales: await q.scales(), ...(q.format.startsWith('affine') ? { biases: await q.biases() } : {}) }) : q; },
    () => dev.fromQuantized(anyOptions(['format', 'shape', 'codes', 'scales', 'biases', 'blockSize']))),
  quantize: () => sometimes(() => weight(1 + int(4), 32 * (1 + int(4))), () => dev.quantize(anyTensor(), anyOptions(['format', 'blockSize']))),
  dequantize: () => dev.dequantize(anyTensor(), chance(0.7) ? pick(DTYPES) : anyValue()),
  cast: () => dev.cast(anyTensor(), chance(0.7) ? pick(DTYPES) : anyValue()),
  linear: () => sometimes(
    async () => { const M = 1 + int(12), N = 1 + int(20), K = 32 * (1 + int(3));
      return dev.linear(dense([M, K]), await weight(N, K), chance(0.3) ? { bias: dense([N]) } : chance(0.2) ? { outDtype: pick(['float16', 'bfloat16']) } : chance(0.3) ? { activations: 'int8' } : undefined); },
    () => dev.linear(anyTensor(), anyTensor(), anyOptions(['bias', 'outDtype', 'activations']))),
  matmul: () => sometimes(
    () => { const M = 1 + int(9), N = 1 + int(9), K = 1 + int(40); return dev.matmul(dense([M, K]), dense([K, N])); },
    () => dev.matmul(anyTensor(), anyTensor(), chance(0.8) ? undefined : anyOptions(['transposeB']))),
  attention: () => sometimes(
    async () => { const Hkv = 1 + int(2), Hq = Hkv * (1 + int(2)), Lq = 1 + int(5), Lk = 1 + int(40), D = pick([32, 64]);
      const kv = () => (chance(0.3) ? dev.quantize(dense([1, Hkv, Lk, D], 'float32'), { format: 'mxfp8' }) : dense([1, Hkv, Lk, D], 'float32'));
      const opts = chance(0.7) ? { causal: chance(0.5), ...(chance(0.3) ? { scale: 0.1 } : {}) } : anyOptions(['scale', 'causal', 'mask']);
      return dev.attention(dense([1, Hq, Lq, D], 'float32'), await kv(), await kv(), opts); },
    () => dev.attention(anyTensor(), anyTensor(), anyTensor(), anyOptions(['scale', 'causal', 'mask']))),
  // The model ops (issue 25): consistent operands most of the time, anything otherwise.
  elementwise: () => sometimes(
    () => { const s = smallShape(); const b = s.slice(int(s.length)); const op = pick(['add', 'mul', 'swiglu']);
      return dev[op](dense(s), dense(b.length ? b : [1])); },
    () => dev[pick(['add', 'mul', 'swiglu', 'silu', 'gelu', 'softmax'])](anyTensor(), anyTensor(), anyOptions(['approximate']))),
  unary: () => sometimes(
    () => { const x = dense(smallShape()); const op = pick(['silu', 'gelu', 'softmax', 'argmax']); return op === 'gelu' ? dev.gelu(x, { approximate: pick(['none', 'tanh']) }) : dev[op](x); },
    () => dev[pick(['silu', 'gelu', 'softmax', 'argmax'])](anyTensor(), anyOptions(['approximate']))),
  norm: () => sometimes(
    () => { const s = smallShape(); const D = s[s.length - 1]; return chance(0.5) ? dev.rmsNorm(dense(s), dense([D]), { eps: 1e-6 }) : dev.layerNorm(dense(s), dense([D]), chance(0.5) ? dense([D]) : null); },
    () => dev[pick(['rmsNorm', 'layerNorm'])](anyTensor(), anyTensor(), chance(0.5) ? anyTensor() : anyOptions(['eps']), anyOptions(['eps']))),
  rope: () => sometimes(
    () => { const L = 1 + int(5), D = pick([8, 64]); const pos = chance(0.3) ? { positions: dev.tensor(Int32Array.from({ length: L }, () => int(5000) - 10), [L], 'int32') } : { offset: int(100) };
      return dev.rope(dense([1, 1 + int(3), L, D]), { ...pos, style: pick(['neox', 'interleaved']), ...(chance(0.3) ? { dims: D / 2 } : {}) }); },
    () => dev.rope(anyTensor(), anyOptions(['offset', 'positions', 'base', 'dims', 'style', 'freqs', 'layout']))),
  pickOps: () => sometimes(
    () => { const x = dense([1 + int(3), 1 + int(300)]); return chance(0.5) ? dev.topK(x, 1 + int(3)).indices : dev.sample(x, { temperature: pick([0, 1]), topK: int(5), topP: pick([0.5, 1]), seed: int(100) }); },
    () => (chance(0.5) ? dev.topK(anyTensor(), anyValue()) : dev.sample(anyTensor(), anyOptions(['temperature', 'topK', 'topP', 'seed'])))),
  layout: () => sometimes(
    () => { const s = smallShape(); const x = dense(s); const ax = int(s.length);
      return pick([() => dev.transpose(x, [...s.keys()].reverse()), () => dev.slice(x, { axis: ax, start: 0, end: s[ax] }),
        () => dev.concat([x, x], ax), () => { dev.write(x, dense(s, x.dtype), { axis: ax, offset: 0 }); return x; }])(); },
    () => pick([() => dev.transpose(anyTensor(), anyValue()), () => dev.slice(anyTensor(), anyOptions(['axis', 'start', 'end'])),
      () => dev.concat(pick([[anyTensor(), anyTensor()], anyValue()]), anyValue()), () => dev.write(anyTensor(), anyTensor(), anyOptions(['axis', 'offset']))])()),
  gather: () => sometimes(
    async () => { const V = 1 + int(40), E = 1 + int(3);
      if (chance(0.5)) return dev.embedding(await weight(V, 64), dev.tensor(Int32Array.from({ length: 3 }, () => int(V + 2) - 1), [3], 'int32'));
      if (chance(0.3)) return dev.groupRows(dev.tensor(Int32Array.from({ length: 2 * 3 }, () => int(E + 2) - 1), [3, 2], 'int32'), E)[pick(['sizes', 'rows', 'positions'])];
      const sizes = Array.from({ length: E }, () => int(3)); const T = sizes.reduce((a, b) => a + b, 0) || 1;
      return dev.groupedLinear(dense([T, 32]), dev.quantize(dense([E, 4, 32], 'float32'), { format: 'mxfp4' }), dev.tensor(Int32Array.from(sizes), [E], 'int32')); },
    () => pick([() => dev.embedding(anyTensor(), anyTensor()), () => dev.groupRows(anyTensor(), anyValue()).rows,
      () => dev.groupedLinear(anyTensor(), anyTensor(), anyTensor(), anyOptions(['outDtype', 'activations']))])()),
  // Empty dimensions: a 0 somewhere in otherwise consistent operands of every op family, read back.
  empty: async () => {
    const s = smallShape(); s[int(s.length)] = 0;
    const ax = int(s.length), D = s[s.length - 1], x = dense(s);
    const z = () => (chance(0.5) ? 0 : 1 + int(5));
    const [M, N, K] = chance(0.5) ? [z(), z(), 32 * int(2)] : [1 + int(3), 1 + int(3), 0];
    const out = await pick([
      () => dev[pick(['add', 'mul', 'swiglu'])](x, dense(s.slice(int(s.length)).map((d) => (chance(0.3) ? 1 : d)))),
      () => dev[pick(['silu', 'gelu', 'softmax', 'argmax', 'cast'])](x, 'float16'),
      () => dev[pick(['rmsNorm', 'layerNorm'])](x, dense([D])),
      () => (chance(0.5) ? dev.topK(x, 1 + int(2)).values : dev.sample(x, { seed: int(9) })),
      () => dev.transpose(x, [...s.keys()].reverse()),
      () => { const at = int(s[ax] + 1); return dev.slice(x, { axis: ax, start: at, end: at }); },
      () => dev.concat([x, dense(s, x.dtype), x], ax),
      () => { dev.write(x, dense(s, x.dtype), { axis: ax, offset: 0 }); return x; },
      () => dev.linear(dense([M, K]), chance(0.5) ? dense([N, K]) : dev.quantize(dense([N, K], 'float32'), { format: pick(FORMATS) }),
        chance(0.5) ? { bias: dense([N]) } : undefined),
      () => dev.matmul(dense([M, K]), dense([K, N])),
      () => { const [B, Hq, Lq, Lk] = [z(), 2 * z(), z(), z()]; const Hkv = Hq ? Hq / 2 : pick([0, 1]);
        return dev.attention(dense([B, Hq, Lq, 32]), dense([B, Hkv, Lk, 32]), dense([B, Hkv, Lk, 32]), { causal: chance(0.5) }); },
      () => dev.embedding(dense([1 + int(4), D]), dev.tensor(new Int32Array(s.length > 1 ? 0 : 2), s.length > 1 ? [0] : [2], 'int32')),
      () => dev.groupedLinear(dense([0, 32]), dev.quantize(dense([2, 4, 32], 'float32'), { format: 'mxfp4' }), dev.tensor(new Int32Array(2), [2], 'int32')),
      () => dev.quantize(dense([z(), 32 * int(2)], 'float32'), { format: pick(FORMATS) }).dequantize(),
      () => dev.rope(dense([1, 2, 0, 8]), { style: pick(['neox', 'interleaved']) }),
    ])();
    await out.toFloat32();
    return out;
  },
  // Methods of the tensors themselves (live, disposed, of a closed device), never of stand-ins.
  read: () => {
    if (!pool.length) return undefined;
    const t = pick(pool);
    const method = pick(['data', 'toFloat32', 'codes', 'scales', 'biases', 'dequantize', 'astype', 'toString']);
    return typeof t[method] === 'function' ? t[method](chance(0.5) ? pick(DTYPES) : anyValue()) : undefined;
  },
  dispose: () => (pool.length && chance(0.3) ? pick(pool).dispose() : undefined),
  encode: () => encodeElements(chance(0.8) ? pick(ELEMENTS) : anyValue(), anyData([int(64)])),
  decode: () => decodeElements(chance(0.8) ? pick(ELEMENTS) : anyValue(), anyData([int(64)])),
};
const names = Object.keys(calls);

// Turns (synchronous or Promise) outcomes into a verdict.
const failures = [];
const inflight = [];
const outcomes = {};  // call -> outcome ('ok' or an error code) -> count
function tally(name, outcome) {
  const o = (outcomes[name] ??= {});
  o[outcome] = (o[outcome] ?? 0) + 1;
}
function judge(name, err) {
  if (err instanceof TensorOpsError && CODES.has(err.code)) return tally(name, err.code);
  tally(name, 'unexpected');
  let text;
  try { text = err instanceof Error ? `${err.name}: ${err.message}` : String(err); } catch { text = 'unprintable'; }
  failures.push({ call: name, error: text, code: err && err.code });
}

async function main() {
  dev = await open({ backend: 'cpu', threads: 2 });
  const total = Number(callsArg);
  for (let i = 0; i < total; i++) {
    const name = pick(names);
    try {
      const r = calls[name]();
      if (r && typeof r.then === 'function') {
        const p = r.then((v) => { tally(name, 'ok'); keep(v); }, (e) => judge(name, e));
        if (chance(0.5)) await p; else inflight.push(p);
      } else {
        tally(name, 'ok');
        keep(r);
      }
    } catch (e) {
      judge(name, e);
    }
    if (i % 97 === 0) {
      // Now and then a device is closed with ops in flight, and a fresh one takes over.
      if (chance(0.2)) { const old = dev; dev = await open({ backend: 'cpu', threads: 1 + int(2) }); old.close().catch((e) => judge('close', e)); }
      await Promise.all(inflight.splice(0));
    }
  }
  await Promise.all(inflight);
  await dev.close();
  process.stdout.write(JSON.stringify({ calls: total, failures: failures.slice(0, 20), failureCount: failures.length, outcomes }) + '\n');
}
main().catch((e) => { process.stdout.write(JSON.stringify({ fatal: String(e && e.stack || e) }) + '\n'); process.exitCode = 3; });
