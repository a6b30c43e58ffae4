// Byte-level BPE (tokenizer.ggml.model 'gpt2'): each pre-tokenized word, written in GPT-2's byte
// alphabet, starts as one symbol per character; the adjacent pair with the lowest merge rank
// (leftmost first among equals) merges until no pair has a rank. A final symbol that is not a
// token falls back to the tokens of its single ASCII bytes, as llama.cpp does.
import { byteEncode } from './bytes';
import { PairHeap } from './heap';
import { Symbols, mergeQueued } from './symbols';

const CACHE_LIMIT = 50_000;

export class BpeMerger {
  readonly #ranks: Map<string, number>;
  readonly #ids: ReadonlyMap<string, number>;
  readonly #ignoreMerges: boolean;
  readonly #heap = new PairHeap();
  readonly #sym = new Symbols();
  readonly #cache = new Map<string, number[]>();

  constructor(merges: readonly string[], ids: ReadonlyMap<string, number>, ignoreMerges: boolean) {
    this.#ids = ids;
    this.#ignoreMerges = ignoreMerges;
    this.#ranks = new Map();
    for (let i = 0; i < merges.length; i++) {
      const m = merges[i];
      const at = m.indexOf(' ', 1);
      // llama.cpp reads a line without a space (after its first character) as the empty pair.
      const key = at < 0 ? ' ' : m;
      if (!this.#ranks.has(key)) this.#ranks.set(key, i);
    }
  }

  #rank(word: string, left: number, right: number): number {
    const s = this.#sym;
    const key = word.slice(s.start[left], s.start[left] + s.len[left]) + ' ' + word.slice(s.start[right], s.start[right] + s.len[right]);
    return this.#ranks.get(key) ?? -1;
  }

  #queue(word: string, left: number, right: number): void {
    if (left < 0 || right < 0) return;
    const r = this.#rank(word, left, right);
    if (r >= 0) this.#heap.push(r, left, right, this.#sym.len[left] + this.#sym.len[right]);
  }

  /** Appends the tokens of one pre-tokenized word. */
  encodeWord(word: string, out: number[]): void {
    const cached = this.#cache.get(word);
    if (cached) { for (const id of cached) out.push(id); return; }
    const ids: number[] = [];
    this.#merge(byteEncode(word), ids);
    if (this.#cache.size >= CACHE_LIMIT) this.#cache.clear();
    this.#cache.set(word, ids);
    for (const id of ids) out.push(id);
  }

  #merge(word: string, out: number[]): void {
    const whole = this.#ids.get(word);
    if (this.#ignoreMerges && whole !== undefined) { out.push(whole); return; }
    const s = this.#sym;
    const heap = this.#heap;
    s.reset(word);
    heap.clear();
    for (let i = 1; i < s.count; i++) this.#queue(word, i - 1, i);
    mergeQueued(s, heap, (left, right) => this.#queue(word, left, right));
    for (let i = s.count > 0 ? 0 : -1; i >= 0; i = s.next[i]) {
      const piece = word.slice(s.start[i], s.start[i] + s.len[i]);
      const id = this.#ids.get(piece);
      if (id !== undefined) { out.push(id); continue; }
      // Not a token: llama.cpp looks up each UTF-8 byte of the piece as a one-byte token.
      for (let j = 0; j < piece.length; j++) {
        const c = piece.charCodeAt(j);
        if (c < 0x80) {
          const b = this.#ids.get(piece[j]);
          if (b !== undefined) out.push(b);
        }
      }
    }
  }
}
