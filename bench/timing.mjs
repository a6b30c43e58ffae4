// Timing: warm-up runs, then timed repetitions (each from the call to the resolved Promise), and
// their median. The number of repetitions adapts to the case: about `targetMs` of timed work,
// at least `minReps` and at most `maxReps` (big cases get few, tiny ones many).

const now = () => Number(process.hrtime.bigint()) / 1e6;  // ms

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Times `fn` (async, returns a result). `release(result)` runs after each timed call, outside the
 * timing (disposing outputs). The last result is kept (not released) when `keepLast` is set.
 * `before()`, when given, runs before every run, outside the timing (flushCaches below).
 */
export async function measure(fn, { warmup = 1, minReps = 3, maxReps = 50, targetMs = 1000, release = () => {}, keepLast = false, before = null } = {}) {
  let estimate = Infinity;
  let warmed = 0;
  // Up to `warmup` runs; a big case stops after the first once it has spent half the target.
  for (let i = 0; i < warmup && (i === 0 || warmed < targetMs / 2); i++) {
    before?.();
    const t0 = now();
    const r = await fn();
    estimate = now() - t0;
    warmed += estimate;
    release(r);
  }
  const reps = Math.max(minReps, Math.min(maxReps, Number.isFinite(estimate) ? Math.ceil(targetMs / Math.max(estimate, 1e-3)) : minReps));
  const times = [];
  let last;
  for (let i = 0; i < reps; i++) {
    before?.();
    const t0 = now();
    const r = await fn();
    times.push(now() - t0);
    if (keepLast && i === reps - 1) last = r;
    else release(r);
  }
  return {
    medianMs: median(times),
    minMs: Math.min(...times),
    maxMs: Math.max(...times),
    reps,
    ...(keepLast ? { last } : {}),
  };
}

let flushBuffer = null;
let flushSink = 0;

/**
 * Evicts the caches by reading one word of every cache line of a clean 128 MiB buffer (larger than
 * any last-level cache), so that a decode case streams its weights (or K/V) from memory as a
 * model's loop over its layers does, not from a cache that the previous repetition filled. Reads
 * only: no dirty lines are left for the timed run to write back.
 */
export function flushCaches() {
  if (!flushBuffer) {
    flushBuffer = new Float64Array(16 * 2 ** 20);
    flushBuffer.fill(1);
  }
  let s = 0;
  for (let i = 0; i < flushBuffer.length; i += 8) s += flushBuffer[i];
  flushSink += s;
  return flushSink;
}

/** A short pause so that threads of the side just measured go idle before the other side runs. */
export const settle = (ms = 20) => new Promise((r) => setTimeout(r, ms));
