// The memory-bound ops of the model op set (issue 25): add, rmsNorm, add + rmsNorm, rope,
// softmax, embedding, on shapes of a 1B-8B model's prefill and a vocabulary of 128256. Bytes are
// what the op must move (inputs read and the output written, once each), over the measured read
// bandwidth (limit bandwidth). Peers where onnxruntime has a fused contrib op:
// SkipSimplifiedLayerNormalization (the residual add and RMSNorm in one, which ours runs as two
// queued ops) and RotaryEmbedding (its [B, S, H * D] input is our 'blhd' layout).
import { DataType, buildModel, initializer, valueInfo } from './onnx-model.mjs';
import { maxAbsDiff, randomFloats } from './data.mjs';
import { measure, settle } from './timing.mjs';

function shapes(mode) {
  if (mode === 'smoke') return { rows: 64, width: 256, heads: 4, L: 64, D: 64, vocab: 4096, ids: 64, embDim: 128, softmaxRows: 2 };
  return { rows: 4096, width: 4096, heads: 32, L: 2048, D: 128, vocab: 128256, ids: 4096, embDim: 2048, softmaxRows: 64 };
}

async function peerSkipNorm(peer, rows, width, x, skip, gamma, eps) {
  const bytes = buildModel({
    node: { op: 'SkipSimplifiedLayerNormalization', domain: 'com.microsoft', inputs: ['x', 'skip', 'gamma'], outputs: ['y', '', '', 'sum'], attrs: { epsilon: eps } },
    inputs: [valueInfo('x', DataType.FLOAT, [1, rows, width]), valueInfo('skip', DataType.FLOAT, [1, rows, width])],
    outputs: [valueInfo('y', DataType.FLOAT, [1, rows, width]), valueInfo('sum', DataType.FLOAT, [1, rows, width])],
    initializers: [initializer('gamma', DataType.FLOAT, [width], gamma)],
  });
  const session = await peer.session(bytes);
  const feeds = { x: peer.tensor('float32', x, [1, rows, width]), skip: peer.tensor('float32', skip, [1, rows, width]) };
  return { session, run: async () => (await session.run(feeds)).y };
}

async function peerRope(peer, { heads, L, D }, x, cos, sin) {
  const bytes = buildModel({
    node: { op: 'RotaryEmbedding', domain: 'com.microsoft', inputs: ['x', 'pos', 'cos', 'sin'], outputs: ['y'], attrs: { interleaved: 0, num_heads: heads } },
    inputs: [valueInfo('x', DataType.FLOAT, [1, L, heads * D]), valueInfo('pos', DataType.INT64, [1, L])],
    outputs: [valueInfo('y', DataType.FLOAT, [1, L, heads * D])],
    initializers: [initializer('cos', DataType.FLOAT, [L, D / 2], cos), initializer('sin', DataType.FLOAT, [L, D / 2], sin)],
  });
  const session = await peer.session(bytes);
  const feeds = { x: peer.tensor('float32', x, [1, L, heads * D]), pos: peer.tensor('int64', BigInt64Array.from({ length: L }, (_, i) => BigInt(i)), [1, L]) };
  return { session, run: async () => (await session.run(feeds)).y };
}

