// Small vocabularies for the tokenizer tests (nothing can be downloaded here): a byte-level BPE
// vocabulary (the 256 byte tokens plus merges trained on built-in multilingual text) and a
// SentencePiece one (pieces with scores, byte fallback tokens), written into GGUF files that
// llama.cpp loads (a tiny llama-architecture model around the vocabulary).
import { writeGguf, type GgufWriteTensor, type GgufWriteValue } from '../../lib/loaders/gguf/write';
import { BYTE_TO_CHAR } from '../../lib/tokenizer/bytes';
import type { TokenizerData } from '../../lib/tokenizer/index';

export const CORPUS = [
  "The quick brown fox jumps over the lazy dog. It's a test; we're testing, they've tested, I'm sure you'll see what I'd do.",
  'In 2024, 1,234,567 people visited 3.14159 places. Call 555-0100 or email test@example.com! Prices: $19.99, €25, £7.',
  'Hello world!  Hello   world!\n\nNew paragraph:\n\tIndented line with tab.\r\nWindows line ending.',
  'def tokenize(text):\n    return [t for t in text.split() if t]  # comment\n\nif __name__ == "__main__":\n    print(tokenize("a b c"))',
  'Le cœur a ses raisons que la raison ne connaît point. Ça va très bien, merci! À bientôt, élève.',
  'Der schnelle braune Fuchs springt über den faulen Hund. Straße, Grüße, Äpfel und Öl.',
  '¿Dónde está la biblioteca? ¡Mañana será otro día! El niño comió piña.',
  'Быстрая коричневая лиса прыгает через ленивую собаку. Привет, мир!',
  'Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο.',
  '我爱自然语言处理。今天天气很好，我们去公园散步吧！中文分词很有意思。',
  '日本語のテキストです。東京は大きな都市です。ひらがなとカタカナ。',
  '한국어 문장입니다. 안녕하세요, 반갑습니다!',
  'مرحبا بالعالم. هذه جملة عربية.',
  'नमस्ते दुनिया। यह एक वाक्य है।',
  'Emoji: 😀 😃 😄 👍🏽 ❤️ 🇺🇸 👨‍👩‍👧‍👦 and symbols ™ © ® ° ± × ÷ → ← ∑ ∞.',
  'Numbers 0 1 12 123 1234 12345 123456 007 3.0e10 ½ ¾ Ⅻ ٣٤٥ १२३.',
  "Contractions: don't won't can't shouldn't it's he'd she'll they're we've I'M YOU'RE IT'S.",
  'JSON: {"key": [1, 2, 3], "nested": {"a": null, "b": true}} and <html><body>text</body></html>',
  'Punctuation!!! What??? Wait... Really?! (yes) [no] {maybe} "quoted" \'single\' `backtick` ~tilde^ |pipe| <angle>',
  'The the THE tHe thE. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.',
].join('\n');

// GPT-2's pre-tokenizer pattern, for training only.
const TRAIN_SPLIT = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

function byteEncode(s: string): string {
  return Array.from(new TextEncoder().encode(s), (b) => BYTE_TO_CHAR[b]).join('');
}

/** Learns `count` merges over `words` (each a list of symbols), most frequent pair first. */
function learnMerges(words: Map<string, number>, split: (w: string) => string[], count: number): Array<[string, string]> {
  const seqs = [...words].map(([w, f]) => ({ syms: split(w), f }));
  const merges: Array<[string, string]> = [];
  for (let m = 0; m < count; m++) {
    const pairs = new Map<string, number>();
    for (const { syms, f } of seqs) {
      for (let i = 0; i + 1 < syms.length; i++) {
        const k = `${syms[i]}\u0000${syms[i + 1]}`;
        pairs.set(k, (pairs.get(k) ?? 0) + f);
      }
    }
    let best = '', bestF = 1;
    for (const [k, f] of pairs) if (f > bestF || (f === bestF && best !== '' && k < best)) { best = k; bestF = f; }
    if (!best) break;
    const [a, b] = best.split('\u0000');
    merges.push([a, b]);
    for (const s of seqs) {
      const out: string[] = [];
      for (let i = 0; i < s.syms.length; i++) {
        if (i + 1 < s.syms.length && s.syms[i] === a && s.syms[i + 1] === b) { out.push(a + b); i++; } else out.push(s.syms[i]);
      }
      s.syms = out;
    }
  }
  return merges;
}

