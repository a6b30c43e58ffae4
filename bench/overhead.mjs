// Calling overhead: the median time from the JS call to the resolved Promise for a tiny op
// (linear 1 x 32 x 32, float32), many calls one after another; onnxruntime's MatMul of the same
// size as the peer.
import { OVERHEAD } from './cases.mjs';
import { randomFloats } from './data.mjs';
import { measure, settle } from './timing.mjs';

export const overheadId = () => `overhead linear ${OVERHEAD.M}x${OVERHEAD.N}x${OVERHEAD.K} float32`;

export async function runOverhead(ctx) {
  const { dev, peer, settings, wanted, log, record } = ctx;
  const id = overheadId();
  if (!wanted(id)) return [];
  log(id);
  const { M, N, K } = OVERHEAD;
  const W = randomFloats(N * K, 5, 1);
  const x = randomFloats(M * K, 6, 1);
  const xt = dev.tensor(x, [M, K]);
  const wt = dev.tensor(W, [N, K]);
  const calls = settings.overheadCalls;
  const opts = { warmup: Math.max(10, calls >> 3), minReps: calls, maxReps: calls, targetMs: 0 };
  const ours = await measure(() => dev.linear(xt, wt), { ...opts, release: (y) => y.dispose() });
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
    id, op: 'overhead', phase: null, weights: 'float32', shape: { M, N, K },
    flops: 2 * M * N * K, bytes: null, bytesWhat: null, limit: 'latency',
    ours, peer: peerResult, scaling: null, check: null,
  })];
}
