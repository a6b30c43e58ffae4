// Calling overhead: the median time from the JS call to the resolved Promise for tiny ops
// (OVERHEAD_CASES: one inline, one through the thread pool), many calls one after another;
// onnxruntime's MatMul of the same size as the peer.
import { OVERHEAD_CASES } from './cases.mjs';
import { randomFloats } from './data.mjs';
import { measure, settle } from './timing.mjs';

const overheadId = ({ M, N, K, path }) =>
  `overhead linear ${M}x${N}x${K} float32${path === 'pool' ? ' (thread pool)' : ''}`;

export async function runOverhead(ctx) {
  const out = [];
  for (const c of OVERHEAD_CASES) out.push(...(await runOne(ctx, c)));
  return out;
}

async function runOne(ctx, c) {
  const { dev, peer, settings, wanted, log, record } = ctx;
  const id = overheadId(c);
  if (!wanted(id)) return [];
  log(id);
  const { M, N, K } = c;
  const W = randomFloats(N * K, 5, 1);
  const x = randomFloats(M * K, 6, 1);
  const xt = dev.tensor(x, [M, K]);
  const wt = dev.tensor(W, [N, K]);
  const calls = settings.overheadCalls;
  const opts = { warmup: Math.max(10, calls >> 3), minReps: calls, maxReps: calls, targetMs: 0 };
  const ours = await measure(() => dev.linear(xt, wt), { ...opts, release: (y) => y.dispose(), sync: () => dev.synchronize() });
  await settle();
  let peerResult = null;
  if (peer) {
    const r = await peer.matmul(W, N, K);
    const feeds = r.feeds(x, M);
    peerResult = { op: 'MatMul float32, same shape', ...(await measure(() => r.run(feeds), { ...opts, release: (t) => t.dispose?.() })) };
    await r.session.release?.();
  }
  xt.dispose();
  wt.dispose();
  return [record({
    id, op: 'overhead', phase: c.path, weights: 'float32', shape: { M, N, K },
    flops: 2 * M * N * K, bytes: null, bytesWhat: null, limit: 'latency',
    ours, peer: peerResult, scaling: null, check: null,
  })];
}
