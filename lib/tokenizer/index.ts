// Tokenizers from GGUF metadata, equal token for token to llama.cpp's: byte-level BPE ('gpt2'
// vocabularies, with the pre-tokenizer named by tokenizer.ggml.pre) and SentencePiece ('llama');
// and from a Hugging Face folder's tokenizer.json, read into the same data (hf.ts).
import { TensorOpsError } from '../errors';
import type { GgufValue } from '../loaders/gguf/types';
import { BpeMerger } from './bpe';
import { ByteBuilder, CHAR_TO_BYTE, Utf8Stream, fromUtf8, utf8 } from './bytes';
import { type TokenizerData, tokenizerDataFromGguf } from './data';
import { type HfTokenizerFiles, type HfTokenizerOptions, tokenizerDataFromHf } from './hf';
import { type PreType, preType, pretokenize } from './pretokenize';
import {
  ALWAYS_RENDERED, ATTR_BYTE, ATTR_CONTROL, ATTR_NORMAL, ATTR_UNKNOWN, ATTR_USER_DEFINED, EOG_TEXTS, EOM_TEXTS,
  EOT_TEXTS, FIM_TEXTS, attrOfType, partition,
} from './special';
import { SpmMerger } from './spm';
import { wellFormed } from './unicode';

export { type TokenizerData, tokenizerDataFromGguf } from './data';
export { type HfTokenizerFiles, type HfTokenizerOptions, tokenizerDataFromHf } from './hf';
export { SUPPORTED_PRE_TYPES } from './pretokenize';

export interface EncodeOptions {
  /** Add BOS / EOS as the vocabulary asks (tokenizer.ggml.add_bos_token / add_eos_token). Default true. */
  addSpecial?: boolean;
  /** Read special tokens' texts in the input (`<|eot_id|>`) as those tokens. Default false. */
  parseSpecial?: boolean;
}

export interface DecodeOptions {
  /** Render control tokens (BOS, EOS, `<|eot_id|>`...) as their text. Default false: they print nothing. */
  special?: boolean;
  /** Drop a leading BOS and a trailing EOS when the vocabulary adds them. Default false. */
  removeSpecial?: boolean;
}

/** Decodes generated tokens one at a time; see {@link Tokenizer.decoder}. */
export interface TokenStreamDecoder {
  /** The text the token completes (possibly '' while a UTF-8 sequence is unfinished). */
  push(id: number): string;
  /** Ends the stream: the bytes still held, as text. */
  flush(): string;
}

const SPACE_MARK = '\u2581';

/** A text tokenizer: `encode` text to token ids, `decode` ids to text, as llama.cpp does for the same file. */
export class Tokenizer {
  readonly model: 'gpt2' | 'llama';
  /** The pre-tokenizer name ('' for SentencePiece). */
  readonly pre: string;
  readonly vocabSize: number;
  /** Special token ids (-1 where the vocabulary has none). */
  readonly bos: number;
  readonly eos: number;
  readonly eot: number;
  readonly eom: number;
  readonly unk: number;
  readonly pad: number;
  readonly sep: number;
  readonly addBos: boolean;
  readonly addEos: boolean;
  readonly addSpacePrefix: boolean;
  /** Token ids that end generation (EOS, EOT, EOM and the tokens llama.cpp recognizes by text). */
  readonly eogIds: ReadonlySet<number>;

  readonly #tokens: readonly string[];
  readonly #attrs: Uint16Array;
  readonly #ids = new Map<string, number>();
  readonly #specials: number[];
  readonly #pre: PreType | undefined;
  readonly #cleanSpaces: boolean;
  readonly #bpe: BpeMerger | undefined;
  readonly #spm: SpmMerger | undefined;
  readonly #pieces: Uint8Array[];

