// Tokenizers from GGUF metadata: byte-level BPE and SentencePiece, compared token for token with
// llama.cpp (node-llama-cpp, when installed) on vocabularies the tests make themselves.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GgufValue } from '../lib/loaders/gguf/types';
import { Tokenizer, tokenizerFromGgufMetadata, type TokenizerData } from '../lib/tokenizer/index';
import { disposeLlamaCppModels, hasLlamaCpp, llamaCppModel, type LlamaCppModel } from './helpers/llama-cpp';
import { EDGE_CASES, randomStrings, rng } from './helpers/tokenizer-strings';
import { bpeVocabulary, spmVocabulary, tokenizerMetadata, writeTokenizerGguf } from './helpers/tokenizer-vocab';

/** The metadata map a GGUF parser hands over for these keys (string arrays as string[], numbers as typed arrays). */
function parsedMetadata(data: TokenizerData): Map<string, GgufValue> {
  return new Map(tokenizerMetadata(data).map(([key, v]): [string, GgufValue] => {
    if (v.type !== 'array') return [key, v.value];
    if (v.of === 'string') return [key, Array.from(v.value as ArrayLike<string>)];
    return [key, v.of === 'float32' ? Float32Array.from(v.value as ArrayLike<number>) : Int32Array.from(v.value as ArrayLike<number>)];
  }));
}

const STRINGS = [...EDGE_CASES, ...randomStrings(300, 7)];

const BPE_PRES = [
  'default', 'llama3', 'llama-bpe', 'dbrx', 'chatglm-bpe', 'falcon', 'gpt-2', 'trillion', 'starcoder', 'command-r',
  'jais-2', 'qwen2', 'stablelm2', 'qwen35', 'laguna', 'poro-chat', 'bloom', 'viking', 'tekken', 'gpt-4o',
  'seed-coder', 'bailingmoe', 'minicpm5',
];

interface Config { name: string; data: TokenizerData }
const CONFIGS: Config[] = [
  ...BPE_PRES.map((pre) => ({ name: `gpt2/${pre}`, data: { ...bpeVocabulary(), pre } })),
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
      for (const s of STRINGS) {
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
      console.log(`${c.name}: ${compared} encodes compared (${STRINGS.length} strings, parseSpecial off and on), ` +
        `${mismatches.length} mismatches; decode(encode(s)) === s for ${roundTrips} of ${STRINGS.length}`);
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
