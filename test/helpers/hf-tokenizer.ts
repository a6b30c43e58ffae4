// tokenizer.json and tokenizer_config.json for a vocabulary, laid out as Hugging Face's
// tokenizers library and transformers write them (from their file format, apart from
// lib/tokenizer/hf.ts): the tests' Hugging Face folders. Byte-level vocabularies get the Split
// pattern published llama 3 / qwen2 files carry, or GPT-2's ByteLevel regex; SentencePiece ones
// get merges as transformers' SentencePieceExtractor makes them from the pieces' scores.
import type { TokenizerData } from '../../lib/tokenizer/index';

/** The Split patterns as published tokenizer.json files spell them. */
export const SPLIT_PATTERNS = {
  llama3: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  qwen2: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  // o200k, as gpt-oss's tokenizer.json (and tiktoken's o200k_base) spell it.
  'gpt-4o': "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
} as const;

export interface HfTokenizerLayout {
  /** Byte-level: the Split pattern's pre type, or 'gpt-2' (ByteLevel's own regex). */
  pre?: keyof typeof SPLIT_PATTERNS | 'gpt-2';
  /** Merges as [left, right] pairs (newer files) instead of "left right" strings. */
  pairMerges?: boolean;
  /** SentencePiece: a Metaspace pre-tokenizer (mistral v0.3 style) instead of llama 2's normalizer. */
  metaspace?: boolean;
}

export interface HfTokenizerJson {
  tokenizer: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
}

const TYPE = { normal: 1, unknown: 2, control: 3, userDefined: 4, byte: 6 };

/** transformers' SentencePieceExtractor: every split of a piece into two pieces, pieces by score (highest first). */
function sentencePieceMerges(tokens: readonly string[], scores: ArrayLike<number>, types: ArrayLike<number>): [string, string][] {
  const id = new Map(tokens.map((t, i) => [t, i]));
  const pieces = tokens.map((t, i) => i).filter((i) => types[i] === TYPE.normal).sort((a, b) => scores[b] - scores[a] || a - b);
  const merges: [string, string][] = [];
  for (const p of pieces) {
    const chars = [...tokens[p]];
    const local: [string, string][] = [];
    for (let k = 1; k < chars.length; k++) {
      const l = chars.slice(0, k).join(''), r = chars.slice(k).join('');
      if (id.has(l) && id.has(r)) local.push([l, r]);
    }
    local.sort((x, y) => id.get(x[0])! - id.get(y[0])! || id.get(x[1])! - id.get(y[1])!);
    merges.push(...local);
  }
  return merges;
}

/** tokenizer.json and tokenizer_config.json for `data` (a 'gpt2' or 'llama' vocabulary). */
export function hfTokenizerJson(data: TokenizerData, layout: HfTokenizerLayout = {}): HfTokenizerJson {
  const types = data.tokenTypes ?? data.tokens.map(() => TYPE.normal);
  const vocab: Record<string, number> = {};
  const added: Record<string, unknown>[] = [];
  data.tokens.forEach((t, i) => {
    const type = types[i];
    if (type === TYPE.control || type === TYPE.unknown || type === TYPE.userDefined) {
      added.push({ id: i, content: t, single_word: false, lstrip: false, rstrip: false, normalized: type === TYPE.userDefined, special: type !== TYPE.userDefined });
      // SentencePiece vocabularies hold their special pieces; byte-level ones add them after the vocabulary.
      if (data.model === 'llama') vocab[t] = i;
    } else {
      vocab[t] = i;
    }
  });
  const text = (id: number | undefined) => (id === undefined ? null : data.tokens[id]);
  const bos = text(data.bosId ?? (data.model === 'llama' ? 1 : undefined));
  const template = (special: string) => ({
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: special, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
    pair: [{ SpecialToken: { id: special, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: special, type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { [special]: { id: special, ids: [data.tokens.indexOf(special)], tokens: [special] } },
  });
  const tokenizerConfig: Record<string, unknown> = { tokenizer_class: 'PreTrainedTokenizerFast', bos_token: bos, eos_token: text(data.eosId), clean_up_tokenization_spaces: false };
  if (data.addBos !== undefined) tokenizerConfig.add_bos_token = data.addBos;
  if (data.addEos !== undefined) tokenizerConfig.add_eos_token = data.addEos;

  if (data.model === 'gpt2') {
    const pre = layout.pre ?? 'llama3';
    const merges = (data.merges ?? []).map((m) => { const at = m.indexOf(' ', 1); return [m.slice(0, at), m.slice(at + 1)] as [string, string]; });
    const byteLevel = (useRegex: boolean) => ({ type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: useRegex });
    return {
      tokenizer: {
        version: '1.0', truncation: null, padding: null, added_tokens: added, normalizer: pre === 'qwen2' ? { type: 'NFC' } : null,
        pre_tokenizer: pre === 'gpt-2' ? byteLevel(true) : {
          type: 'Sequence',
          pretokenizers: [{ type: 'Split', pattern: { Regex: SPLIT_PATTERNS[pre] }, behavior: 'Isolated', invert: false }, byteLevel(false)],
        },
        post_processor: pre === 'llama3' && bos ? { type: 'Sequence', processors: [byteLevel(true), template(bos)] } : byteLevel(false),
        decoder: byteLevel(true),
        model: {
          type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false,
          byte_fallback: false, ignore_merges: pre === 'llama3', vocab,
          merges: layout.pairMerges ? merges : merges.map(([a, b]) => `${a} ${b}`),
        },
      },
      tokenizerConfig,
    };
  }
  const merges = sentencePieceMerges(data.tokens, data.scores ?? new Float32Array(data.tokens.length), types);
  const spacePrefix = data.addSpacePrefix ?? true;
  const replace = { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' };
  tokenizerConfig.unk_token = text(data.unkId ?? 0);
  tokenizerConfig.add_bos_token ??= true;
  tokenizerConfig.add_eos_token ??= false;
  return {
    tokenizer: {
      version: '1.0', truncation: null, padding: null, added_tokens: added,
      normalizer: layout.metaspace ? null : { type: 'Sequence', normalizers: [...(spacePrefix ? [{ type: 'Prepend', prepend: '\u2581' }] : []), replace] },
      pre_tokenizer: layout.metaspace ? { type: 'Metaspace', replacement: '\u2581', prepend_scheme: spacePrefix ? 'first' : 'never', split: false } : null,
      post_processor: data.addBos !== false && bos ? template(bos) : null,
      decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '\u2581' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
      model: {
        type: 'BPE', dropout: null, unk_token: text(data.unkId ?? 0), continuing_subword_prefix: null, end_of_word_suffix: null,
        fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab,
        merges: layout.pairMerges ? merges : merges.map(([a, b]) => `${a} ${b}`),
      },
    },
    tokenizerConfig,
  };
}
