// Timing: warm-up runs, then timed repetitions (each from the call until its result is computed:
// the resolved Promise, or for our queued ops `sync`, the device's synchronize()), and their median. The number of repetitions adapts to the case: about `targetMs` of timed work,
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
 * With `cycle` = C > 1 (a decode case's layer loop, layer-loop.mjs), `fn(i)` gets the copy to run,
 * i = 0, 1, ..., C - 1, 0, ...: the warm-up makes at least one full pass (first runs do one-time
 * work, per onnxruntime session too), and at least one full pass is timed.
 * `sync(result)` (ours: () => dev.synchronize(), since our ops return before they ran) is awaited
 * inside each run's time.
 * `kernelTimes` (ours: { start(), take() }, hostKernelTimes below) records what each timed run
 * spent in the kernel on the pool thread; their median comes back as kernelMedianMs when every
 * run recorded exactly one (an op run inline on the JS thread records none).
 */
export async function measure(fn, { warmup = 1, minReps = 3, maxReps = 50, targetMs = 1000, release = () => {}, keepLast = false, cycle = 1, kernelTimes = null, sync = null } = {}) {
  let estimate = Infinity;
  let warmed = 0;
  // Up to `warmup` runs, and a full cycle; a big case stops once it has spent half the target.
  for (let i = 0; i < Math.max(warmup, cycle) && (i < cycle || warmed < targetMs / 2); i++) {
    const t0 = now();
    const r = await fn(i % cycle);
    if (sync) await sync(r);
    estimate = now() - t0;
    warmed += estimate;
    release(r);
  }
  const wanted = Number.isFinite(estimate) ? Math.ceil(targetMs / Math.max(estimate, 1e-3)) : minReps;
  const reps = Math.max(minReps, cycle, Math.min(maxReps, wanted));
  const times = [];
  let last;
  kernelTimes?.start();
  // Back to back: between two runs only the release of the previous output.
  for (let i = 0; i < reps; i++) {
    const t0 = now();
    const r = await fn(i % cycle);
    if (sync) await sync(r);
    times.push(now() - t0);
    if (keepLast && i === reps - 1) last = r;
    else release(r);
  }
  const kernelUs = kernelTimes?.take() ?? [];
  return {
    medianMs: median(times),
    minMs: Math.min(...times),
    maxMs: Math.max(...times),
    reps,
    ...(kernelUs.length === reps ? { kernelMedianMs: median(kernelUs) / 1e3 } : {}),
    ...(keepLast ? { last } : {}),
  };
}

/**
 * The kernel-time recorder of our cpu backend (the addon's internal hostOpTimes) for measure(),
 * or null where the addon has none.
 */
export function hostKernelTimes(binding) {
  const record = binding?._internal?.hostOpTimes;
  return typeof record === 'function' ? { start: () => record(true), take: () => record(false) } : null;
}

/** A short pause so that threads of the side just measured go idle before the other side runs. */
export const settle = (ms = 20) => new Promise((r) => setTimeout(r, ms));

/**
 * Thread scaling: `pairs` runs of `one` (on one thread) and `many` (on all), alternating, each
 * after a settle() (no thread of the other side still spinning), after a warm-up run of each.
 * `speedup` is the median over the pairs of one's time over many's: both times of a pair see the
 * machine in the same state, where a one-thread median taken apart from the main measurement saw
 * another (a shared machine's load moves within seconds).
 */
export async function measureScaling(one, many, { pairs = 5, release = () => {}, sync = null } = {}) {
  const run = async (fn) => {
    await settle();
    const t0 = now();
    const r = await fn();
    if (sync) await sync(r);
    const ms = now() - t0;
    release(r);
    return ms;
  };
  await run(one);
  await run(many);
  const t1 = [], tn = [];
  for (let i = 0; i < pairs; i++) {
    t1.push(await run(one));
    tn.push(await run(many));
  }
  return { medianMs: median(t1), pairedMedianMs: median(tn), pairs, speedup: median(t1.map((t, i) => t / tn[i])) };
}
