// Hugging Face model folders (issue 26): the same random-weight model written both as a GGUF file
// (llama.cpp's layout: llama's q/k rows permuted for adjacent-pair RoPE) and as a folder as
// transformers and mlx-lm write it (config.json, safetensors, tokenizer.json); loadModel must give
// the same logits for both, and the tokenizer from tokenizer.json must equal the GGUF one.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel, open, readGgufInfo, tokenizerFromGgufMetadata, tokenizerFromHf, writeSyntheticModel, type Device, type SyntheticModelSpec, type TokenizerData } from '../lib/index';
import { referenceLogits } from './helpers/decoder-ref';
import { hfConfig, writeHfFolder, type HfFolderOptions } from './helpers/hf-folder';
import { hfTokenizerJson, type HfTokenizerLayout } from './helpers/hf-tokenizer';
import { rng } from './helpers/compare';
import { EDGE_CASES, randomStrings } from './helpers/tokenizer-strings';
import { BPE_USER_DEFINED, bpeVocabulary, spmVocabulary, writeTokenizerGguf } from './helpers/tokenizer-vocab';
import { argmax, softmax } from './helpers/distributions';

type Arch = SyntheticModelSpec['arch'];
const spec = (arch: Arch, type: SyntheticModelSpec['type'], extra: Partial<SyntheticModelSpec> = {}): SyntheticModelSpec => ({
  arch, type, vocab: 512, width: 64, layers: 2, heads: 4, kvHeads: 2, ff: 128, experts: 4, expertsUsed: 2, seed: 5, ...extra,
});
const PROMPT = [1, 300, 301, 302, 303, 350, 400, 77, 5, 260, 261, 420, 499, 3, 4, 300, 301, 302, 280, 281, 282, 283, 284, 285];
const V = 512;

let root: string;
let dev: Device;
let serial = 0;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'mto-hf-'));
  dev = await open({ backend: 'cpu', threads: 2 });
});
afterAll(async () => {
  await dev?.close();
  rmSync(root, { recursive: true, force: true });
});

/** Writes the model as a GGUF file and as a Hugging Face folder; returns both paths and the folder's values. */
function writePair(s: SyntheticModelSpec, options: HfFolderOptions = {}) {
  const n = serial++;
  const gguf = join(root, `${n}-${s.arch}.gguf`);
  const folder = join(root, `${n}-${s.arch}-hf`);
  const weights = writeSyntheticModel(gguf, s, true);
  const values = writeHfFolder(folder, s, weights, options);
  return { gguf, folder, values };
}

async function logitsOf(path: string, ids: readonly number[] = PROMPT): Promise<Float32Array> {
  const model = await loadModel(dev, path, { contextSize: 64 });
  try {
    const cache = model.createCache();
    const logits = await (await model.forward(ids, cache, { logits: 'all' })).toFloat32();
    cache.dispose();
    return logits;
  } finally {
    model.dispose();
  }
}


/** Largest |a - b| and the positions whose top token differs. */
function compare(a: ArrayLike<number>, b: ArrayLike<number>): { maxDiff: number; topDiffer: number[] } {
  let maxDiff = 0;
  const topDiffer: number[] = [];
  for (let p = 0; p < a.length / V; p++) {
    const ra = Array.prototype.slice.call(a, p * V, (p + 1) * V) as number[], rb = Array.prototype.slice.call(b, p * V, (p + 1) * V) as number[];
    for (let i = 0; i < V; i++) maxDiff = Math.max(maxDiff, Math.abs(ra[i] - rb[i]));
    if (argmax(ra) !== argmax(rb)) topDiffer.push(p);
  }
  return { maxDiff, topDiffer };
}


/** Against the float64 reference (its weights the folder's values): KL < 1e-4 and the same top token at every position, as test/model.test.ts asks. */
function expectNear(ours: Float32Array, ref: Float64Array): void {
  for (let p = 0; p < PROMPT.length; p++) {
    const want = softmax(ref.subarray(p * V, (p + 1) * V)), got = softmax(ours.subarray(p * V, (p + 1) * V));
    let kl = 0;
    for (let i = 0; i < V; i++) if (want[i] > 0) kl += want[i] * Math.log(want[i] / Math.max(got[i], 1e-300));
    expect(kl, `position ${p}`).toBeLessThan(1e-4);
    expect(argmax(got), `position ${p}`).toBe(argmax(want));
  }
}

