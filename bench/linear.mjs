// linear cases: y[M, N] = x[M, K] @ W^T with float32 activations, decode (M = 1) and prefill,
// for each weight format, against onnxruntime's MatMul (float32 weights) and MatMulNBits
// (4-bit and 8-bit, block 32, accuracy_level 0). Decode with the formats our integer kernels take
// is also timed with `activations: 'int8'`, next to MatMulNBits at accuracy_level 4 (int8
// activations too).
import { WEIGHT_FORMATS, linearShapes } from './cases.mjs';
import { maxAbsDiff, randomFloats, relRms } from './data.mjs';
import { fromMxint8, quantizeAsymmetric4, quantizeSymmetric } from './nbits.mjs';
import { ACCURACY_LEVEL, ACCURACY_LEVEL_INT8 } from './peer-ort.mjs';
import { layerCopies, layerLoopStreaming } from './layer-loop.mjs';
import { measure, measureScaling, settle } from './timing.mjs';

export const linearId = (M, N, K, fmt) => `linear ${M === 1 ? 'decode' : 'prefill'} ${M}x${N}x${K} ${fmt}`;

// Bounds on our output's error against the float32 result (relative RMS) for the check. Far above
// what each format gives on uniform data (see check.oursRelRms in any run), far below a broken
// kernel's error (~1).
const ERROR_BOUND = { float32: 1e-5, float16: 2e-3, mxfp8: 0.08, mxint8: 0.02, mxfp4: 0.25, affine4: 0.15 };

// The formats whose decode is also timed with int8 activations (the cpu backend's integer kernels).
const INT8_FORMATS = new Set(['mxfp4', 'mxint8', 'affine4']);

// Which onnxruntime op runs as the peer of each weight format.
const PEER_OF = {
  float32: 'matmul', float16: 'matmul', mxfp4: 'nbits4', affine4: 'nbits4zp', mxfp8: 'nbits8', mxint8: 'nbits8',
};

function peerDescription(key, level = ACCURACY_LEVEL) {
  const nb = (bits, zp, weights) =>
    `MatMulNBits bits=${bits} block_size=32 accuracy_level=${level}${zp ? ' with zero_points' : ''} (${weights})`;
  return {
    matmul: 'MatMul float32 (W^T pre-transposed initializer)',
    nbits4: nb(4, false, 'symmetric int4 of the same float32 W'),
    nbits4zp: nb(4, true, 'asymmetric uint4 of the same float32 W'),
    nbits8: nb(8, false, 'exactly our mxint8 weights'),
  }[key];
}

