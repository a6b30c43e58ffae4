// Tokenizers from GGUF metadata: byte-level BPE and SentencePiece, compared token for token with
// llama.cpp (node-llama-cpp, when installed) on vocabularies the tests make themselves.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullSuite } from './helpers/suite';
import type { GgufValue } from '../lib/loaders/gguf/types';
import { BYTE_TO_CHAR } from '../lib/tokenizer/bytes';
import { Tokenizer, tokenizerFromGgufMetadata, type TokenizerData } from '../lib/tokenizer/index';
import { SUPPORTED_PRE_TYPES, preType, pretokenize } from '../lib/tokenizer/pretokenize';
import { disposeLlamaCppModels, hasLlamaCpp, llamaCppModel, type LlamaCppModel } from './helpers/llama-cpp';
import { rng } from './helpers/compare';
import { EDGE_CASES, randomStrings } from './helpers/tokenizer-strings';
import { CORPUS, bpeVocabulary, spmVocabulary, tokenizerMetadata, writeTokenizerGguf } from './helpers/tokenizer-vocab';

/** The metadata map a GGUF parser hands over for these keys (string arrays as string[], numbers as typed arrays). */
function parsedMetadata(data: TokenizerData): Map<string, GgufValue> {
  return new Map(tokenizerMetadata(data).map(([key, v]): [string, GgufValue] => {
    if (v.type !== 'array') return [key, v.value];
    if (v.of === 'string') return [key, Array.from(v.value as ArrayLike<string>)];
    return [key, v.of === 'float32' ? Float32Array.from(v.value as ArrayLike<number>) : Int32Array.from(v.value as ArrayLike<number>)];
  }));
}

// The quick suite (npm test) compares 60 random strings and the main pre types; the full one 300
// and every other name of the same pre-tokenizers too.
const STRINGS = [...EDGE_CASES, ...randomStrings(fullSuite ? 300 : 60, 7)];

const BPE_PRES = [
  'default', 'llama3', 'llama-bpe', 'dbrx', 'chatglm-bpe', 'falcon', 'gpt-2', 'trillion', 'starcoder', 'command-r',
  'jais-2', 'qwen2', 'stablelm2', 'qwen35', 'laguna', 'poro-chat', 'bloom', 'viking', 'tekken', 'gpt-4o',
  'seed-coder', 'bailingmoe', 'minicpm5',
];

interface Config { name: string; data: TokenizerData; strings?: readonly string[] }
const CONFIGS: Config[] = [
  ...BPE_PRES.map((pre) => ({ name: `gpt2/${pre}`, data: { ...bpeVocabulary(), pre } })),
  // The other names of the same pre-tokenizers: the edge cases only.
  ...SUPPORTED_PRE_TYPES.filter((pre) => fullSuite && !BPE_PRES.includes(pre))
    .map((pre) => ({ name: `gpt2/${pre}`, data: { ...bpeVocabulary(), pre }, strings: EDGE_CASES })),
  { name: 'gpt2/llama3 add_bos=false add_eos=true', data: { ...bpeVocabulary(), pre: 'llama3', addBos: false, addEos: true } },
  { name: 'gpt2/qwen2 without special ids', data: { ...bpeVocabulary(), pre: 'qwen2', bosId: undefined, eosId: undefined, eotId: undefined } },
  { name: 'gpt2/no pre', data: { ...bpeVocabulary(), pre: undefined } },
  { name: 'llama', data: spmVocabulary() },
  { name: 'llama/no-space-prefix', data: { ...spmVocabulary(), addSpacePrefix: false } },
  { name: 'llama/add_eos', data: { ...spmVocabulary(), addEos: true, addBos: false } },
];