describe('a Hugging Face folder gives the logits of the GGUF file holding the same weights', () => {
  for (const arch of ['llama', 'qwen2', 'qwen3', 'qwen3moe'] as const) {
    for (const type of ['F32', 'F16', 'BF16'] as const) {
      it(`${arch} ${type}`, async () => {
        const { gguf, folder } = writePair(spec(arch, type));
        const { maxDiff, topDiffer } = compare(await logitsOf(folder), await logitsOf(gguf));
        expect(topDiffer).toEqual([]);
        // qwen: the same ops on the same weights, bit for bit. llama: q.k sums its terms in another
        // order (neox pairs on unpermuted rows), a float32 rounding apart that the float16 KV cache
        // can round either way (logits have a standard deviation of about 4).
        if (arch === 'llama') expect(maxDiff).toBeLessThan(1e-3);
        else expect(maxDiff).toBe(0);
      });
    }
  }

  it('llama: the folder is read with neox RoPE pairs; the GGUF permuted rows with adjacent pairs (and the pairing matters)', async () => {
    const s = spec('llama', 'F32');
    const { gguf, folder } = writePair(s);
    const wrong = join(root, 'llama-permuted-hf');
    writeHfFolder(wrong, s, writeSyntheticModel(join(root, 'again.gguf'), s, true), { keepPermuted: true });
    const hf = await loadModel(dev, folder, { contextSize: 8 });
    const gg = await loadModel(dev, gguf, { contextSize: 8 });
    expect([hf.config.rope.style, gg.config.rope.style]).toEqual(['neox', 'interleaved']);
    // The GGUF file holds eps as float32.
    expect({ ...hf.config, eps: Math.fround(hf.config.eps), rope: { ...hf.config.rope, style: 'interleaved' } }).toEqual(gg.config);
    hf.dispose();
    gg.dispose();
    // The GGUF's permuted rows read as a Hugging Face checkpoint: position 0 has no rotation, the rest differ.
    const { maxDiff, topDiffer } = compare(await logitsOf(wrong), await logitsOf(gguf));
    expect(maxDiff).toBeGreaterThan(0.5);
    expect(topDiffer.length).toBeGreaterThan(3);
  });

  it('sharded weights (model.safetensors.index.json), tied embeddings, bfloat16 norms', async () => {
    const s = spec('qwen3', 'F16', { tiedEmbeddings: true });
    const { gguf, folder } = writePair(s, { shards: 3 });
    const { maxDiff, topDiffer } = compare(await logitsOf(folder), await logitsOf(gguf));
    expect(topDiffer).toEqual([]);
    expect(maxDiff).toBe(0);
    // Norms and biases stored as bfloat16 (as published checkpoints have them) against float64 over the same values.
    const q2 = spec('qwen2', 'BF16');
    const { folder: bf, values } = writePair(q2, { bf16Norms: true });
    expectNear(await logitsOf(bf), referenceLogits(q2, values, PROMPT));
  });

  for (const ropeScaling of [{ type: 'linear', factor: 4 }, { type: 'yarn', factor: 4, originalContext: 32 },
    { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalContext: 64 }] as const) {
    it(`rope_scaling ${ropeScaling.type} equals the GGUF's scaling`, async () => {
      const s = spec(ropeScaling.type === 'yarn' ? 'qwen2' : 'llama', 'F32', { ropeScaling });
      const { gguf, folder } = writePair(s);
      const ours = await logitsOf(folder);
      const { maxDiff, topDiffer } = compare(ours, await logitsOf(gguf));
      expect(topDiffer).toEqual([]);
      expect(maxDiff).toBeLessThan(1e-3);
      // And the scaling is applied: the unscaled model differs.
      const plain = writePair({ ...s, ropeScaling: undefined });
      expect(compare(ours, await logitsOf(plain.folder)).maxDiff).toBeGreaterThan(1e-2);
    });
  }
});