export async function runLinear(ctx) {
  const { dev, dev1, peer, blas, ggml, mode, settings, wanted, log, record, kernelTimes } = ctx;
  const { shapes, Ms } = linearShapes(mode);
  const out = [];
  for (const [N, K] of shapes) {
    const todo = Ms.flatMap((M) => WEIGHT_FORMATS.filter((f) => wanted(linearId(M, N, K, f))).map((f) => [M, f]));
    if (todo.length === 0) continue;
    const formats = new Set(todo.map(([, f]) => f));
    log(`linear ${N}x${K}: preparing weights (${[...formats].join(', ')})`);
    const W = randomFloats(N * K, N + K, 1);
    const wf32 = dev.tensor(W, [N, K]);
    // One weight tensor of format f, its own allocation (decode makes several: layer-loop.mjs).
    const makeWeights = async (f) => {
      if (f === 'float32') return dev.tensor(W, [N, K]);
      if (f === 'float16') return dev.tensor(W, [N, K], 'float16');
      return dev.quantize(wf32, { format: f, blockSize: 32 });
    };
    const weights = { float32: wf32 };
    for (const f of formats) if (f !== 'float32') weights[f] = await makeWeights(f);

    // Peer sessions, one per op kind and accuracy level, built on first use and shared by all M.
    const peers = {};
    const quantized = {};
    const planes = async (key) => {
      if (!(key in quantized)) {
        if (key === 'nbits4') quantized[key] = quantizeSymmetric(W, N, K, 4);
        if (key === 'nbits4zp') quantized[key] = quantizeAsymmetric4(W, N, K);
        if (key === 'nbits8') {
          const m = weights.mxint8 ?? (await dev.quantize(wf32, { format: 'mxint8', blockSize: 32 }));
          const codes = await m.codes();
          quantized[key] = fromMxint8(new Int8Array(codes.buffer, codes.byteOffset, codes.length), await m.scales(), N, K);
          if (!weights.mxint8) m.dispose();
        }
      }
      return quantized[key];
    };
    const peerFor = async (f, level = ACCURACY_LEVEL) => {
      const key = PEER_OF[f];
      if (!peer || (key === 'matmul' && level !== ACCURACY_LEVEL)) return null;
      const name = `${key}@${level}`;
      if (peers[name] === null) throw new Error('this peer session failed before');
      if (!(name in peers)) {
        log(`linear ${N}x${K}: building onnxruntime ${key} session${key === 'matmul' ? '' : ` (accuracy_level ${level})`}`);
        const q = key === 'matmul' ? null : await planes(key);
        const runner = q ? await peer.matmulNBits(q, N, K, level) : await peer.matmul(W, N, K);
        const bytes = q ? q.B.length + q.scales.byteLength + (q.zeroPoints?.length ?? 0) : N * K * 4;
        peers[name] = { name, runner, bytes, op: peerDescription(key, level), byM: {} };
      }
      return peers[name];
    };
    // Times a peer once per (session, M): formats that share an op share its number. Decode loops
    // over sessions of the same model, each with its own weights and without spin-waiting (see
    // OrtPeer.session), released after the timing.
    const timePeer = async (f, level, x, M) => {
      try {
        const p = await peerFor(f, level);
        if (!p) return { result: null, y: null };
        if (!p.byM[M]) {
          const copies = M === 1 ? layerCopies(p.bytes, settings.layerLoopBytes) : 1;
          const layers = [];
          try {
            if (copies > 1) log(`linear ${N}x${K}: ${copies} ${p.name} sessions for the layer loop`);
            while (layers.length < copies) layers.push(await p.runner.another({ spinning: false }));
            const runners = copies > 1 ? layers : [p.runner];
            const feeds = p.runner.feeds(x, M);
            const r = await measure((i) => runners[i].run(feeds), { ...settings, cycle: copies, release: (t) => t.dispose?.(), keepLast: true });
            const y = Float32Array.from(r.last.data);
            r.last.dispose?.();
            delete r.last;
            const streaming = copies > 1 ? { ...layerLoopStreaming(copies, p.bytes), sessions: copies, intraOpSpinning: false } : null;
            p.byM[M] = { r, y, streaming };
          } finally {
            for (const layer of layers) await layer.session.release?.();
          }
          await settle();
        }
        const { r, y, streaming } = p.byM[M];
        return { result: { op: p.op, ...r, bytes: p.bytes, ...(streaming ? { streaming } : {}) }, y };
      } catch (err) {
        // The peer failing is reported, never fatal: our side still runs.
        const error = String(err?.message ?? err).split('\n')[0];
        peers[`${PEER_OF[f]}@${level}`] = null;
        log(`peer failed: ${error}`);
        return { result: { op: peerDescription(PEER_OF[f], level), error }, y: null };
      }
    };

    for (const M of Ms) {
      const fmts = todo.filter(([m]) => m === M).map(([, f]) => f);
      if (fmts.length === 0) continue;
      const x = randomFloats(M * K, M * 7 + 3, 1);
      const xt = dev.tensor(x, [M, K]);
      // The float32 result every check compares against.
      const refT = await dev.linear(xt, wf32);
      const ref = await refT.toFloat32();
      refT.dispose();
      for (const f of fmts) {
        const id = linearId(M, N, K, f);
        log(id);
        const w = weights[f];
        const flops = 2 * M * N * K;
        // Decode: a loop over layers, each with its own copy of the weights (layer-loop.mjs).
        const copies = M === 1 ? layerCopies(w.bytes, settings.layerLoopBytes) : 1;
        const ws = [w];
        let ours, oursInt8 = null;
        const timeOurs = (options) => measure((i) => dev.linear(xt, ws[i], options), { ...settings, cycle: copies, release: (y) => y.dispose(), keepLast: true, kernelTimes, sync: () => dev.synchronize() });
        const lastOf = async (r) => { const y = await r.last.toFloat32(); r.last.dispose(); delete r.last; return y; };
        try {
          while (ws.length < copies) ws.push(await makeWeights(f));
          ours = await timeOurs(undefined);
          if (M === 1 && INT8_FORMATS.has(f)) {
            await settle();
            oursInt8 = await timeOurs({ activations: 'int8' });
          }
        } finally {
          for (const extra of ws.slice(1)) extra.dispose();
        }
        const yOurs = await lastOf(ours);
        const yOursInt8 = oursInt8 ? await lastOf(oursInt8) : null;
        await settle();
        // ggml's CPU backend (peer-ggml.mjs), right after ours; its decode reuses one copy of the
        // weights, so ours is timed that way too.
        const ggmlPeer = ggml?.linear(M, N, K, f) ?? null;
        const oursFromCache = ggmlPeer?.fromCache ? await measure(() => dev.linear(xt, w), { ...settings, release: (y) => y.dispose(), sync: () => dev.synchronize() }) : null;

        const { result: peerResult, y: yPeer } = await timePeer(f, ACCURACY_LEVEL, x, M);
        const { result: peerLevel4 } = await timePeer(f, ACCURACY_LEVEL_INT8, x, M);
        const { result: blasPeer, y: yBlas } = f === 'float32' && blas ? await timeBlas(blas, W, x, M, N, K, settings, log) : {};

        let scaling = null;
        if (dev1 && M > 1) {
          // Each side's op until it ran on its own device (ops return before they run).
          const ran = (d) => async () => { const y = d.linear(xt, w); await d.synchronize(); return y; };
          scaling = await measureScaling(ran(dev1), ran(dev), {
            pairs: settings.scalingReps, release: (y) => y.dispose(),
          });
        }

        const check = {
          reference: 'x @ W^T with the float32 W (our float32 result)',
          oursRelRms: relRms(yOurs, ref),
          bound: ERROR_BOUND[f],
          // int8 activations add x's rounding (~0.5% of y) to the format's own error.
          ...(yOursInt8 ? { oursInt8RelRms: relRms(yOursInt8, ref) } : {}),
        };
        if (yPeer) {
          check.peerRelRms = relRms(yPeer, ref);
          check.oursVsPeerMaxAbsDiff = maxAbsDiff(yOurs, yPeer);
          check.oursVsPeerRelRms = relRms(yOurs, yPeer);
          check.peerHasOurWeights = f === 'float32' || f === 'mxint8';
        }
        // Our float32 result is checked against the peer's (same weights, float32 arithmetic);
        // every other format against our float32 result, within the format's bound; mxint8 also
        // against the peer, which runs exactly the same weights.
        const relToPeer = check.peerHasOurWeights ? check.oursVsPeerRelRms : 0;
        // The float32 result is also checked against OpenBLAS's, where it ran.
        if (yBlas) check.oursVsOpenBlasRelRms = relRms(yOurs, yBlas);
        const relToBlas = check.oursVsOpenBlasRelRms ?? 0;
        const int8Ok = !yOursInt8 || check.oursInt8RelRms <= check.bound + 0.02;
        check.ok = Number.isFinite(check.oursRelRms) && check.oursRelRms <= check.bound && relToPeer <= 1e-5 && relToBlas <= 1e-5 && int8Ok;

        out.push(record({
          id, op: 'linear', phase: M === 1 ? 'decode' : 'prefill', weights: f,
          shape: { M, N, K },
          flops,
          bytes: w.bytes,
          bytesWhat: 'weight bytes',
          limit: M === 1 ? 'bandwidth' : 'fma',
          ...(M === 1 ? { streaming: layerLoopStreaming(copies, w.bytes) } : {}),
          ours,
          ...(oursInt8 ? { oursInt8 } : {}),
          ...(oursFromCache ? { oursFromCache } : {}),
          peer: peerResult,
          ...(peerLevel4 ? { peerInt8Activations: peerLevel4 } : {}),
          ...(blasPeer || ggmlPeer ? { morePeers: { ...(blasPeer ? { openblas: blasPeer } : {}), ...(ggmlPeer ? { ggml: ggmlPeer } : {}) } } : {}),
          scaling,
          check,
        }));
      }
      xt.dispose();
    }
    for (const w of Object.values(weights)) w.dispose();
    for (const p of Object.values(peers)) await p?.runner.session.release?.();
    for (const k of Object.keys(quantized)) delete quantized[k];
  }
  return out;
}

/**
 * OpenBLAS (peer-openblas.mjs) on the float32 case: decode as a layer loop over C copies of W, like
 * ours. Returns { result, y } (its output, for the check), as timePeer does. Failing is reported,
 * never fatal.
 */
async function timeBlas(blas, W, x, M, N, K, settings, log) {
  const op = blas.op(M);
  try {
    const copies = M === 1 ? layerCopies(N * K * 4, settings.layerLoopBytes) : 1;
    if (copies > 1) log(`linear ${N}x${K}: ${copies} OpenBLAS weight copies for the layer loop`);
    const ws = [W];
    while (ws.length < copies) ws.push(Float32Array.from(W));
    const y = new Float32Array(M * N);
    const r = await measure((i) => blas.linear(x, ws[i], y, M, N, K), { ...settings, cycle: copies });
    await settle();
    const result = { op, ...r, bytes: N * K * 4, ...(copies > 1 ? { streaming: layerLoopStreaming(copies, N * K * 4) } : {}) };
    return { result, y };
  } catch (err) {
    const error = String(err?.message ?? err).split('\n')[0];
    log(`OpenBLAS failed: ${error}`);
    return { result: { op, error }, y: null };
  }
}