export async function runModelOps(ctx) {
  const { dev, peer, settings, wanted, log, record } = ctx;
  const s = shapes(ctx.mode);
  const out = [];
  const F = 4;  // float32 bytes
  const ourOpts = { ...settings, release: (t) => t.dispose(), sync: () => dev.synchronize(), kernelTimes: ctx.kernelTimes };

  async function one(id, { bytes, run, peerRun, check, peerOp, peerMissing, shape }) {
    if (!wanted(id)) return;
    log(id);
    const ours = await measure(run, ourOpts);
    await settle();
    let peerResult = null;
    let peerWhy = peerMissing ?? (peer ? null : 'onnxruntime-node not available');
    let checked = null;
    if (peer && peerRun) {
      try {
        const p = await peerRun();
        peerResult = { op: peerOp, ...(await measure(p.run, { ...settings, release: (t) => t.dispose?.() })) };
        checked = check ? await check(await p.run()) : null;
        await p.session.release?.();
      } catch (err) {
        peerWhy = `onnxruntime could not run ${peerOp}: ${err.message}`;
      }
      await settle();
    }
    out.push(record({
      id, op: 'model', phase: null, weights: null, shape, flops: null, bytes,
      bytesWhat: 'bytes read and written', limit: 'bandwidth', ours, peer: peerResult,
      ...(peerResult ? {} : { peerMissing: peerWhy ?? 'no onnxruntime op' }), scaling: null, check: checked,
    }));
  }

  const { rows, width } = s;
  const n = rows * width;
  const x = randomFloats(n, 1, 1), skip = randomFloats(n, 2, 1), gamma = randomFloats(width, 3, 1);
  const xt = dev.tensor(x, [rows, width]), st = dev.tensor(skip, [rows, width]), gt = dev.tensor(gamma, [width]);
  await one(`model add ${rows}x${width} float32`, { bytes: 3 * n * F, shape: { rows, width }, run: () => dev.add(xt, st), peerMissing: 'no fused onnxruntime op to compare' });
  await one(`model rmsNorm ${rows}x${width} float32`, { bytes: 2 * n * F, shape: { rows, width }, run: () => dev.rmsNorm(xt, gt, { eps: 1e-6 }), peerMissing: 'see add + rmsNorm' });
  await one(`model add + rmsNorm ${rows}x${width} float32`, {
    bytes: 4 * n * F, shape: { rows, width }, peerOp: 'com.microsoft SkipSimplifiedLayerNormalization',
    run: () => { const sum = dev.add(xt, st); const y = dev.rmsNorm(sum, gt, { eps: 1e-6 }); sum.dispose(); return y; },
    peerRun: () => peerSkipNorm(peer, rows, width, x, skip, gamma, 1e-6),
    check: async (t) => {
      const sum = dev.add(xt, st);
      const d = maxAbsDiff(await dev.rmsNorm(sum, gt, { eps: 1e-6 }).toFloat32(), t.data);
      return { reference: 'onnxruntime SkipSimplifiedLayerNormalization', maxAbsDiff: d, bound: 1e-4, ok: d <= 1e-4 };
    },
  });
  xt.dispose(); st.dispose(); gt.dispose();

  const { heads, L, D } = s;
  const rn = L * heads * D;
  const rx = randomFloats(rn, 4, 1);
  const rt = dev.tensor(rx, [1, L, heads, D]);
  const cos = new Float32Array(L * D / 2), sin = new Float32Array(L * D / 2);
  for (let p = 0; p < L; p++) for (let i = 0; i < D / 2; i++) {
    const a = p * 10000 ** (-2 * i / D);
    cos[p * D / 2 + i] = Math.cos(a);
    sin[p * D / 2 + i] = Math.sin(a);
  }
  await one(`model rope 1x${L}x${heads}x${D} float32 neox`, {
    bytes: 2 * rn * F, shape: { L, heads, D }, peerOp: 'com.microsoft RotaryEmbedding',
    run: () => dev.rope(rt, { layout: 'blhd' }),
    peerRun: () => peerRope(peer, s, rx, cos, sin),
    check: async (t) => {
      const d = maxAbsDiff(await dev.rope(rt, { layout: 'blhd' }).toFloat32(), t.data);
      return { reference: 'onnxruntime RotaryEmbedding', maxAbsDiff: d, bound: 1e-3, ok: d <= 1e-3 };
    },
  });
  rt.dispose();

  for (const r of [1, s.softmaxRows]) {
    const sx = dev.tensor(randomFloats(r * s.vocab, 5, 8), [r, s.vocab]);
    await one(`model softmax ${r}x${s.vocab} float32`, { bytes: 2 * r * s.vocab * F, shape: { rows: r, cols: s.vocab }, run: () => dev.softmax(sx), peerMissing: 'onnxruntime Softmax not wired up here' });
    sx.dispose();
  }

  const table = dev.tensor(randomFloats(s.vocab * s.embDim, 6, 1), [s.vocab, s.embDim], 'float16');
  const ids = dev.tensor(Int32Array.from({ length: s.ids }, (_, i) => (i * 7919) % s.vocab), [s.ids], 'int32');
  await one(`model embedding ${s.ids} of ${s.vocab}x${s.embDim} float16`, { bytes: 2 * s.ids * s.embDim * 2, shape: { ids: s.ids, vocab: s.vocab, dim: s.embDim }, run: () => dev.embedding(table, ids), peerMissing: 'onnxruntime Gather not wired up here' });
  table.dispose(); ids.dispose();
  return out;
}
