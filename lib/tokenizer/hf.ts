// Tokenizers from a Hugging Face folder: tokenizer.json (a "BPE" model) read into the same
// TokenizerData a GGUF file holds, the way llama.cpp's convert_hf_to_gguf.py reads it, so one
// Tokenizer serves both kinds of model files:
// - byte-level BPE (GPT-2's byte alphabet: llama 3, qwen2/3, Mistral's tekken) -> 'gpt2', with
//   the pre type its split pattern names (hf-pre.ts);
// - SentencePiece BPE (llama 2, mistral: "▁" for spaces, byte_fallback <0xXX> tokens) -> 'llama'.
//   tokenizer.json keeps no piece scores, only the merges in priority order (transformers writes
//   them sorted by the merged piece's score), so a piece's score is minus the rank of the first
//   merge making it.
// Special ids and the add-BOS/EOS flags come from tokenizer_config.json, then tokenizer.json's
// post-processor, then config.json / generation_config.json (whose eos_token_id may be a list:
// every id of it ends generation).
import { TensorOpsError } from '../errors';
import { describe } from '../validate';
import type { TokenizerData } from './data';
import { hfPreType } from './hf-pre';
import { TOKEN_TYPE } from './special';

/** A Hugging Face folder's tokenizer files, parsed. */
export interface HfTokenizerFiles {
  /** tokenizer.json. */
  tokenizer: Record<string, unknown>;
  /** tokenizer_config.json: bos_token, eos_token, add_bos_token, ... */
  tokenizerConfig?: Record<string, unknown>;
  /** config.json: bos_token_id, eos_token_id (used where tokenizer_config.json does not say). */
  config?: Record<string, unknown>;
  /** generation_config.json: eos_token_id (a list: each ends generation). */
  generationConfig?: Record<string, unknown>;
}

export interface HfTokenizerOptions {
  /**
   * The model's vocabulary (config.json's vocab_size): ids past the tokenizer's become unused
   * `[PAD<id>]` tokens, as llama.cpp's converter writes them; a larger tokenizer is E_FORMAT.
   */
  vocabSize?: number;
}

const MAX_VOCAB = 1 << 24;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fail(file: string, message: string): TensorOpsError {
  return new TensorOpsError('E_FORMAT', `${file}: ${message}`);
}

/** Whether a pre-tokenizer / normalizer / decoder (or a Sequence of them) has a step of `type`. */
function hasStep(node: unknown, type: string): boolean {
  if (!isObject(node)) return false;
  if (node.type === type) return true;
  const list = node.pretokenizers ?? node.normalizers ?? node.decoders ?? node.processors;
  return Array.isArray(list) && list.some((n) => hasStep(n, type));
}

/** The steps of a Sequence (or the one step). */
function stepsOf(node: unknown, key: string): Record<string, unknown>[] {
  if (!isObject(node)) return [];
  const list = node.type === 'Sequence' ? node[key] : [node];
  return Array.isArray(list) ? list.filter(isObject) : [];
}

/** llama.cpp's converter makes these added tokens control tokens even when not marked special. */
function looksSpecial(text: string): boolean {
  return (text.startsWith('<|') && text.endsWith('|>')) || (text.startsWith('<｜') && text.endsWith('｜>'))
    || ['<pad>', '<mask>', '<2mass>', '[@BOS@]'].includes(text) || (text.startsWith('<unused') && text.endsWith('>'));
}

/** A special token's text in tokenizer_config.json: a string, or an AddedToken object's content. */
function tokenText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (isObject(v) && typeof v.content === 'string') return v.content;
  return undefined;
}

/** config.json / generation_config.json token ids: a number or a list of numbers. */
function idList(v: unknown): number[] {
  const list = Array.isArray(v) ? v : [v];
  return list.filter((x): x is number => Number.isInteger(x) && (x as number) >= 0);
}

/** The merges of a BPE model: "left right" strings or [left, right] pairs, as "left right". */
function mergesOf(model: Record<string, unknown>): string[] {
  const merges = model.merges ?? [];
  if (!Array.isArray(merges)) throw fail('tokenizer.json', `model.merges must be an array; got ${describe(merges)}`);
  return merges.map((m, i) => {
    if (typeof m === 'string') return m;
    if (Array.isArray(m) && m.length === 2 && typeof m[0] === 'string' && typeof m[1] === 'string') return `${m[0]} ${m[1]}`;
    throw fail('tokenizer.json', `model.merges[${i}] must be "left right" or [left, right]; got ${describe(m)}`);
  });
}

