// The symbol chain both merge algorithms work on: a word split into code points, each symbol
// a [start, start + length) span of the word, linked to its neighbours; merging moves the right
// symbol's span into the left one.

export class Symbols {
  start = new Int32Array(64);
  len = new Int32Array(64);
  prev = new Int32Array(64);
  next = new Int32Array(64);
  count = 0;

  /** Splits `text` into code points. */
  reset(text: string): void {
    if (this.start.length < text.length) {
      const n = Math.max(text.length, this.start.length * 2);
      this.start = new Int32Array(n); this.len = new Int32Array(n);
      this.prev = new Int32Array(n); this.next = new Int32Array(n);
    }
    let n = 0;
    for (let i = 0; i < text.length; n++) {
      const c = text.charCodeAt(i);
      const w = c >= 0xd800 && c <= 0xdbff && i + 1 < text.length ? 2 : 1;
      this.start[n] = i; this.len[n] = w; this.prev[n] = n - 1; this.next[n] = n + 1;
      i += w;
    }
    if (n > 0) this.next[n - 1] = -1;
    this.count = n;
  }

  /** Merges symbol `right` (the next of `left`) into `left`. */
  merge(left: number, right: number): void {
    this.len[left] += this.len[right];
    this.len[right] = 0;
    const after = this.next[right];
    this.next[left] = after;
    if (after >= 0) this.prev[after] = left;
  }
}

/**
 * Merges queued pairs, best first, until none is left: the loop BPE and SentencePiece share.
 * An entry whose sides merged since it was queued is stale and skipped; `queue(left, right)`
 * queues the new neighbours of each merge (it may decline a pair that is not a token).
 */
export function mergeQueued(s: Symbols, heap: import('./heap').PairHeap, queue: (left: number, right: number) => void): void {
  while (heap.length > 0) {
    heap.pop();
    const { left, right, size } = heap;
    const ll = s.len[left], rl = s.len[right];
    if (ll === 0 || rl === 0 || ll + rl !== size) continue;
    s.merge(left, right);
    queue(s.prev[left], left);
    queue(left, s.next[left]);
  }
}
