// The JS thread's cost of queueing one op (issue #24's target: at most 3 us, median): 500 float32
// linears of 1 x 256 by 256 x 256 queued behind a long op, so that each call only validates,
// makes its output and queues (the stream's drain is busy, so none runs inline and none wakes a
// thread). On a 1-thread device when the bench has one (ctx.dev1): the long op then leaves the
// JS thread a core of its own, and what is timed is the call, not a core shared with the kernels
// (the decode step's own queueCallUs is timed beside 2-thread kernels).
import { randomFloats } from './data.mjs';
import { median } from './timing.mjs';

const ROUNDS = { full: 9, quick: 5, smoke: 2 };
const CALLS = 500;

const now = () => Number(process.hrtime.bigint()) / 1e3;  // us

export async function measureQueueCost(ctx) {
  const dev = ctx.dev1 ?? ctx.dev;
  const rounds = ROUNDS[ctx.mode];
  const x = dev.tensor(randomFloats(256, 21, 1), [1, 256]);
  const w = dev.tensor(randomFloats(256 * 256, 22, 1), [256, 256]);
  // 1024^3 multiply-adds: ~25 ms on one Zen 3 core, several times what the 500 calls take.
  const a = dev.tensor(randomFloats(1024 * 1024, 23, 1), [1024, 1024]);
  const medians = [], means = [];
  for (let r = 0; r <= rounds; r++) {
    const long = dev.matmul(a, a);
    const us = new Array(CALLS), outs = new Array(CALLS);
    for (let i = 0; i < CALLS; i++) {
      const t0 = now();
      outs[i] = dev.linear(x, w);
      us[i] = now() - t0;
    }
    await dev.synchronize();
    for (const o of outs) o.dispose();
    long.dispose();
    if (r === 0) continue;  // warm-up: first calls compile and fill the buffer pool
    medians.push(median(us));
    means.push(us.reduce((s, v) => s + v, 0) / CALLS);
  }
  for (const t of [x, w, a]) t.dispose();
  // The median over the rounds of each round's median and mean.
  return {
    op: 'linear 1x256x256 float32, behind a long op',
    threads: dev.info.threads,
    calls: CALLS,
    rounds,
    medianUs: Number(median(medians).toPrecision(3)),
    meanUs: Number(median(means).toPrecision(3)),
  };
}
