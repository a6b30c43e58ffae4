// Which position each slot of a sliding-window layer's ring holds (gpt-oss's even layers, llama.cpp's
// SWA cache). A query at position p sees keys p - window < j <= p, so such a layer never needs more
// than the last `window` positions: its keys and values live in a ring of window + 1 slots, position
// q in slot q % slots. The one slot beyond the window is what lets generate() take back the step it
// queued ahead of reading a token (truncate by two positions; docs/design/API.md). This file is the
// bookkeeping alone: every sliding layer of a cache writes the same positions, so one ring describes
// them all, and it says which slots a forward reads and writes and what each query sees.
import { TensorOpsError } from '../errors';

/** One forward's use of the ring: at positions [at, at + L). */
export interface RingPlan {
  at: number;
  L: number;
  /** The position in each slot before this forward writes (-1: none). */
  before: Int32Array;
  /** The position in each slot once it has written. */
  after: Int32Array;
  /** Rows [from, to) of the chunk go to slots [slot, slot + to - from): at most two runs (the wrap). */
  writes: { from: number; to: number; slot: number }[];
}

export class SlidingRing {
  readonly window: number;
  readonly slots: number;
  /** The position held by each slot; -1 for none (never written, truncated, or being rewritten). */
  readonly #pos: Int32Array;

  constructor(window: number, slots: number) {
    this.window = window;
    this.slots = slots;
    this.#pos = new Int32Array(slots).fill(-1);
  }

  /** Whether every key a forward at position `at` needs from earlier positions is still held. */
  #holdsWindowBefore(at: number): boolean {
    const first = Math.max(0, at - this.window + 1);
    for (let q = first; q < at; q++) if (this.#pos[q % this.slots] !== q) return false;
    return true;
  }

  /**
   * The plan of a forward of L positions at `at`. Its slots are marked empty at once and filled by
   * commit(): a forward that fails half way (some layers written, some not) leaves them empty, and
   * a later forward that needed them is refused here instead of reading mixed keys.
   */
  plan(at: number, L: number): RingPlan {
    if (!this.#holdsWindowBefore(at)) {
      throw new TensorOpsError('E_ARG', `the sliding-window layers no longer hold the ${this.window - 1} positions before ${at} (a forward failed after writing part of them); truncate the cache to 0 and run the prompt again`);
    }
    const before = this.#pos.slice();
    const after = this.#pos.slice();
    // Only the last `slots` positions of a long chunk stay; the earlier ones would be overwritten.
    const first = Math.max(at, at + L - this.slots);
    const writes: RingPlan['writes'] = [];
    for (let q = first; q < at + L;) {
      const slot = q % this.slots;
      const n = Math.min(at + L - q, this.slots - slot);
      writes.push({ from: q - at, to: q - at + n, slot });
      q += n;
    }
    for (let q = first; q < at + L; q++) {
      after[q % this.slots] = q;
      this.#pos[q % this.slots] = -1;
    }
    return { at, L, before, after, writes };
  }

  /** The forward of `plan` has queued its writes in every layer. */
  commit(plan: RingPlan): void {
    this.#pos.set(plan.after);
  }

  /**
   * Forgets positions from `length` on. The forward that comes next at `length` needs the window
   * before it: going back further than the ring still holds is E_ARG.
   */
  truncate(length: number, current: number): void {
    if (length > 0 && length < current && !this.#holdsWindowBefore(length)) {
      throw new TensorOpsError('E_ARG', `cannot truncate from ${current} to ${length}: the sliding-window layers keep the last ${this.slots} positions (a window of ${this.window}), and the positions before ${length} were overwritten; create the cache with { swaFull: true } to truncate further back`);
    }
    for (let s = 0; s < this.slots; s++) if (this.#pos[s] >= length) this.#pos[s] = -1;
  }

  /**
   * bool rows [L, columns.length]: query i (position at + i) sees column c when it holds a
   * position q with at + i - window < q <= at + i.
   */
  visible(columns: ArrayLike<number>, at: number, L: number): Uint8Array {
    const n = columns.length;
    const m = new Uint8Array(L * n);
    for (let i = 0; i < L; i++) {
      const p = at + i;
      for (let c = 0; c < n; c++) {
        const q = columns[c];
        if (q >= 0 && q <= p && q > p - this.window) m[i * n + c] = 1;
      }
    }
    return m;
  }
}