describe('MLX-quantized folders against a float64 pass over their dequantized weights', () => {
  for (const [arch, mlx] of [['llama', { bits: 4, groupSize: 64 }], ['qwen3moe', { bits: 4, groupSize: 32, routerBits: 8 }]] as const) {
    it(`${arch}, affine ${mlx.bits}-bit group ${mlx.groupSize}${'routerBits' in mlx ? `, router ${mlx.routerBits}-bit` : ''}`, async () => {
      const s = spec(arch, 'F32');
      const { folder, values } = writePair(s, { mlx });
      const model = await loadModel(dev, folder, { contextSize: 64 });
      // Every quantized weight loaded as affine4/affine8 (its bfloat16 scales exact in float16): nothing converted inexactly.
      expect(model.conversions).toEqual([]);
      model.dispose();
      expectNear(await logitsOf(folder), referenceLogits(s, values, PROMPT));
    });
  }
});

describe('tokenizer.json', () => {
  const strings = [...EDGE_CASES, ...randomStrings(300, 11)];

  /** The GGUF tokenizer of `data` (through a real file) and the one from its tokenizer.json. */
  async function both(data: TokenizerData, layout: HfTokenizerLayout, extra: { config?: Record<string, unknown>; generationConfig?: Record<string, unknown> } = {}) {
    const path = join(root, `tok-${serial++}.gguf`);
    writeTokenizerGguf(path, data);
    const gguf = tokenizerFromGgufMetadata((await readGgufInfo(path)).metadata);
    // Through JSON text, as read from the files.
    const files = JSON.parse(JSON.stringify(hfTokenizerJson(data, layout))) as ReturnType<typeof hfTokenizerJson>;
    return { gguf, hf: tokenizerFromHf({ ...files, ...extra }) };
  }

  const bpe = (pre: string): TokenizerData => {
    // A user-defined token whose text does not look special (llama.cpp's converter makes <|...|> control tokens).
    const v = bpeVocabulary();
    return { ...v, pre, tokens: v.tokens.map((t) => (t === BPE_USER_DEFINED ? '<tool>' : t)) };
  };
  const spm = (): TokenizerData => {
    // tokenizer.json keeps merges, not scores: ties between pieces cannot survive it, so none here.
    const v = spmVocabulary();
    const scores = Float32Array.from(v.scores!, (x, i) => (x === -5 ? -5 - i / 1e4 : x));
    return { ...v, scores };
  };
  const cases: [string, TokenizerData, HfTokenizerLayout][] = [
    ['byte-level, llama3 split, merges as strings', bpe('llama3'), { pre: 'llama3' }],
    ['byte-level, qwen2 split, merges as pairs', bpe('qwen2'), { pre: 'qwen2', pairMerges: true }],
    ['byte-level, GPT-2 ByteLevel regex', bpe('gpt-2'), { pre: 'gpt-2' }],
    ['SentencePiece (llama 2 normalizer)', spm(), {}],
    ['SentencePiece (Metaspace), no BOS', { ...spm(), addBos: false }, { metaspace: true }],
  ];
  for (const [name, data, layout] of cases) {
    it(`${name}: equal to the GGUF tokenizer token for token`, async () => {
      const { gguf, hf } = await both(data, layout);
      expect([hf.model, hf.pre, hf.vocabSize, hf.bos, hf.eos, hf.eot, hf.unk, hf.addBos, hf.addEos, hf.addSpacePrefix])
        .toEqual([gguf.model, gguf.pre === 'llama-bpe' ? 'llama3' : gguf.pre, gguf.vocabSize, gguf.bos, gguf.eos, gguf.eot, gguf.unk, gguf.addBos, gguf.addEos, gguf.addSpacePrefix]);
      expect([...hf.eogIds].sort()).toEqual([...gguf.eogIds].sort());
      for (let id = 0; id < hf.vocabSize; id++) {
        expect([hf.tokenText(id), hf.isControl(id)], `token ${id}`).toEqual([gguf.tokenText(id), gguf.isControl(id)]);
      }
      let compared = 0;
      for (const s of strings) {
        for (const parseSpecial of [false, true]) {
          expect(Array.from(hf.encode(s, { parseSpecial })), JSON.stringify(s)).toEqual(Array.from(gguf.encode(s, { parseSpecial })));
          compared++;
        }
      }
      expect(compared).toBe(2 * strings.length);
      const r = rng(3);
      for (let i = 0; i < 50; i++) {
        const ids = Array.from({ length: 1 + Math.floor(r() * 12) }, () => Math.floor(r() * hf.vocabSize));
        expect(hf.decode(ids, { special: i % 2 === 0 })).toBe(gguf.decode(ids, { special: i % 2 === 0 }));
      }
    });
  }

  it("special ids: eos_token_id lists end generation; config.json's ids where tokenizer_config.json has none; padding to vocab_size", async () => {
    const data = bpe('llama3');
    const { tokenizer, tokenizerConfig } = hfTokenizerJson(data, { pre: 'llama3' });
    const eot = data.tokens.indexOf('<|eot_id|>'), start = data.tokens.indexOf('<|start_header_id|>');
    const tok = tokenizerFromHf({ tokenizer, tokenizerConfig, generationConfig: { eos_token_id: [data.eosId, start] } }, { vocabSize: data.tokens.length + 7 });
    expect(tok.vocabSize).toBe(data.tokens.length + 7);
    expect(tok.tokenText(data.tokens.length + 3)).toBe(`[PAD${data.tokens.length + 3}]`);
    expect([...tok.eogIds].sort((a, b) => a - b)).toEqual([data.eosId!, start, eot].sort((a, b) => a - b));
    const bare = tokenizerFromHf({ tokenizer, tokenizerConfig: {}, config: { bos_token_id: start, eos_token_id: [eot, data.eosId] } });
    // The template's special token is BOS when tokenizer_config.json names none; EOS is the list's first.
    expect([bare.bos, bare.eos, bare.addBos]).toEqual([data.bosId, eot, true]);
    expect(() => tokenizerFromHf({ tokenizer, tokenizerConfig }, { vocabSize: 100 })).toThrow(/token ids reach \d+; config.json's vocab_size is 100/);
  });

  it('an unknown split pattern or model type is E_FORMAT naming it', () => {
    const { tokenizer } = hfTokenizerJson(bpe('llama3'), { pre: 'llama3' });
    const pre = tokenizer.pre_tokenizer as { pretokenizers: { pattern: { Regex: string } }[] };
    pre.pretokenizers[0].pattern.Regex = '\\p{L}+|\\s+';
    expect(() => tokenizerFromHf({ tokenizer })).toThrow(expect.objectContaining({ code: 'E_FORMAT', message: expect.stringContaining('"\\\\p{L}+|\\\\s+" is not one of llama.cpp\'s') }));
    const wordPiece = { ...tokenizer, model: { type: 'WordPiece', vocab: {} } };
    expect(() => tokenizerFromHf({ tokenizer: wordPiece })).toThrow(expect.objectContaining({ code: 'E_FORMAT', message: expect.stringContaining("model.type 'WordPiece' is not supported") }));
  });
});

describe('bad folders and paths', () => {
  let good: string;
  const files = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json'];
  beforeAll(() => { good = writePair(spec('qwen3', 'F32')).folder; });

  /** A copy of the good folder with some files changed (null: left out). */
  function variant(changes: Record<string, string | null>, options?: HfFolderOptions, s = spec('qwen3', 'F32')): string {
    const dir = join(root, `bad-${serial++}`);
    if (options) writeHfFolder(dir, s, writeSyntheticModel(join(dir + '.gguf'), s, true), options);
    else {
      mkdirSync(dir);
      for (const f of files) copyFileSync(join(good, f), join(dir, f));
    }
    for (const [f, text] of Object.entries(changes)) {
      if (text === null) rmSync(join(dir, f));
      else writeFileSync(join(dir, f), text);
    }
    return dir;
  }
  const config = (change: Record<string, unknown>) => JSON.stringify({ ...hfConfig(spec('qwen3', 'F32')), ...change });
  const rejects = (path: string, code: string, ...parts: string[]) =>
    expect(loadModel(dev, path)).rejects.toMatchObject({ code, message: expect.stringMatching(new RegExp(parts.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*'))) });

  it('missing config.json, weights or tokenizer.json', async () => {
    await rejects(variant({ 'config.json': null }), 'E_FORMAT', 'without config.json', 'model.safetensors');
    await rejects(variant({ 'model.safetensors': null }), 'E_FORMAT', 'has no weights', 'model.safetensors.index.json');
    await rejects(variant({ 'tokenizer.json': null }), 'E_FORMAT', 'has no tokenizer.json');
  });

  it('an unsupported model_type, fields missing or wrong, unsupported RoPE or quantization', async () => {
    await rejects(variant({ 'config.json': config({ model_type: 'gemma2', architectures: ['Gemma2ForCausalLM'] }) }), 'E_FORMAT', "config.json': model_type 'gemma2'", 'accepted: llama, mistral, qwen2, qwen3, qwen3_moe');
    await rejects(variant({ 'config.json': config({ hidden_size: undefined }) }), 'E_FORMAT', 'config.json', 'hidden_size is missing');
    await rejects(variant({ 'config.json': config({ num_key_value_heads: 3 }) }), 'E_FORMAT', 'num_attention_heads 4 is not a multiple of num_key_value_heads 3');
    await rejects(variant({ 'config.json': config({ rope_scaling: { rope_type: 'dynamic', factor: 2 } }) }), 'E_FORMAT', "rope_scaling.rope_type 'dynamic' is not supported", 'llama3');
    await rejects(variant({ 'config.json': config({ quantization_config: { quant_method: 'gptq', bits: 4 } }) }), 'E_FORMAT', "quant_method 'gptq' is not supported");
    await rejects(variant({ 'config.json': config({ hidden_act: 'gelu' }) }), 'E_FORMAT', "hidden_act 'gelu' is not supported");
  });

  it('a missing tensor, a tensor of the wrong shape, a tensor the architecture does not have', async () => {
    await rejects(variant({}, { omit: ['model.layers.1.self_attn.k_norm.weight', 'model.layers.1.mlp.up_proj.weight'] }), 'E_FORMAT', "the model has no tensor 'model.layers.1.mlp.up_proj.weight'");
    // config.json says a wider MLP than the tensors hold.
    await rejects(variant({ 'config.json': config({ intermediate_size: 256 }) }), 'E_FORMAT', "tensor 'model.layers.0.mlp.gate_proj.weight' has shape [128, 64]; the config needs [256, 64]");
    await rejects(variant({ 'config.json': config({ num_hidden_layers: 1 }) }), 'E_FORMAT', "'model.layers.1.", 'not qwen3 weights', "config.json's 1 layers");
    const moe = spec('qwen3moe', 'F32');
    await rejects(variant({}, { omit: ['model.layers.0.mlp.experts.2.down_proj.weight'] }, moe), 'E_FORMAT', "no tensor 'model.layers.0.mlp.experts.2.down_proj.weight' (4 experts)");
    await rejects(variant({ 'config.json': JSON.stringify({ ...hfConfig(moe), tie_word_embeddings: false }) }, { omit: ['lm_head.weight'] }, moe), 'E_FORMAT', "tie_word_embeddings is false", "no tensor 'lm_head.weight'");
  });

  it('a path that is neither a GGUF file nor a folder', async () => {
    const junk = join(root, 'notes.txt');
    writeFileSync(junk, 'these are not weights');
    await rejects(junk, 'E_FORMAT', junk, 'not a GGUF file', 'loadModel takes a GGUF file or a Hugging Face model folder');
    await rejects(join(good, 'model.safetensors'), 'E_ARG', 'one file of a Hugging Face model; pass its folder', good);
    await rejects(join(root, 'nothing-here'), 'E_LOAD', 'nothing-here', 'GGUF file or a Hugging Face model folder');
  });
});

describe('command line', () => {
  it('run <folder> streams text from a Hugging Face folder', async () => {
    const { folder } = writePair(spec('llama', 'BF16'));
    const cli = join(__dirname, '..', 'dist', 'cjs', 'cli', 'cli.js');
    const gen = await promisify(execFile)(process.execPath, [cli, 'run', folder, '-p', 'the cat', '-n', '6', '--threads', '2']);
    expect(gen.stdout.startsWith('the cat')).toBe(true);
    expect(gen.stdout.length).toBeGreaterThan('the cat\n'.length);
    expect(gen.stderr).toMatch(/prompt: \d+ tokens, [\d.]+ tokens\/s; generation: \d+ tokens/);
  });
});