describe.skipIf(!hasLlamaCpp)('tokenizer against llama.cpp', () => {
  let dir = '';
  beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'mto-tok-')); });
  afterAll(async () => { await disposeLlamaCppModels(); rmSync(dir, { recursive: true, force: true }); });

  async function load(c: Config): Promise<[Tokenizer, LlamaCppModel]> {
    const path = join(dir, `${c.name.replace(/[^a-z0-9]+/gi, '_')}.gguf`);
    writeTokenizerGguf(path, c.data);
    return [tokenizerFromGgufMetadata(parsedMetadata(c.data)), await llamaCppModel(path, { vocabOnly: true })];
  }

  for (const c of CONFIGS) {
    it(`${c.name}: encode and decode equal llama.cpp's`, async () => {
      const [tok, ref] = await load(c);
      // node-llama-cpp reports BOS, EOS and EOT only when they are control tokens.
      const ids = (x: number | null) => x ?? -1;
      const shown = (id: number) => (id >= 0 && tok.isControl(id) ? id : -1);
      expect([tok.bos, tok.eos, tok.eot].map(shown), 'bos, eos, eot').toEqual([ids(ref.tokens.bos), ids(ref.tokens.eos), ids(ref.tokens.eot)]);
      const flags = ref.tokens as unknown as { shouldPrependBosToken: boolean; shouldAppendEosToken: boolean };
      expect(tok.addBos && shown(tok.bos) >= 0, 'add_bos').toBe(flags.shouldPrependBosToken);
      expect(tok.addEos && shown(tok.bos) >= 0, 'add_eos').toBe(flags.shouldAppendEosToken);
      const isEog = ref.isEogToken as (id: number) => boolean;
      const eog = Array.from({ length: tok.vocabSize }, (_, i) => i).filter((i) => isEog.call(ref, i));
      expect([...tok.eogIds].sort((a, b) => a - b), 'end-of-generation tokens').toEqual(eog);
      const mismatches: string[] = [];
      let compared = 0, roundTrips = 0;
      const strings = c.strings ?? STRINGS;
      for (const s of strings) {
        for (const parseSpecial of [false, true]) {
          compared++;
          const ours = Array.from(tok.encode(s, { addSpecial: false, parseSpecial }));
          const theirs = ref.tokenize(s, parseSpecial);
          if (!parseSpecial && tok.decode(ours) === s) roundTrips++;
          if (ours.join() !== theirs.join()) {
            mismatches.push(`encode ${JSON.stringify(s)} parseSpecial=${parseSpecial}: ours [${ours}] llama.cpp [${theirs}]`);
            continue;
          }
          for (const special of [false, true]) {
            const a = tok.decode(ours, { special });
            const b = ref.detokenize(theirs, special);
            if (a !== b) mismatches.push(`decode ${JSON.stringify(s)} special=${special}: ours ${JSON.stringify(a)} llama.cpp ${JSON.stringify(b)}`);
          }
        }
      }
      console.log(`${c.name}: ${compared} encodes compared (${strings.length} strings, parseSpecial off and on), ` +
        `${mismatches.length} mismatches; decode(encode(s)) === s for ${roundTrips} of ${strings.length}`);
      expect(mismatches.slice(0, 10)).toEqual([]);
    });
  }

  it('decodes random token sequences (split UTF-8, byte tokens, control tokens) as llama.cpp does', async () => {
    for (const c of [CONFIGS[0], CONFIGS[CONFIGS.length - 2]]) {
      const [tok, ref] = await load(c);
      const r = rng(3);
      for (let i = 0; i < 300; i++) {
        const ids = Array.from({ length: 1 + Math.floor(r() * 12) }, () => Math.floor(r() * tok.vocabSize));
        for (const special of [false, true]) {
          expect(tok.decode(ids, { special }), `${c.name} [${ids}]`).toBe(ref.detokenize(ids, special));
        }
      }
    }
  });
});

// ---- cases checked by hand (no llama.cpp needed) ----

/** A byte-level BPE vocabulary: the 256 byte tokens, the given merges' results, then `extra` tokens. */
function tinyBpe(merges: string[], extra: string[] = [], more: Partial<TokenizerData> = {}): Tokenizer {
  const tokens = [...BYTE_TO_CHAR];
  for (const m of merges) { const t = m.replace(' ', ''); if (!tokens.includes(t)) tokens.push(t); }
  tokens.push(...extra);
  const types = tokens.map((t) => (t.startsWith('<|') ? 3 : 1));
  return new Tokenizer({ model: 'gpt2', pre: 'llama3', tokens, merges, tokenTypes: Int32Array.from(types), ...more });
}

