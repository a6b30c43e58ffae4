// SentencePiece BPE (tokenizer.ggml.model 'llama'), as llama.cpp runs it: the text (spaces
// written as U+2581) starts as one symbol per character; the adjacent pair whose concatenation
// is the token with the highest score (leftmost first among equals) merges until no
// concatenation is a token. A character that is no token becomes its UTF-8 bytes' <0xXX> tokens.
import { PairHeap } from './heap';
import { Symbols } from './symbols';

export class SpmMerger {
  readonly #ids: ReadonlyMap<string, number>;
  readonly #scores: ArrayLike<number>;
  readonly #byteIds: Int32Array;
  readonly #unk: number;
  readonly #heap = new PairHeap();
  readonly #sym = new Symbols();

  /** byteIds[b]: the token for byte b (-1: none; then `unk` stands in, or the byte is dropped). */
  constructor(ids: ReadonlyMap<string, number>, scores: ArrayLike<number>, byteIds: Int32Array, unk: number) {
    this.#ids = ids;
    this.#scores = scores;
    this.#byteIds = byteIds;
    this.#unk = unk;
  }

  #queue(text: string, left: number, right: number): void {
    if (left < 0 || right < 0) return;
    const s = this.#sym;
    const size = s.len[left] + s.len[right];
    const id = this.#ids.get(text.slice(s.start[left], s.start[left] + size));
    if (id === undefined) return;
    this.#heap.push(-this.#scores[id], left, right, size);
  }

  /** Appends the tokens of `text` (already escaped: spaces as U+2581). */
  encode(text: string, out: number[]): void {
    const s = this.#sym;
    const heap = this.#heap;
    s.reset(text);
    heap.clear();
    for (let i = 1; i < s.count; i++) this.#queue(text, i - 1, i);
    while (heap.length > 0) {
      heap.pop();
      const { left, right, size } = heap;
      const ll = s.len[left], rl = s.len[right];
      if (ll === 0 || rl === 0 || ll + rl !== size) continue;
      s.merge(left, right);
      this.#queue(text, s.prev[left], left);
      this.#queue(text, left, s.next[left]);
    }
    const encoder = new TextEncoder();
    for (let i = s.count > 0 ? 0 : -1; i >= 0; i = s.next[i]) {
      const piece = text.slice(s.start[i], s.start[i] + s.len[i]);
      const id = this.#ids.get(piece);
      if (id !== undefined) { out.push(id); continue; }
      for (const b of encoder.encode(piece)) {
        const t = this.#byteIds[b];
        if (t >= 0) out.push(t);
        else if (this.#unk >= 0) out.push(this.#unk);
      }
    }
  }
}