export const BPE_SPECIALS = ['<|begin_of_text|>', '<|end_of_text|>', '<|start_header_id|>', '<|end_header_id|>', '<|eot_id|>'];
/** A user-defined token: split out of the text even without parseSpecial. */
export const BPE_USER_DEFINED = '<|tool|>';

/** A byte-level BPE vocabulary: the 256 byte tokens, `merges` merges, whole-word tokens, special tokens. */
export function bpeVocabulary(mergeCount = 600): TokenizerData {
  const words = new Map<string, number>();
  for (const m of CORPUS.matchAll(TRAIN_SPLIT)) {
    const w = byteEncode(m[0]);
    words.set(w, (words.get(w) ?? 0) + 1);
  }
  const merges = learnMerges(words, (w) => [...w], mergeCount);
  const tokens: string[] = [...BYTE_TO_CHAR];
  const seen = new Set(tokens);
  for (const [a, b] of merges) if (!seen.has(a + b)) { seen.add(a + b); tokens.push(a + b); }
  // Whole words no merge sequence reaches (ignore_merges vocabularies take them whole).
  for (const w of [' unmergedword', 'Zebra', ' quickbrown', '12']) {
    const e = byteEncode(w);
    if (!seen.has(e)) { seen.add(e); tokens.push(e); }
  }
  const types = tokens.map(() => 1);
  const bos = tokens.length;
  for (const s of BPE_SPECIALS) { tokens.push(s); types.push(3); }
  tokens.push(BPE_USER_DEFINED); types.push(4);
  return {
    model: 'gpt2', pre: 'default', tokens, tokenTypes: Int32Array.from(types),
    merges: merges.map(([a, b]) => `${a} ${b}`),
    bosId: bos, eosId: bos + 1, eotId: bos + 4,
  };
}

