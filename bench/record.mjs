// Turns a measured case into the record the JSON document holds: throughput, the fraction of the
// machine's limit, the ratio to the peer, thread scaling, and the targets of issue 6.
import { targetsFor } from './targets.mjs';

const round = (x, sig = 4) => (x === null || x === undefined || !Number.isFinite(x) ? x ?? null : Number(x.toPrecision(sig)));

function timing(r, flops, bytes) {
  const s = r.medianMs / 1e3;
  const out = {
    medianMs: round(r.medianMs), minMs: round(r.minMs), maxMs: round(r.maxMs), reps: r.reps,
    gflops: flops ? round(flops / s / 1e9) : null,
    gbps: bytes ? round(bytes / s / 1e9) : null,
  };
  if (r.medianMs < 1) out.medianUs = round(r.medianMs * 1e3);
  // ours: the median time in the kernel alone (timing.mjs: kernelTimes), without the trips
  // between the JS thread and the pool threads that the median above includes.
  if (r.kernelMedianMs) out.kernel = timing({ medianMs: r.kernelMedianMs, minMs: null, maxMs: null }, flops, bytes);
  return out;
}

// Throughput t over the machine's limit: GFLOP/s over the FMA peak, or GB/s over read bandwidth.
const fraction = (limit, t, peaks) =>
  limit === 'fma' && t.gflops ? round(t.gflops / peaks.fmaGflops, 3)
    : limit === 'bandwidth' && t.gbps ? round(t.gbps / peaks.readGBps, 3) : null;

/** record(c) for a run with `threads` threads and measured `peaks` (machine.mjs). */
export function makeRecord(peaks, threads, { targets = true, peerMissing = 'onnxruntime-node not available' } = {}) {
  return (c) => {
    const ours = timing(c.ours, c.flops, c.bytes);
    const peerTiming = (p) => {
      if (!p) return null;
      if (p.error) return { op: p.op, error: p.error };
      return {
        op: p.op, ...timing(p, c.flops, p.bytes ?? c.bytes), ...(p.bytes ? { bytes: p.bytes } : {}), ...(p.streaming ? { streaming: p.streaming } : {}),
        ...(p.note ? { note: p.note } : {}),
      };
    };
    // peer median / our median: above 1, ours is faster. A peer timed on data it reuses from the
    // caches (fromCache: ggml's decode) is compared with ours timed the same way, where measured.
    const ratioTo = (p, base = c.ours) => (p && !p.error ? round(p.medianMs / base.medianMs, 3) : null);
    const peer = peerTiming(c.peer);
    const rec = {
      id: c.id,
      op: c.op,
      phase: c.phase ?? null,
      weights: c.weights ?? null,
      shape: c.shape,
      threads,
      flops: c.flops ?? null,
      bytes: c.bytes ?? null,
      bytesWhat: c.bytesWhat ?? null,
      ours,
      peer,
      ...(c.peer ? {} : { peerMissing: c.peerMissing ?? peerMissing }),
      ratio: ratioTo(c.peer),
      // linear with MatMulNBits peers: the same op at accuracy_level 4 (int8 activations), for
      // information; the targets use the default level (peer above).
      ...(c.peerInt8Activations
        ? { peerInt8Activations: peerTiming(c.peerInt8Activations), ratioInt8Activations: ratioTo(c.peerInt8Activations) }
        : {}),
      // linear decode with `activations: 'int8'` (ours), and that level-4 peer over it.
      ...(c.oursInt8
        ? { oursInt8Activations: timing(c.oursInt8, c.flops, c.bytes), ratioInt8ToInt8: c.peerInt8Activations ? ratioTo(c.peerInt8Activations, c.oursInt8) : null }
        : {}),
      // Peers beyond onnxruntime, for information (no target reads them): OpenBLAS on the float32
      // linear cases (peer-openblas.mjs), ggml's CPU backend where a test-backend-ops binary was
      // given (peer-ggml.mjs). Each with its own ratio (its median over ours).
      ...(c.morePeers
        ? {
          morePeers: Object.fromEntries(Object.entries(c.morePeers).map(([k, p]) => {
            const cached = p.fromCache && c.oursFromCache;
            return [k, { ...peerTiming(p), ratio: ratioTo(p, cached ? c.oursFromCache : c.ours), ...(cached ? { ratioTo: 'oursFromCache' } : {}) }];
          })),
        }
        : {}),
      // decode, where a peer reuses its data from the caches (ggml): ours on one copy of the data.
      ...(c.oursFromCache ? { oursFromCache: timing(c.oursFromCache, c.flops, c.bytes) } : {}),
      limit: c.limit,
      // decode: how the data came from memory (layer-loop.mjs): ours here, the peer's in peer.
      ...(c.streaming ? { streaming: c.streaming } : {}),
      fractionOfLimit: fraction(c.limit, ours, peaks),
      // The same for the kernel alone (for information: the targets read fractionOfLimit).
      ...(ours.kernel ? { kernelFractionOfLimit: fraction(c.limit, ours.kernel, peaks) } : {}),
      scaling: c.scaling
        ? { threads: 1, medianMs: round(c.scaling.medianMs), pairedMedianMs: round(c.scaling.pairedMedianMs), pairs: c.scaling.pairs, speedup: round(c.scaling.speedup, 3) }
        : null,
      check: c.check ? Object.fromEntries(Object.entries(c.check).map(([k, v]) => [k, typeof v === 'number' ? round(v, 3) : v])) : null,
    };
    // The targets are for issue 6's shapes: the smoke mode's tiny ones get none.
    rec.targets = targets ? targetsFor(rec, threads) : [];
    return rec;
  };
}