function tinySpm(pieces: Array<[string, number]>, more: Partial<TokenizerData> = {}): Tokenizer {
  const tokens = ['<unk>', '<s>', '</s>'];
  const types = [2, 3, 3];
  const scores = [0, 0, 0];
  for (let b = 0; b < 256; b++) { tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`); types.push(6); scores.push(0); }
  for (const [p, sc] of pieces) { tokens.push(p); types.push(1); scores.push(sc); }
  return new Tokenizer({ model: 'llama', tokens, scores: Float32Array.from(scores), tokenTypes: Int32Array.from(types), ...more });
}

const texts = (tok: Tokenizer, ids: ArrayLike<number>) => Array.from(ids, (id) => tok.tokenText(id));

describe('tokenizer (hand-checked)', () => {
  it('writes bytes in GPT-2 alphabet: printable bytes as themselves, space as Ġ, newline as Ċ', () => {
    expect(BYTE_TO_CHAR[0x41]).toBe('A');
    expect(BYTE_TO_CHAR[0x20]).toBe('Ġ');
    expect(BYTE_TO_CHAR[0x0a]).toBe('Ċ');
    expect(BYTE_TO_CHAR[0xad]).toBe('Ń');  // the 68th byte outside the printable ranges: U+0100 + 67
    expect(new Set(BYTE_TO_CHAR).size).toBe(256);
  });

  it('pre-tokenizes as the llama3, qwen2, gpt2 and default patterns do', () => {
    const split = (pre: string, s: string) => pretokenize(s, preType(pre));
    expect(split('llama3', "Hello world, it's 12345!!\n\n  x")).toEqual(
      ['Hello', ' world', ',', ' it', "'s", ' ', '123', '45', '!!\n\n', ' ', ' x']);
    expect(split('qwen2', 'ab 123')).toEqual(['ab', ' ', '1', '2', '3']);
    expect(split('gpt-2', "I'M  here 42")).toEqual(['I', "'", 'M', ' ', ' here', ' 42']);
    expect(split('llama3', "I'M")).toEqual(['I', "'M"]);
    expect(split('default', 'x 12345 $$a')).toEqual(['x', ' ', '123', '45', ' ', '$$', 'a']);
    expect(split('llama3', '中文 😀😀')).toEqual(['中文', ' 😀😀']);
    expect(() => preType('no-such-pre')).toThrow(/tokenizer.ggml.pre 'no-such-pre'/);
  });

  it('merges BPE pairs lowest rank first, leftmost among equals', () => {
    const tok = tinyBpe(['b c', 'a b', 'ab c', 'Ġ a'], [], { pre: 'gpt-2' });
    expect(texts(tok, tok.encode('abc', { addSpecial: false }))).toEqual(['a', 'bc']);  // "b c" ranks before "a b"
    expect(texts(tok, tok.encode(' abab', { addSpecial: false }))).toEqual(['Ġ', 'ab', 'ab']);  // "a b" before "Ġ a"
    const tied = tinyBpe(['a a'], [], { pre: 'gpt-2' });
    expect(texts(tied, tied.encode('aaa', { addSpecial: false }))).toEqual(['aa', 'a']);
    // llama3 takes a word that is a token whole (ignore_merges), merges or not.
    const whole = tinyBpe(['a b'], ['abc']);
    expect(texts(whole, whole.encode('abc', { addSpecial: false }))).toEqual(['abc']);
  });

  it('adds BOS and EOS as the flags say, and parses special tokens only when asked', () => {
    const tok = tinyBpe(['a b'], ['<|begin_of_text|>', '<|eot_id|>'], { bosId: 257, eosId: 258, addEos: true });
    expect(tok.addBos).toBe(true);  // llama3's default
    expect(Array.from(tok.encode('ab'))).toEqual([257, 256, 258]);
    expect(Array.from(tok.encode('ab<|eot_id|>', { addSpecial: false, parseSpecial: true }))).toEqual([256, 258]);
    expect(tok.encode('<|eot_id|>', { addSpecial: false }).length).toBeGreaterThan(1);
    expect(tok.isEog(258)).toBe(true);
    expect(tok.decode([257, 256, 258])).toBe('ab');
    expect(tok.decode([257, 256, 258], { special: true })).toBe('<|begin_of_text|>ab<|eot_id|>');
  });

  it('SentencePiece: space prefix, highest score first, byte fallback', () => {
    const tok = tinySpm([['▁', -1], ['a', -1], ['b', -1], ['▁a', -2], ['ab', -3], ['▁ab', -4], ['▁b', -9]]);
    const ids = tok.encode('ab b é', { addSpecial: false });
    expect(texts(tok, ids)).toEqual(['▁ab', '▁b', '▁', '<0xC3>', '<0xA9>']);
    expect(Array.from(tok.encode('ab'))).toEqual([1, ...tok.encode('ab', { addSpecial: false })]);
    expect(tok.decode(ids)).toBe('ab b é');  // the prefix space is dropped
    expect(tok.decode([1, ...ids], { removeSpecial: true })).toBe(' ab b é');  // as llama.cpp: kept after a removed BOS
    // A special token resets the space prefix.
    expect(texts(tok, tok.encode('a<s>a', { addSpecial: false, parseSpecial: true }))).toEqual(['▁a', '<s>', '▁a']);
    expect(texts(tok, tok.encode('a<s>', { addSpecial: false }))[0]).toBe('▁a');
  });

  it('cleans spaces before punctuation when decoding BPE as llama.cpp does (not for qwen2)', () => {
    const tok = tinyBpe([], [], { pre: 'default' });
    const ids = tok.encode("Hi , there . it 's", { addSpecial: false });
    expect(tok.decode(ids)).toBe("Hi, there. it's");
    const qwen = tinyBpe([], [], { pre: 'qwen2' });
    expect(qwen.decode(qwen.encode("Hi , x 's", { addSpecial: false }))).toBe("Hi , x 's");
  });

  it('streams decoded text without splitting UTF-8 sequences', () => {
    const tok = tinySpm([['▁', -1]]);
    const ids = tok.encode('😀x', { addSpecial: false });  // ▁ then four byte tokens then 'x' bytes
    const d = tok.decoder();
    const parts = Array.from(ids, (id) => d.push(id));
    expect(parts.slice(0, 5)).toEqual([' ', '', '', '', '😀']);
    expect(parts.join('') + d.flush()).toBe(' 😀x');
    const cut = tok.decoder();
    cut.push(ids[1]);
    expect(cut.flush()).toBe('\ufffd');
  });

  it('reads GGUF metadata and names the key that is missing or wrong', () => {
    const data = spmVocabulary(50);
    const md = new Map<string, GgufValue>([
      ['tokenizer.ggml.model', 'llama'], ['tokenizer.ggml.tokens', [...data.tokens]],
      ['tokenizer.ggml.scores', Array.from(data.scores!)], ['tokenizer.ggml.token_type', Int32Array.from(data.tokenTypes!)],
      ['tokenizer.ggml.bos_token_id', 1n], ['tokenizer.ggml.add_bos_token', false],
    ]);
    const tok = tokenizerFromGgufMetadata(md);
    expect([tok.bos, tok.eos, tok.unk, tok.addBos, tok.addSpacePrefix]).toEqual([1, 2, 0, false, true]);
    const broken = (key: string, value: GgufValue | undefined) => {
      const m = new Map(md);
      if (value === undefined) m.delete(key); else m.set(key, value);
      return () => tokenizerFromGgufMetadata(m);
    };
    const code = { code: 'E_FORMAT' };
    expect(broken('tokenizer.ggml.model', undefined)).toThrow(expect.objectContaining(code));
    expect(broken('tokenizer.ggml.model', undefined)).toThrow(/tokenizer.ggml.model/);
    expect(broken('tokenizer.ggml.model', 'bert')).toThrow(/tokenizer.ggml.model: 'bert'/);
    expect(broken('tokenizer.ggml.tokens', undefined)).toThrow(/tokenizer.ggml.tokens/);
    expect(broken('tokenizer.ggml.tokens', [1, 2])).toThrow(/tokenizer.ggml.tokens/);
    expect(broken('tokenizer.ggml.scores', new Float32Array(3))).toThrow(/tokenizer.ggml.scores: has 3 entries/);
    expect(broken('tokenizer.ggml.token_type', 'x')).toThrow(/tokenizer.ggml.token_type/);
    expect(broken('tokenizer.ggml.bos_token_id', -1)).toThrow(/tokenizer.ggml.bos_token_id/);
    expect(broken('tokenizer.ggml.add_bos_token', 1)).toThrow(/tokenizer.ggml.add_bos_token/);
    const bpe = new Map<string, GgufValue>([['tokenizer.ggml.model', 'gpt2'], ['tokenizer.ggml.tokens', ['a', 'b']]]);
    expect(() => tokenizerFromGgufMetadata(bpe)).toThrow(/tokenizer.ggml.merges/);
    bpe.set('tokenizer.ggml.merges', ['a b']);
    bpe.set('tokenizer.ggml.pre', 'unknown-pre');
    expect(() => tokenizerFromGgufMetadata(bpe)).toThrow(/tokenizer.ggml.pre 'unknown-pre'/);
  });

  it('encodes a few MB/s, and long words without quadratic time', () => {
    const data = bpeVocabulary(300);
    const tok = new Tokenizer({ ...data, pre: 'llama3' });
    const text = CORPUS.repeat(Math.ceil(1_000_000 / CORPUS.length));
    tok.encode(text.slice(0, 10_000));
    let t0 = performance.now();
    const ids = tok.encode(text, { addSpecial: false });
    const mbs = text.length / 1e6 / ((performance.now() - t0) / 1000);
    expect(ids.length).toBeLessThan(text.length);
    const spm = new Tokenizer(spmVocabulary(300));
    t0 = performance.now();
    spm.encode(text);
    const spmMbs = text.length / 1e6 / ((performance.now() - t0) / 1000);
    t0 = performance.now();
    tok.encode('ab'.repeat(100_000));
    spm.encode('ab'.repeat(100_000));
    const longMs = performance.now() - t0;
    console.log(`encode: BPE ${mbs.toFixed(1)} MB/s, SentencePiece ${spmMbs.toFixed(1)} MB/s; two 200 kB words ${longMs.toFixed(0)} ms`);
    // Loose bounds: the suite shares the machine.
    expect(mbs).toBeGreaterThan(0.5);
    expect(spmMbs).toBeGreaterThan(0.5);
    expect(longMs).toBeLessThan(5000);
  });
});
