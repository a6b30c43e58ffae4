// SentencePiece BPE (tokenizer.ggml.model 'llama'), as llama.cpp runs it: the text (spaces
// written as U+2581) starts as one symbol per character; the adjacent pair whose concatenation
// is the token with the highest score (leftmost first among equals) merges until no
// concatenation is a token. A character that is no token becomes its UTF-8 bytes' <0xXX> tokens.
//
// llama.cpp merges over the whole text at once. Merges never cross a point where the two
// characters either side occur next to each other in no token, and merges on either side of such
// a point do not interact, so the text is cut there and the pieces (mostly words) merged and
// cached separately: the same tokens, faster.
import { PairHeap } from './heap';
import { Symbols, mergeQueued } from './symbols';

const CACHE_LIMIT = 50_000;

function pairKey(a: number, b: number): number {
  return a * 0x110000 + b;
}

export class SpmMerger {
  readonly #ids: ReadonlyMap<string, number>;
  readonly #scores: ArrayLike<number>;
  readonly #byteIds: Int32Array;
  readonly #unk: number;
  readonly #pairs = new Set<number>();
  readonly #heap = new PairHeap();
  readonly #sym = new Symbols();
  readonly #cache = new Map<string, number[]>();
  readonly #encoder = new TextEncoder();

  /** byteIds[b]: the token for byte b (-1: none; then `unk` stands in, or the byte is dropped). */
  constructor(ids: ReadonlyMap<string, number>, scores: ArrayLike<number>, byteIds: Int32Array, unk: number) {
    this.#ids = ids;
    this.#scores = scores;
    this.#byteIds = byteIds;
    this.#unk = unk;
    for (const text of ids.keys()) {
      let prev = -1;
      for (const ch of text) {
        const c = ch.codePointAt(0)!;
        if (prev >= 0) this.#pairs.add(pairKey(prev, c));
        prev = c;
      }
    }
  }

  /** Appends the tokens of `text` (already escaped: spaces as U+2581). */
  encode(text: string, out: number[]): void {
    let start = 0;
    let prev = -1;
    for (let i = 0; i < text.length; i++) {
      let c = text.charCodeAt(i);
      const at = i;
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
        c = 0x10000 + ((c - 0xd800) << 10) + (text.charCodeAt(i + 1) - 0xdc00);
        i++;
      }
      if (prev >= 0 && !this.#pairs.has(pairKey(prev, c))) {
        this.#encodeChunk(text.slice(start, at), out);
        start = at;
      }
      prev = c;
    }
    if (start < text.length) this.#encodeChunk(start === 0 ? text : text.slice(start), out);
  }

  #encodeChunk(chunk: string, out: number[]): void {
    let ids = this.#cache.get(chunk);
    if (!ids) {
      ids = [];
      this.#merge(chunk, ids);
      if (this.#cache.size >= CACHE_LIMIT) this.#cache.clear();
      this.#cache.set(chunk, ids);
    }
    for (const id of ids) out.push(id);
  }

  #queue(text: string, left: number, right: number): void {
    if (left < 0 || right < 0) return;
    const s = this.#sym;
    const size = s.len[left] + s.len[right];
    const id = this.#ids.get(text.slice(s.start[left], s.start[left] + size));
    if (id === undefined) return;
    this.#heap.push(-this.#scores[id], left, right, size);
  }

  #merge(text: string, out: number[]): void {
    const s = this.#sym;
    const heap = this.#heap;
    s.reset(text);
    heap.clear();
    for (let i = 1; i < s.count; i++) this.#queue(text, i - 1, i);
    mergeQueued(s, heap, (left, right) => this.#queue(text, left, right));
    for (let i = s.count > 0 ? 0 : -1; i >= 0; i = s.next[i]) {
      const piece = text.slice(s.start[i], s.start[i] + s.len[i]);
      const id = this.#ids.get(piece);
      if (id !== undefined) { out.push(id); continue; }
      for (const b of this.#encoder.encode(piece)) {
        const t = this.#byteIds[b];
        if (t >= 0) out.push(t);
        else if (this.#unk >= 0) out.push(this.#unk);
      }
    }
  }
}
