// attention cases: causal GQA prefill and single-query decode against a KV cache, float32,
// against onnxruntime's GroupQueryAttention (com.microsoft; its CPU kernel does GQA with
// kv_num_heads < num_heads, causal). Our output is compared with the peer's once per case.
import { attentionCases } from './cases.mjs';
import { maxAbsDiff, randomFloats, relRms } from './data.mjs';
import { layerCopies, layerLoopStreaming } from './layer-loop.mjs';
import { measure, measureScaling, settle } from './timing.mjs';

export const attentionId = ({ B, Hq, Hkv, Lq, Lk, D, kv }) =>
  (Lq === Lk ? `attention prefill B${B} Hq${Hq} Hkv${Hkv} L${Lq} D${D} causal` : `attention decode B${B} Hq${Hq} Hkv${Hkv} Lq${Lq} Lk${Lk} D${D}`) +
  (kv ? ` ${kv} K/V` : '');

export async function runAttention(ctx) {
  const { dev, dev1, peer, ggml, mode, settings, wanted, log, record, kernelTimes } = ctx;
  const out = [];
  for (const c of attentionCases(mode)) {
    const id = attentionId(c);
    if (!wanted(id)) continue;
    log(id);
    const { B, Hq, Hkv, Lq, Lk, D } = c;
    const q = randomFloats(B * Hq * Lq * D, 11, 1);
    let k = randomFloats(B * Hkv * Lk * D, 12, 1);
    let v = randomFloats(B * Hkv * Lk * D, 13, 1);
    const decode = Lq < Lk;
    const kvShape = [B, Hkv, Lk, D];
    // A quantized KV cache (c.kv): K/V codes plus one scale byte per 32; the peer (float32 only)
    // gets the values they hold, so outputs still compare exactly.
    const kvBytes = c.kv ? 2 * B * Hkv * Lk * (D + D / 32) : 2 * B * Hkv * Lk * D * 4;
    const makeKv = async (x) => {
      const t = dev.tensor(x, kvShape);
      if (!c.kv) return t;
      const qz = await dev.quantize(t, { format: c.kv });
      t.dispose();
      return qz;
    };
    // Decode streams the K/V cache: a loop over layers, each with its own K and V (layer-loop.mjs),
    // for ours and the peer alike.
    const copies = decode ? layerCopies(kvBytes, settings.layerLoopBytes) : 1;
    const qt = dev.tensor(q, [B, Hq, Lq, D]);
    const kvs = [];
    for (let i = 0; i < copies; i++) kvs.push([await makeKv(k), await makeKv(v)]);
    if (c.kv) {
      const held = async (t) => { const d = await t.dequantize(); const a = await d.toFloat32(); d.dispose(); return a; };
      k = await held(kvs[0][0]);
      v = await held(kvs[0][1]);
    }
    const run = (d, i = 0) => d.attention(qt, kvs[i][0], kvs[i][1], { causal: true });
    const ours = await measure((i) => run(dev, i), { ...settings, cycle: copies, release: (o) => o.dispose(), keepLast: true, kernelTimes, sync: () => dev.synchronize() });
    const oOurs = await ours.last.toFloat32();
    ours.last.dispose();
    delete ours.last;
    await settle();
    // ggml's CPU backend (peer-ggml.mjs), right after ours; its decode reuses one K/V copy, so ours
    // is timed that way too.
    const ggmlPeer = ggml?.attention(c) ?? null;
    const oursFromCache = ggmlPeer?.fromCache ? await measure(() => run(dev, 0), { ...settings, release: (o) => o.dispose(), sync: () => dev.synchronize() }) : null;

    let peerResult = null;
    let check = { reference: 'onnxruntime GroupQueryAttention output', ok: oOurs.every(Number.isFinite) };
    if (peer) {
      const op = `GroupQueryAttention (com.microsoft) num_heads=${Hq} kv_num_heads=${Hkv}${Lq === Lk ? ', causal, no past' : ', past_key/past_value shared with present (KV cache)'}${c.kv ? `, float32 K/V holding our ${c.kv} values` : ''}`;
      try {
        const g = await peer.gqa(c);
        // Each feed set holds its own past_key / past_value arrays: one layer's cache each.
        const feedSets = Array.from({ length: copies }, () => g.feeds(q, k, v));
        const r = await measure((i) => g.run(feedSets[i]), { ...settings, cycle: copies, release: (t) => t.dispose?.(), keepLast: true });
        const oPeer = g.toOurs(r.last);
        r.last.dispose?.();
        delete r.last;
        await g.session.release?.();
        peerResult = { op, ...r, ...(decode ? { streaming: layerLoopStreaming(copies, kvBytes) } : {}) };
        const diff = maxAbsDiff(oOurs, oPeer);
        check = { ...check, maxAbsDiff: diff, relRms: relRms(oOurs, oPeer), bound: 1e-4, ok: diff <= 1e-4 };
      } catch (err) {
        // The peer failing is reported, never fatal: our side still runs.
        peerResult = { op, error: String(err?.message ?? err).split('\n')[0] };
        log(`peer failed: ${peerResult.error}`);
      }
      await settle();
    }

    let scaling = null;
    if (dev1 && Lq > 1) {
      // Each side's op until it ran on its own device (ops return before they run).
      const ran = (d) => async () => { const o = run(d); await d.synchronize(); return o; };
      scaling = await measureScaling(ran(dev1), ran(dev), {
        pairs: settings.scalingReps, release: (o) => o.dispose(),
      });
    }
    qt.dispose();
    for (const [kt, vt] of kvs) { kt.dispose(); vt.dispose(); }

    // Useful work: QK^T and PV, 2 flops per multiply-add each; causal prefill does about half.
    const pairs = Lq === Lk ? (Lq * (Lq + 1)) / 2 : Lq * Lk;
    out.push(record({
      id, op: 'attention', phase: Lq === Lk ? 'prefill' : 'decode', shape: { ...c, causal: true },
      flops: 4 * B * Hq * pairs * D,
      bytes: kvBytes,
      bytesWhat: 'K and V bytes',
      limit: Lq === Lk ? 'fma' : 'bandwidth',
      ...(decode ? { streaming: layerLoopStreaming(copies, kvBytes) } : {}),
      ours, ...(oursFromCache ? { oursFromCache } : {}), peer: peerResult, scaling, check,
      ...(ggmlPeer ? { morePeers: { ggml: ggmlPeer } } : {}),
    }));
  }
  return out;
}
