// The merge queue of BPE and SentencePiece: a binary min-heap of candidate pairs ordered by a
// key (the merge rank, or the negated piece score) and then by the left symbol's position.

export class PairHeap {
  #key: Float64Array;
  #left: Int32Array;
  #right: Int32Array;
  #size: Int32Array;
  length = 0;

  constructor(capacity = 64) {
    this.#key = new Float64Array(capacity);
    this.#left = new Int32Array(capacity);
    this.#right = new Int32Array(capacity);
    this.#size = new Int32Array(capacity);
  }

  #less(a: number, b: number): boolean {
    const ka = this.#key[a], kb = this.#key[b];
    return ka < kb || (ka === kb && this.#left[a] < this.#left[b]);
  }

  #swap(a: number, b: number): void {
    const k = this.#key[a]; this.#key[a] = this.#key[b]; this.#key[b] = k;
    const l = this.#left[a]; this.#left[a] = this.#left[b]; this.#left[b] = l;
    const r = this.#right[a]; this.#right[a] = this.#right[b]; this.#right[b] = r;
    const s = this.#size[a]; this.#size[a] = this.#size[b]; this.#size[b] = s;
  }

  clear(): void { this.length = 0; }

  push(key: number, left: number, right: number, size: number): void {
    if (this.length === this.#key.length) {
      const grow = <T extends Float64Array | Int32Array>(a: T): T => {
        const b = new (a.constructor as new (n: number) => T)(a.length * 2);
        b.set(a);
        return b;
      };
      this.#key = grow(this.#key); this.#left = grow(this.#left);
      this.#right = grow(this.#right); this.#size = grow(this.#size);
    }
    let i = this.length++;
    this.#key[i] = key; this.#left[i] = left; this.#right[i] = right; this.#size[i] = size;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#less(i, p)) break;
      this.#swap(i, p);
      i = p;
    }
  }

  /** Removes the smallest pair; its fields are then in `left`, `right`, `size`. */
  pop(): void {
    this.left = this.#left[0]; this.right = this.#right[0]; this.size = this.#size[0];
    const last = --this.length;
    if (last > 0) {
      this.#key[0] = this.#key[last]; this.#left[0] = this.#left[last];
      this.#right[0] = this.#right[last]; this.#size[0] = this.#size[last];
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < last && this.#less(l, m)) m = l;
        if (r < last && this.#less(r, m)) m = r;
        if (m === i) break;
        this.#swap(i, m);
        i = m;
      }
    }
  }

  left = 0;
  right = 0;
  size = 0;
}