/** Reads a Hugging Face tokenizer (tokenizer.json and its companions) as TokenizerData; E_FORMAT naming the file and field. */
export function tokenizerDataFromHf(files: HfTokenizerFiles, options: HfTokenizerOptions = {}): TokenizerData {
  const json = files.tokenizer;
  const model = json.model;
  if (!isObject(model)) throw fail('tokenizer.json', `model must be an object; got ${describe(model)}`);
  if (model.type !== 'BPE' && !(model.type === undefined && model.merges !== undefined)) {
    throw fail('tokenizer.json', `model.type ${describe(model.type)} is not supported (BPE is: byte-level or SentencePiece-style)`);
  }
  const vocab = model.vocab;
  if (!isObject(vocab)) throw fail('tokenizer.json', 'model.vocab must be an object of token -> id');
  const added = json.added_tokens ?? [];
  if (!Array.isArray(added) || !added.every((t) => isObject(t) && typeof t.content === 'string' && Number.isInteger(t.id) && (t.id as number) >= 0)) {
    throw fail('tokenizer.json', 'added_tokens must be an array of { id, content, special }');
  }
  const addedTokens = added as { id: number; content: string; special?: boolean }[];

  // Every id, vocabulary first; ids nothing names stay unused [PAD<id>] tokens.
  let n = options.vocabSize ?? 0;
  const entries: [string, number][] = [];
  for (const [text, id] of Object.entries(vocab)) {
    if (!Number.isInteger(id) || (id as number) < 0 || (id as number) >= MAX_VOCAB) {
      throw fail('tokenizer.json', `model.vocab['${text}'] must be a token id from 0 to ${MAX_VOCAB - 1}; got ${describe(id)}`);
    }
    entries.push([text, id as number]);
  }
  for (const [, id] of entries) n = Math.max(n, id + 1);
  for (const t of addedTokens) n = Math.max(n, t.id + 1);
  if (options.vocabSize !== undefined && n > options.vocabSize) {
    throw fail('tokenizer.json', `token ids reach ${n - 1}; config.json's vocab_size is ${options.vocabSize}`);
  }
  if (n === 0) throw fail('tokenizer.json', 'the vocabulary is empty');
  const tokens = Array.from({ length: n }, (_, i) => `[PAD${i}]`);
  const types = new Int32Array(n).fill(TOKEN_TYPE.UNUSED);
  for (const [text, id] of entries) { tokens[id] = text; types[id] = TOKEN_TYPE.NORMAL; }

  const byteLevel = hasStep(json.pre_tokenizer, 'ByteLevel');
  const sentencePiece = !byteLevel && (model.byte_fallback === true || hasStep(json.pre_tokenizer, 'Metaspace')
    || stepsOf(json.normalizer, 'normalizers').some((s) => s.type === 'Replace' && s.content === '\u2581'));
  if (!byteLevel && !sentencePiece) {
    throw fail('tokenizer.json', 'a BPE model must be byte-level (a ByteLevel pre-tokenizer) or SentencePiece-style (Metaspace, or byte_fallback)');
  }
  const data: TokenizerData = { model: byteLevel ? 'gpt2' : 'llama', tokens, tokenTypes: types };
  const merges = mergesOf(model);
  const idOf = new Map<string, number>();
  for (let i = 0; i < n; i++) if (types[i] !== TOKEN_TYPE.UNUSED) idOf.set(tokens[i], i);

  if (byteLevel) {
    data.pre = hfPreType(json.pre_tokenizer);
    data.merges = merges;
  } else {
    // Scores from the merges' priority (see above); pieces no merge makes rank after every merge.
    const scores = new Float32Array(n);
    const scored = new Uint8Array(n);
    merges.forEach((m, rank) => {
      const at = m.indexOf(' ', 1);
      const id = at < 0 ? undefined : idOf.get(m.slice(0, at) + m.slice(at + 1));
      if (id !== undefined && !scored[id]) { scored[id] = 1; scores[id] = -rank; }
    });
    for (let i = 0; i < n; i++) {
      if (/^<0x[0-9A-Fa-f]{2}>$/.test(tokens[i]) && types[i] === TOKEN_TYPE.NORMAL) types[i] = TOKEN_TYPE.BYTE;
      else if (!scored[i] && types[i] === TOKEN_TYPE.NORMAL && [...tokens[i]].length > 1) scores[i] = -(merges.length + i);
    }
    data.scores = scores;
    const unk = tokenText(model.unk_token);
    const unkId = unk === undefined ? undefined : idOf.get(unk);
    if (unkId !== undefined) { data.unkId = unkId; types[unkId] = TOKEN_TYPE.UNKNOWN; }
    // The space prefix: Metaspace's prepend_scheme (or older add_prefix_space), or a Prepend("▁") normalizer.
    const meta = stepsOf(json.pre_tokenizer, 'pretokenizers').find((s) => s.type === 'Metaspace');
    data.addSpacePrefix = meta
      ? (meta.prepend_scheme !== undefined ? meta.prepend_scheme !== 'never' : meta.add_prefix_space !== false)
      : stepsOf(json.normalizer, 'normalizers').some((s) => s.type === 'Prepend' && s.prepend === '\u2581');
  }
  for (const t of addedTokens) {
    tokens[t.id] = t.content;
    idOf.set(t.content, t.id);
    if (types[t.id] !== TOKEN_TYPE.UNKNOWN) types[t.id] = t.special || looksSpecial(t.content) ? TOKEN_TYPE.CONTROL : TOKEN_TYPE.USER_DEFINED;
  }
  specialIds(files, data, idOf);
  return data;
}