  constructor(data: TokenizerData) {
    const { model } = data;
    if (model !== 'gpt2' && model !== 'llama') {
      throw new TensorOpsError('E_ARG', `tokenizer model must be 'gpt2' or 'llama'; got ${String(model)}`);
    }
    const n = data.tokens.length;
    if (n === 0) throw new TensorOpsError('E_ARG', 'the vocabulary is empty');
    for (const [name, arr] of [['scores', data.scores], ['tokenTypes', data.tokenTypes]] as const) {
      if (arr && arr.length < n) throw new TensorOpsError('E_ARG', `${name} has ${arr.length} entries for ${n} tokens`);
    }
    this.model = model;
    this.vocabSize = n;
    // llama.cpp renames empty tokens so that every text is unique.
    const tokens = data.tokens.map((t, i) => (t === '' ? `[EMPTY_${i}]` : t));
    this.#tokens = tokens;
    for (let i = 0; i < n; i++) this.#ids.set(tokens[i], i);
    const attrs = new Uint16Array(n);
    for (let i = 0; i < n; i++) attrs[i] = data.tokenTypes ? attrOfType(data.tokenTypes[i]) : ATTR_NORMAL;
    this.#attrs = attrs;

    let addBos: boolean, addSpacePrefix: boolean;
    let bos: number, eos: number, unk: number;
    if (model === 'llama') {
      this.pre = '';
      this.#pre = undefined;
      this.#cleanSpaces = false;
      addBos = true;
      addSpacePrefix = true;
      [bos, eos, unk] = [1, 2, 0];
    } else {
      this.pre = data.pre || 'default';
      const pt = preType(data.pre);
      this.#pre = pt;
      this.#cleanSpaces = pt.cleanSpaces;
      addBos = pt.addBos;
      addSpacePrefix = false;
      [bos, eos, unk] = [pt.noDefaultBos ? -1 : 11, 11, -1];
    }
    const inRange = (id: number | undefined, dflt: number) => {
      if (id !== undefined && Number.isInteger(id) && id >= 0 && id < n) return id;
      return dflt >= 0 && dflt < n ? dflt : -1;
    };
    this.bos = inRange(data.bosId, bos);
    this.eos = inRange(data.eosId, eos);
    this.unk = inRange(data.unkId, unk);
    this.pad = inRange(data.padId, -1);
    this.sep = inRange(data.sepId, -1);
    this.addBos = data.addBos ?? addBos;
    this.addEos = data.addEos ?? false;
    this.addSpacePrefix = data.addSpacePrefix ?? addSpacePrefix;

    // llama.cpp's corrections by token text: end-of-turn and fill-in-the-middle tokens are control tokens.
    // (llama.cpp takes the first match in its hash map's order; here the first text of the list found.)
    const byText = (texts: readonly string[]): number => {
      for (const t of texts) {
        const id = this.#ids.get(t);
        if (id !== undefined) return id;
      }
      return -1;
    };
    const markControl = (id: number) => { if (id >= 0) attrs[id] |= ATTR_CONTROL; };
    this.eot = inRange(data.eotId, -1);
    if (this.eot < 0) { this.eot = byText(EOT_TEXTS); markControl(this.eot); }
    this.eom = inRange(data.eomId, -1);
    if (this.eom < 0) { this.eom = byText(EOM_TEXTS); markControl(this.eom); }
    const eog = new Set<number>();
    FIM_TEXTS.forEach((texts, i) => {
      const id = byText(texts);
      markControl(id);
      if (id >= 0 && i >= 3) eog.add(id);  // FIM pad, repo and file separator end generation
    });
    for (const t of EOG_TEXTS) {
      const id = this.#ids.get(t);
      if (id !== undefined) { eog.add(id); markControl(id); }
    }
    for (const t of ALWAYS_RENDERED) {
      const id = this.#ids.get(t);
      if (id !== undefined) attrs[id] = ATTR_USER_DEFINED;
    }
    for (const id of [this.eos, this.eot, this.eom, ...(data.eogIds ?? [])]) if (inRange(id, -1) >= 0) eog.add(id);
    const endId = this.#ids.get('<|end|>');
    const has = (t: string) => { const id = this.#ids.get(t); return id !== undefined && eog.has(id); };
    if (endId !== undefined && eog.has(endId) && ((has('<|return|>') && (has('<|call|>') || has('<|calls|>'))) || (has('<|calls|>') && has('<|flush|>')))) {
      eog.delete(endId);
      attrs[endId] = ATTR_USER_DEFINED;
    }
    this.eogIds = eog;

    // Special tokens, longest text first (the order the input is split in).
    this.#specials = [];
    for (let i = 0; i < n; i++) if (attrs[i] & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)) this.#specials.push(i);
    this.#specials.sort((a, b) => utf8Length(tokens[b]) - utf8Length(tokens[a]) || a - b);

    if (model === 'gpt2') {
      if (!data.merges) throw new TensorOpsError('E_ARG', "a 'gpt2' tokenizer needs merges");
      this.#bpe = new BpeMerger(data.merges, this.#ids, this.#pre!.ignoreMerges);
    } else {
      const scores = data.scores ?? new Float32Array(n);
      const byteIds = new Int32Array(256).fill(-1);
      for (let b = 0; b < 256; b++) {
        const id = this.#ids.get(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`)
          ?? (b < 0x80 ? this.#ids.get(String.fromCharCode(b)) : undefined);
        if (id !== undefined) byteIds[b] = id;
      }
      this.#spm = new SpmMerger(this.#ids, Float32Array.from({ length: n }, (_, i) => scores[i]), byteIds, this.unk);
    }
    this.#pieces = tokens.map((_, i) => this.#piece(i));
  }

  /** The token's text as stored in the vocabulary. */
  tokenText(id: number): string {
    this.#check(id);
    return this.#tokens[id];
  }

  /** The id of a token's vocabulary text, or undefined. */
  tokenId(text: string): number | undefined {
    return this.#ids.get(text);
  }

  /** Whether the token is a control token (BOS, EOS, chat markers...): decoding prints it only when asked. */
  isControl(id: number): boolean {
    this.#check(id);
    return (this.#attrs[id] & (ATTR_CONTROL | ATTR_UNKNOWN)) !== 0;
  }

  /** Whether the token ends generation. */
  isEog(id: number): boolean {
    return this.eogIds.has(id);
  }

  /** Text to token ids. */
  encode(text: string, options: EncodeOptions = {}): Int32Array {
    if (typeof text !== 'string') throw new TensorOpsError('E_ARG', `encode expects a string; got ${typeof text}`);
    const addSpecial = options.addSpecial ?? true;
    const frags = partition(wellFormed(text), this.#specials, this.#tokens, this.#attrs, options.parseSpecial ?? false);
    const out: number[] = [];
    if (addSpecial && this.addBos) {
      if (this.bos < 0) throw new TensorOpsError('E_ARG', 'the vocabulary asks for a BOS token but has none');
      out.push(this.bos);
    }
    if (this.#spm) {
      let prevSpecial = true;  // the space prefix goes before the first text and after each special token
      for (const f of frags) {
        if (typeof f === 'number') { out.push(f); prevSpecial = true; continue; }
        const t = this.addSpacePrefix && prevSpecial ? ` ${f}` : f;
        this.#spm.encode(t.replaceAll(' ', SPACE_MARK), out);
        prevSpecial = false;
      }
    } else {
      for (const f of frags) {
        if (typeof f === 'number') { out.push(f); continue; }
        for (const word of pretokenize(f, this.#pre!)) this.#bpe!.encodeWord(word, out);
      }
    }
    if (addSpecial && this.addEos) {
      if (this.eos < 0) throw new TensorOpsError('E_ARG', 'the vocabulary asks for an EOS token but has none');
      out.push(this.eos);
    }
    return Int32Array.from(out);
  }

  /** The bytes a token stands for (control tokens' text only when `special`). */
  tokenBytes(id: number, special = false): Uint8Array {
    this.#check(id);
    if (!special && this.#attrs[id] & (ATTR_CONTROL | ATTR_UNKNOWN)) return new Uint8Array(0);
    return this.#pieces[id];
  }

  /** Token ids to text, as llama.cpp's llama_detokenize. */
  decode(ids: ArrayLike<number>, options: DecodeOptions = {}): string {
    const special = options.special ?? false;
    let start = 0, end = ids.length;
    let stripSpace = this.addSpacePrefix;
    if (options.removeSpecial) {
      if (this.addBos && end > start && ids[start] === this.bos) { start++; stripSpace = false; }
      if (this.addEos && end > start && ids[end - 1] === this.eos) end--;
    }
    const out = new ByteBuilder();
    for (let i = start; i < end; i++) {
      let piece = this.tokenBytes(ids[i], special);
      if (stripSpace && piece.length > 0 && piece[0] === 0x20) piece = piece.subarray(1);
      stripSpace = false;
      out.push(piece);
    }
    let bytes = out.bytes();
    if (this.#cleanSpaces) bytes = cleanSpaces(bytes);
    return fromUtf8(bytes);
  }

  /**
   * A decoder for generated tokens: each `push(id)` returns the text that token completes; the
   * bytes of a UTF-8 sequence split across tokens wait for the token that finishes it.
   */
  decoder(options: { special?: boolean } = {}): TokenStreamDecoder {
    const special = options.special ?? false;
    const stream = new Utf8Stream();
    return {
      push: (id: number) => stream.push(this.tokenBytes(id, special)),
      flush: () => stream.flush(),
    };
  }

  #check(id: number): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
      throw new TensorOpsError('E_ARG', `token id ${id} is out of range (vocabulary of ${this.vocabSize})`);
    }
  }

  /** The token's bytes with control tokens rendered (llama.cpp's token_to_piece with special = true). */
  #piece(id: number): Uint8Array {
    const attr = this.#attrs[id];
    const text = this.#tokens[id];
    if (attr & (ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED)) return utf8(text);
    if (attr & ATTR_NORMAL) {
      if (this.model === 'llama') return utf8(text.replaceAll(SPACE_MARK, ' '));
      return gpt2Bytes(text);
    }
    if (attr & ATTR_BYTE) return Uint8Array.of(hexByte(text));
    return new Uint8Array(0);
  }
}

function utf8Length(s: string): number {
  return utf8(s).length;
}

/** A byte token's value: the two hex digits after '<0x' (as strtol reads them: up to the first non-digit). */
function hexByte(text: string): number {
  let v = 0;
  for (const ch of text.slice(3, 5)) {
    const d = parseInt(ch, 16);
    if (Number.isNaN(d)) break;
    v = v * 16 + d;
  }
  return v;
}

/** A byte-level BPE token's bytes; characters outside GPT-2's alphabet print as llama.cpp prints them. */
function gpt2Bytes(text: string): Uint8Array {
  const out = new ByteBuilder();
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    const b = c < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[c] : -1;
    if (b >= 0) { out.pushByte(b); continue; }
    const hex = Array.from(utf8(ch), (x) => x.toString(16).padStart(2, '0')).join('');
    out.push(utf8(`[UNK_BYTE_0x${hex}${text}]`));
  }
  return out.bytes().slice();
}

/**
 * llama.cpp's clean_up_tokenization_spaces on the decoded bytes: no space before ? ! . ,;
 * " ' " becomes "'"; no space before 's 'm 're 've.
 */
function cleanSpaces(input: Uint8Array): Uint8Array {
  const t = input.slice();
  const SP = 0x20, Q = 0x27;
  // 1: " ?", " !", " .", " ,"
  let n = t.length;
  let total = n ? 1 : 0;
  for (let i = 1; i < n; i++) {
    const x = t[i];
    if (t[i - 1] === SP && (x === 0x3f || x === 0x21 || x === 0x2e || x === 0x2c)) total--;
    t[total++] = x;
  }
  // 2: " ' " -> "'" (the space after is dropped by skipping it; it then reads as NUL)
  n = total;
  total = n ? 1 : 0;
  for (let i = 1; i < n; i++) {
    const x = t[i];
    if (x === Q && i + 1 < n && t[i - 1] === SP && t[i + 1] === SP) {
      total--;
      t[++i] = 0;
    }
    t[total++] = x;
  }
  // 3: " 's", " 'm", " 're", " 've"
  n = total;
  total = n ? 1 : 0;
  for (let i = 1; i < n; i++) {
    const x = t[i];
    if (t[i - 1] === SP && x === Q && i + 1 < n) {
      const x1 = t[i + 1];
      if (x1 === 0x73 || x1 === 0x6d) total--;
      else if (i + 2 < n) {
        const x2 = t[i + 2];
        if ((x1 === 0x72 && x2 === 0x65) || (x1 === 0x76 && x2 === 0x65)) total--;
      }
    }
    t[total++] = x;
  }
  return t.subarray(0, total);
}

/** A tokenizer from a GGUF file's parsed metadata (the tokenizer.ggml.* keys). */
export function tokenizerFromGgufMetadata(metadata: ReadonlyMap<string, GgufValue>): Tokenizer {
  return new Tokenizer(tokenizerDataFromGguf(metadata));
}

/**
 * A tokenizer from a Hugging Face folder's tokenizer.json (with tokenizer_config.json, config.json
 * and generation_config.json for the special ids): the one llama.cpp makes of the same files.
 */
export function tokenizerFromHf(files: HfTokenizerFiles, options?: HfTokenizerOptions): Tokenizer {
  return new Tokenizer(tokenizerDataFromHf(files, options));
}
