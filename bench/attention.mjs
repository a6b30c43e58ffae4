// attention cases: causal GQA prefill and single-query decode against a KV cache, float32,
// against onnxruntime's GroupQueryAttention (com.microsoft; its CPU kernel does GQA with
// kv_num_heads < num_heads, causal). Our output is compared with the peer's once per case.
import { attentionCases } from './cases.mjs';
import { maxAbsDiff, randomFloats, relRms } from './data.mjs';
import { flushCaches, measure, settle } from './timing.mjs';

export const attentionId = ({ B, Hq, Hkv, Lq, Lk, D }) =>
  Lq === Lk ? `attention prefill B${B} Hq${Hq} Hkv${Hkv} L${Lq} D${D} causal` : `attention decode B${B} Hq${Hq} Hkv${Hkv} Lq${Lq} Lk${Lk} D${D}`;

export async function runAttention(ctx) {
  const { dev, dev1, peer, mode, settings, wanted, log, record } = ctx;
  const out = [];
  for (const c of attentionCases(mode)) {
    const id = attentionId(c);
    if (!wanted(id)) continue;
    log(id);
    const { B, Hq, Hkv, Lq, Lk, D } = c;
    const q = randomFloats(B * Hq * Lq * D, 11, 1);
    const k = randomFloats(B * Hkv * Lk * D, 12, 1);
    const v = randomFloats(B * Hkv * Lk * D, 13, 1);
    const qt = dev.tensor(q, [B, Hq, Lq, D]);
    const kt = dev.tensor(k, [B, Hkv, Lk, D]);
    const vt = dev.tensor(v, [B, Hkv, Lk, D]);
    const run = (d) => d.attention(qt, kt, vt, { causal: true });
    // Decode streams the K/V cache: caches are flushed before each run of ours and the peer's alike.
    const flush = Lq < Lk ? { before: flushCaches } : {};
    const ours = await measure(() => run(dev), { ...settings, ...flush, release: (o) => o.dispose(), keepLast: true });
    const oOurs = await ours.last.toFloat32();
    ours.last.dispose();
    delete ours.last;
    await settle();

    let peerResult = null;
    let check = { reference: 'onnxruntime GroupQueryAttention output', ok: oOurs.every(Number.isFinite) };
    if (peer) {
      const op = `GroupQueryAttention (com.microsoft) num_heads=${Hq} kv_num_heads=${Hkv}${Lq === Lk ? ', causal, no past' : ', past_key/past_value shared with present (KV cache)'}`;
      try {
        const g = await peer.gqa(c);
        const feeds = g.feeds(q, k, v);
        const r = await measure(() => g.run(feeds), { ...settings, ...flush, release: (t) => t.dispose?.(), keepLast: true });
        const oPeer = g.toOurs(r.last);
        r.last.dispose?.();
        delete r.last;
        await g.session.release?.();
        peerResult = { op, ...r };
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
      const s = await measure(() => run(dev1), {
        warmup: 1, minReps: settings.scalingReps, maxReps: settings.scalingReps, targetMs: 0, release: (o) => o.dispose(),
      });
      scaling = { threads: 1, medianMs: s.medianMs, reps: s.reps };
    }
    qt.dispose(); kt.dispose(); vt.dispose();

    // Useful work: QK^T and PV, 2 flops per multiply-add each; causal prefill does about half.
    const pairs = Lq === Lk ? (Lq * (Lq + 1)) / 2 : Lq * Lk;
    out.push(record({
      id, op: 'attention', phase: Lq === Lk ? 'prefill' : 'decode', shape: { ...c, causal: true },
      flops: 4 * B * Hq * pairs * D,
      bytes: 2 * B * Hkv * Lk * D * 4,
      bytesWhat: 'K and V bytes',
      limit: Lq === Lk ? 'fma' : 'bandwidth',
      ours, peer: peerResult, scaling, check,
    }));
  }
  return out;
}