/** bos/eos/pad ids, the add flags and extra end-of-generation ids, by the precedence above. */
function specialIds(files: HfTokenizerFiles, data: TokenizerData, idOf: ReadonlyMap<string, number>): void {
  const tc = files.tokenizerConfig ?? {};
  const byText = (key: string): number | undefined => {
    const text = tokenText(tc[key]);
    if (text === undefined) return undefined;
    // A text the vocabulary lacks names nothing (llama.cpp's converter skips it too).
    return idOf.get(text);
  };
  const fromConfigs = (key: string) => [...idList(files.config?.[key]), ...idList(files.generationConfig?.[key])]
    .filter((id) => id < data.tokens.length);
  let bos = byText('bos_token');
  const eos = byText('eos_token') ?? fromConfigs('eos_token_id')[0];
  const pad = byText('pad_token') ?? fromConfigs('pad_token_id')[0];
  const unk = byText('unk_token');

  // The post-processor's template: a special token before the text adds BOS, one after it EOS.
  let addBos: boolean | undefined, addEos: boolean | undefined;
  const template = stepsOf(files.tokenizer.post_processor, 'processors').find((p) => p.type === 'TemplateProcessing');
  const single = template && Array.isArray(template.single) ? template.single.filter(isObject) : [];
  if (single.length > 1) {
    const special = (item: Record<string, unknown>) => (isObject(item.SpecialToken) && typeof item.SpecialToken.id === 'string' ? item.SpecialToken.id : undefined);
    const first = special(single[0]), last = special(single[single.length - 1]);
    addBos = first !== undefined;
    if (first !== undefined && bos === undefined) bos = idOf.get(first);
    addEos = last !== undefined;
  }
  bos ??= fromConfigs('bos_token_id')[0];
  if (typeof tc.add_bos_token === 'boolean') addBos = tc.add_bos_token;
  if (typeof tc.add_eos_token === 'boolean') addEos = tc.add_eos_token;

  if (bos !== undefined) data.bosId = bos;
  if (eos !== undefined) data.eosId = eos;
  if (pad !== undefined) data.padId = pad;
  if (unk !== undefined) data.unkId = unk;
  if (addBos !== undefined) data.addBos = addBos;
  if (addEos !== undefined) data.addEos = addEos;
  const eog = fromConfigs('eos_token_id').filter((id) => id !== eos);
  if (eog.length) data.eogIds = [...new Set(eog)];
}
