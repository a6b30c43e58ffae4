// Decode cases stream their data (linear's weights, attention's K and V) as a model's decode loop
// does: layer after layer back to back, each layer's data different. The bench times a loop over
// C copies of the case's data, rep i on copy i % C, with no idle time between reps: no flush
// before a run (it leaves the pool's threads idle, and on a VM their vCPUs halted, for
// milliseconds before every op, which a model's loop never does), and no run served from a cache
// that the previous one filled.

/**
 * The bytes one pass over the copies reads at the least: 256 MiB, more than any last-level cache
 * (our cloud VM does not report its cache sizes), so each copy has been evicted by the time its
 * turn comes again.
 */
export const LAYER_LOOP_BYTES = 256 * 2 ** 20;

/**
 * How many copies of `bytesPerCopy` bytes the loop cycles through: enough to read `loopBytes` per
 * pass, and never fewer than 2 (with 1, every run after the first would reuse the data that the
 * previous run just brought in). The smoke mode passes a small `loopBytes` (cases.mjs: MODES).
 */
export function layerCopies(bytesPerCopy, loopBytes = LAYER_LOOP_BYTES) {
  return Math.max(2, Math.ceil(loopBytes / bytesPerCopy));
}

/** The `streaming` field of a decode record: how the case's data came from memory. */
export const layerLoopStreaming = (copies, bytesPerCopy) => ({ method: 'layer loop', copies, bytesPerCopy });