/** A SentencePiece vocabulary: <unk> <s> </s>, byte tokens, characters and learned pieces with scores. */
export function spmVocabulary(pieceCount = 600): TokenizerData {
  const words = new Map<string, number>();
  for (const line of CORPUS.split('\n')) {
    const w = `\u2581${line.replaceAll(' ', '\u2581')}`;
    for (const m of w.matchAll(/\u2581*[^\u2581]+|\u2581+/gu)) words.set(m[0], (words.get(m[0]) ?? 0) + 1);
  }
  const charCount = new Map<string, number>();
  for (const [w, f] of words) for (const ch of w) charCount.set(ch, (charCount.get(ch) ?? 0) + f);
  const merges = learnMerges(words, (w) => [...w], pieceCount);
  const tokens = ['<unk>', '<s>', '</s>'];
  const types = [2, 3, 3];
  const scores = [0, 0, 0];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`); types.push(6); scores.push(0);
  }
  const seen = new Set(tokens);
  merges.forEach(([a, b], i) => {
    if (!seen.has(a + b)) { seen.add(a + b); tokens.push(a + b); types.push(1); scores.push(-i); }
  });
  // Characters seen at least twice (rarer ones fall back to bytes), scored below every merge.
  [...charCount].filter(([, f]) => f >= 2).sort((x, y) => y[1] - x[1]).forEach(([ch], i) => {
    if (!seen.has(ch)) { seen.add(ch); tokens.push(ch); types.push(1); scores.push(-1000 - i); }
  });
  // Equal scores (ties break leftmost first) and a user-defined token.
  for (const p of ['\u2581ab', 'ab', 'ba', '\u2581ba']) {
    if (!seen.has(p)) { seen.add(p); tokens.push(p); types.push(1); scores.push(-5); }
  }
  tokens.push('<tool>'); types.push(4); scores.push(0);
  return {
    model: 'llama', tokens, scores: Float32Array.from(scores), tokenTypes: Int32Array.from(types),
    bosId: 1, eosId: 2, unkId: 0,
  };
}

/** GGUF metadata entries for a tokenizer (what llama.cpp's converters write). */
export function tokenizerMetadata(data: TokenizerData): Array<[string, GgufWriteValue]> {
  const md: Array<[string, GgufWriteValue]> = [
    ['tokenizer.ggml.model', { type: 'string', value: data.model }],
  ];
  if (data.pre !== undefined) md.push(['tokenizer.ggml.pre', { type: 'string', value: data.pre }]);
  md.push(['tokenizer.ggml.tokens', { type: 'array', of: 'string', value: [...data.tokens] }]);
  if (data.scores) md.push(['tokenizer.ggml.scores', { type: 'array', of: 'float32', value: data.scores }]);
  if (data.tokenTypes) md.push(['tokenizer.ggml.token_type', { type: 'array', of: 'int32', value: data.tokenTypes }]);
  if (data.merges) md.push(['tokenizer.ggml.merges', { type: 'array', of: 'string', value: [...data.merges] }]);
  const ids: Array<[number | undefined, string]> = [
    [data.bosId, 'bos_token_id'], [data.eosId, 'eos_token_id'], [data.eotId, 'eot_token_id'],
    [data.unkId, 'unknown_token_id'], [data.padId, 'padding_token_id'],
  ];
  for (const [id, key] of ids) if (id !== undefined) md.push([`tokenizer.ggml.${key}`, { type: 'uint32', value: id }]);
  const flags: Array<[boolean | undefined, string]> = [
    [data.addBos, 'add_bos_token'], [data.addEos, 'add_eos_token'], [data.addSpacePrefix, 'add_space_prefix'],
  ];
  for (const [f, key] of flags) if (f !== undefined) md.push([`tokenizer.ggml.${key}`, { type: 'bool', value: f }]);
  return md;
}

/** Writes a tiny llama-architecture GGUF (zero weights) around the vocabulary. */
export function writeTokenizerGguf(path: string, data: TokenizerData): void {
  const E = 32, F = 64, V = data.tokens.length;
  const t = (name: string, dims: number[]): GgufWriteTensor => ({
    name, dims, type: 'F32', data: () => new Uint8Array(dims.reduce((a, b) => a * b, 1) * 4),
  });
  writeGguf(path, [
    ['general.architecture', { type: 'string', value: 'llama' }],
    ['general.name', { type: 'string', value: 'tokenizer test' }],
    ['llama.context_length', { type: 'uint32', value: 256 }],
    ['llama.embedding_length', { type: 'uint32', value: E }],
    ['llama.block_count', { type: 'uint32', value: 1 }],
    ['llama.feed_forward_length', { type: 'uint32', value: F }],
    ['llama.attention.head_count', { type: 'uint32', value: 2 }],
    ['llama.attention.head_count_kv', { type: 'uint32', value: 2 }],
    ['llama.attention.layer_norm_rms_epsilon', { type: 'float32', value: 1e-5 }],
    ...tokenizerMetadata(data),
  ], [
    t('token_embd.weight', [E, V]), t('output_norm.weight', [E]), t('output.weight', [E, V]),
    t('blk.0.attn_norm.weight', [E]), t('blk.0.attn_q.weight', [E, E]), t('blk.0.attn_k.weight', [E, E]),
    t('blk.0.attn_v.weight', [E, E]), t('blk.0.attn_output.weight', [E, E]), t('blk.0.ffn_norm.weight', [E]),
    t('blk.0.ffn_gate.weight', [E, F]), t('blk.0.ffn_up.weight', [E, F]), t('blk.0.ffn_down.weight', [F, E]),
  ]);
}
