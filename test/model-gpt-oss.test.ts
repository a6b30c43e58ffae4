// gpt-oss (issue 26's showcase) from generated GGUF files: attention with sinks and q/k/v/o biases,
// sliding-window layers, YaRN, a router with a bias, MXFP4 experts with biases and swiglu_oai,
// the o200k-style BPE tokenizer. Checked against a float64 forward pass written from llama.cpp's
// LLM_ARCH_OPENAI_MOE graph (always) and against llama.cpp itself on the same files, prompt and
// decode steps (where node-llama-cpp is installed: npm run bench:peers).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeGgml, encodeGgml, loadModel, open, writeGguf, writeSyntheticModel, type Device, type SyntheticModelSpec } from '../lib/index';
import { referenceLogits } from './helpers/decoder-ref';
import { writeGptOssHfFolder } from './helpers/hf-gpt-oss';
import { disposeLlamaCppModels, hasLlamaCpp, llamaCppDecodeProbabilities, llamaCppGreedy, llamaCppModel } from './helpers/llama-cpp';
import { argmax, kl, softmax } from './helpers/distributions';

// Four layers (0 and 2 slide), a window of 8 over a 24-token prompt and 8 decode steps, YaRN, heads
// of 32 (q is 128 wide over a width of 64, as gpt-oss's 64 heads of 64 over 2880), 4 experts, 2 used.
const SPEC: SyntheticModelSpec = {
  arch: 'gpt-oss', type: 'F32', vocab: 512, width: 64, layers: 4, heads: 4, kvHeads: 2, headDim: 32, ff: 128,
  experts: 4, expertsUsed: 2, slidingWindow: 8, ropeScaling: { type: 'yarn', factor: 4, originalContext: 32 }, seed: 23,
};
const PROMPT = [300, 301, 302, 303, 350, 400, 77, 5, 260, 261, 420, 499, 3, 4, 300, 301, 302, 280, 281, 282, 283, 284, 285, 290];
const STEPS = [40, 41, 300, 301, 302, 7, 8, 9];
const V = SPEC.vocab;

let dir: string;
let dev: Device;
const file = (name: string) => join(dir, `gpt-oss-${name}.gguf`);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mto-gpt-oss-'));
  dev = await open({ backend: 'cpu', threads: 2 });
});
afterAll(async () => {
  await disposeLlamaCppModels();
  await dev?.close();
  rmSync(dir, { recursive: true, force: true });
});

const rows = (logits: Float32Array | Float64Array, n: number) => Array.from({ length: n }, (_, p) => softmax(logits.subarray(p * V, (p + 1) * V)));

/** Our distributions after each prompt prefix (one forward), then after each decoded step. */
async function ourProbabilities(path: string, prompt: readonly number[], steps: readonly number[] = [], cacheDtype: 'float16' | 'mxfp8' = 'float16'): Promise<Float64Array[]> {
  const model = await loadModel(dev, path, { contextSize: 64, cacheDtype });
  try {
    const cache = model.createCache();
    const out = rows(await (await model.forward(prompt, cache, { logits: 'all' })).toFloat32(), prompt.length);
    for (const id of steps) out.push(softmax(await (await model.forward([id], cache)).toFloat32()));
    cache.dispose();
    return out;
  } finally {
    model.dispose();
  }
}

/** Every position decoded one token at a time (the rows linear's int8 activations take). */
async function decodedProbabilities(path: string, ids: readonly number[], cacheDtype: 'float16' | 'mxfp8', activations: 'float32' | 'int8' = 'float32'): Promise<Float64Array[]> {
  const model = await loadModel(dev, path, { contextSize: 64, cacheDtype, activations });
  try {
    const cache = model.createCache();
    const out: Float64Array[] = [];
    for (const id of ids) out.push(softmax(await (await model.forward([id], cache)).toFloat32()));
    cache.dispose();
    return out;
  } finally {
    model.dispose();
  }
}

/** The reference's top probability minus its second: how decided the top-1 token is. */
function margin(p: Float64Array): number {
  let a = 0, b = 0;
  for (const x of p) { if (x > a) { b = a; a = x; } else if (x > b) b = x; }
  return a - b;
}

function compare(ref: Float64Array[], ours: Float64Array[]): { agree: number; decidedAgree: number; mean: number; max: number } {
  const kls = ref.map((p, i) => kl(p, ours[i]));
  const same = (p: Float64Array, i: number) => argmax(p) === argmax(ours[i]);
  const decided = ref.map((p, i) => i).filter((i) => margin(ref[i]) >= 0.05);
  return {
    agree: ref.filter(same).length / ref.length,
    // Top-1 agreement where the reference's top two differ by 5% probability or more.
    decidedAgree: decided.filter((i) => same(ref[i], i)).length / Math.max(decided.length, 1),
    mean: kls.reduce((a, b) => a + b, 0) / kls.length,
    max: Math.max(...kls),
  };
}

describe('gpt-oss against a float64 forward pass', () => {
  it('F32 weights: loads as gpt-oss (sliding layers 0 and 2, swiglu_oai, YaRN), distributions within KL 1e-4', async () => {
    const path = file('F32-ref');
    const weights = writeSyntheticModel(path, SPEC, true);
    const model = await loadModel(dev, path, { contextSize: 64 });
    expect(model.config).toMatchObject({
      arch: 'gpt-oss', experts: 4, expertsUsed: 2, headDim: 32, swiglu: { alpha: 1.702, limit: 7 },
      slidingWindow: { size: 8, layers: [true, false, true, false] }, rope: { style: 'neox', scale: 4 },
    });
    model.dispose();
    const all = [...PROMPT, ...STEPS];
    const ref = rows(referenceLogits(SPEC, weights, all), all.length);
    const ours = await ourProbabilities(path, PROMPT, STEPS);
    for (let p = 0; p < all.length; p++) {
      expect(kl(ref[p], ours[p]), `position ${p}`).toBeLessThan(1e-4);
      expect(argmax(ours[p]), `position ${p}`).toBe(argmax(ref[p]));
    }
  });

  it('MXFP4 experts: equal to the float64 pass over ggml\'s decoded experts (loading is exact)', async () => {
    const spec = { ...SPEC, type: 'F16', expertType: 'MXFP4' } as const;
    const path = file('MXFP4-ref');
    const kept = writeSyntheticModel(path, spec, true);
    const decoded = new Map<string, ArrayLike<number>>();
    // 2-D weights hold ggml's F16 values, the experts ggml's MXFP4 decode; norms, biases, sinks stay F32.
    for (const [name, v] of kept) {
      const t = name.includes('_exps.weight') ? 'MXFP4' : name.endsWith('.weight') && !/norm|sinks|gate_inp/.test(name) ? 'F16' : null;
      decoded.set(name, t ? decodeGgml(t, encodeGgml(t, v)) : v);
    }
    const ref = rows(referenceLogits(spec, decoded, PROMPT), PROMPT.length);
    const ours = await ourProbabilities(path, PROMPT);
    for (let p = 0; p < PROMPT.length; p++) {
      expect(kl(ref[p], ours[p]), `position ${p}`).toBeLessThan(1e-4);
      expect(argmax(ours[p]), `position ${p}`).toBe(argmax(ref[p]));
    }
  });

  it('decoding one token at a time, or the prompt in chunks, equals one prefill; float16 and mxfp8 caches', async () => {
    const path = file('F32-decode');
    writeSyntheticModel(path, SPEC);
    for (const cacheDtype of ['float16', 'mxfp8'] as const) {
      const prefill = await ourProbabilities(path, PROMPT, [], cacheDtype);
      const decoded = await decodedProbabilities(path, PROMPT, cacheDtype);
      // Chunks of 5 and 7 positions past the window: band masks over a slice that starts after 0.
      const model = await loadModel(dev, path, { contextSize: 64, cacheDtype });
      const cache = model.createCache();
      const chunked: Float64Array[] = [];
      for (const [a, b] of [[0, 5], [5, 12], [12, 17], [17, 24]]) {
        chunked.push(...rows(await (await model.forward(PROMPT.slice(a, b), cache, { logits: 'all' })).toFloat32(), b - a));
      }
      model.dispose();
      for (let p = 0; p < PROMPT.length; p++) {
        expect(kl(prefill[p], decoded[p]), `${cacheDtype} decode, position ${p}`).toBeLessThan(1e-6);
        expect(kl(prefill[p], chunked[p]), `${cacheDtype} chunks, position ${p}`).toBeLessThan(1e-6);
      }
    }
  });

  it('the window matters: without it the distributions differ, and only past the window', async () => {
    writeSyntheticModel(file('w8'), SPEC);
    writeSyntheticModel(file('w64'), { ...SPEC, slidingWindow: 64 });
    const windowed = await ourProbabilities(file('w8'), PROMPT);
    const wide = await ourProbabilities(file('w64'), PROMPT);
    // Positions 0..7 see every key either way (the window is 8); later ones lose keys on layers 0 and 2.
    for (let p = 0; p < 8; p++) expect(kl(wide[p], windowed[p]), `position ${p}`).toBeLessThan(1e-6);
    expect(Math.max(...wide.slice(8).map((q, i) => kl(q, windowed[8 + i])))).toBeGreaterThan(1e-3);
  });

  it('a gpt-oss file without its sliding window, or using more experts than it has, is E_FORMAT naming the key', async () => {
    const path = file('no-window');
    const u32 = (value: number) => ({ type: 'uint32', value }) as const;
    const meta = (extra: [string, ReturnType<typeof u32>][]) => [
      ['general.architecture', { type: 'string', value: 'gpt-oss' }],
      ['gpt-oss.embedding_length', u32(64)], ['gpt-oss.block_count', u32(2)], ['gpt-oss.attention.head_count', u32(4)],
      ['gpt-oss.expert_feed_forward_length', u32(64)], ['gpt-oss.expert_count', u32(4)],
      ['gpt-oss.attention.layer_norm_rms_epsilon', { type: 'float32', value: 1e-5 }],
      ['tokenizer.ggml.model', { type: 'string', value: 'llama' }],
      ['tokenizer.ggml.tokens', { type: 'array', of: 'string', value: ['<unk>', '<s>', '</s>', 'a'] }],
      ['tokenizer.ggml.scores', { type: 'array', of: 'float32', value: [0, 0, 0, 0] }],
      ['tokenizer.ggml.token_type', { type: 'array', of: 'int32', value: [2, 3, 3, 1] }],
      ...extra,
    ] as Parameters<typeof writeGguf>[1];
    writeGguf(path, meta([['gpt-oss.expert_used_count', u32(2)]]), []);
    await expect(loadModel(dev, path)).rejects.toMatchObject({ code: 'E_FORMAT', message: expect.stringContaining('gpt-oss.attention.sliding_window') });
    const many = file('many-experts');
    writeGguf(many, meta([['gpt-oss.attention.sliding_window', u32(8)], ['gpt-oss.expert_used_count', u32(5)]]), []);
    await expect(loadModel(dev, many)).rejects.toMatchObject({ code: 'E_FORMAT', message: expect.stringContaining("'gpt-oss.expert_used_count' 5 is more than expert_count 4") });
  });
});

describe('a Hugging Face gpt-oss folder (MXFP4 blocks, gate_up_proj interleaved)', () => {
  const spec = { ...SPEC, expertType: 'MXFP4' } as const;
  async function logitsOf(path: string): Promise<Float32Array> {
    const model = await loadModel(dev, path, { contextSize: 64 });
    try {
      return await (await model.forward(PROMPT, model.createCache(), { logits: 'all' })).toFloat32();
    } finally {
      model.dispose();
    }
  }

  it('gives the logits of the GGUF file holding the same weights, bit for bit; its tokenizer.json equals the GGUF tokenizer', async () => {
    const gguf = file('hf-src');
    writeSyntheticModel(gguf, spec);
    const folder = join(dir, 'gpt-oss-hf');
    await writeGptOssHfFolder(dev, folder, gguf, spec);
    const [a, b] = [await logitsOf(folder), await logitsOf(gguf)];
    let maxDiff = 0;
    for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
    expect(maxDiff).toBe(0);
    const [hf, gg] = [await loadModel(dev, folder, { contextSize: 8 }), await loadModel(dev, gguf, { contextSize: 8 })];
    expect(hf.config.slidingWindow).toEqual(gg.config.slidingWindow);
    expect(hf.config.swiglu).toEqual(gg.config.swiglu);
    for (const s of ['the quick brown fox', "It's 2024: we're testing!", '<|start|>user<|message|>hi<|end|>', 'Ünïcödé 日本語 😀']) {
      for (const parseSpecial of [false, true]) {
        expect(Array.from(hf.tokenizer.encode(s, { parseSpecial }))).toEqual(Array.from(gg.tokenizer.encode(s, { parseSpecial })));
      }
    }
    expect([...hf.tokenizer.eogIds].sort()).toEqual([...gg.tokenizer.eogIds].sort());
    hf.dispose();
    gg.dispose();
  });

  it('a dense folder (gate_up_proj [E, hidden, 2N], gate and up in alternate columns; down_proj [E, N, hidden]): the GGUF logits bit for bit', async () => {
    const gguf = file('hf-src-dense');
    writeSyntheticModel(gguf, SPEC);  // F32 experts
    const folder = join(dir, 'gpt-oss-hf-dense');
    await writeGptOssHfFolder(dev, folder, gguf, SPEC, {}, true);
    const [a, b] = [await logitsOf(folder), await logitsOf(gguf)];
    let maxDiff = 0;
    for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
    // (Read untransposed, [E, 64, 256] would not be the [E, 128, 64] the config needs: E_FORMAT; gate
    // and up taken as halves instead of alternate columns would give other logits.)
    expect(maxDiff).toBe(0);
  });

  it("rope_scaling truncate: false (gpt-oss's configs) leaves YaRN's correction range unrounded, as transformers", async () => {
    const gguf = file('hf-src-trunc');
    const kept = writeSyntheticModel(gguf, spec, true);
    const folder = join(dir, 'gpt-oss-hf-trunc');
    const s = SPEC.ropeScaling as { factor: number; originalContext: number };
    await writeGptOssHfFolder(dev, folder, gguf, spec, {
      rope_scaling: { rope_type: 'yarn', factor: s.factor, beta_fast: 32, beta_slow: 1, original_max_position_embeddings: s.originalContext, truncate: false },
    });
    const decoded = new Map<string, ArrayLike<number>>();
    for (const [name, v] of kept) decoded.set(name, name.includes('_exps.weight') ? decodeGgml('MXFP4', encodeGgml('MXFP4', v)) : v);
    const ours = rows(await logitsOf(folder), PROMPT.length);
    const unrounded = rows(referenceLogits({ ...spec, yarnUnrounded: true }, decoded, PROMPT), PROMPT.length);
    const rounded = rows(referenceLogits(spec, decoded, PROMPT), PROMPT.length);
    for (let p = 0; p < PROMPT.length; p++) {
      expect(kl(unrounded[p], ours[p]), `position ${p}`).toBeLessThan(1e-4);
      expect(argmax(ours[p]), `position ${p}`).toBe(argmax(unrounded[p]));
    }
    // The rounding matters at these sizes: the rounded range gives other distributions.
    expect(Math.max(...rounded.map((p, i) => kl(p, ours[i])))).toBeGreaterThan(1e-4);
  });

  it('bad gpt-oss config.json fields are E_FORMAT naming them', async () => {
    const gguf = file('hf-src-bad');
    writeSyntheticModel(gguf, spec);
    const cases: [Record<string, unknown>, string][] = [
      [{ layer_types: ['sliding_attention'] }, 'layer_types'],
      [{ sliding_window: 0 }, 'sliding_window'],
      [{ swiglu_limit: -1 }, 'swiglu_limit'],
      [{ num_local_experts: undefined }, 'num_local_experts'],
    ];
    for (const [i, [fields, name]] of cases.entries()) {
      const folder = join(dir, `gpt-oss-hf-bad${i}`);
      await writeGptOssHfFolder(dev, folder, gguf, spec, fields);
      await expect(loadModel(dev, folder), name).rejects.toMatchObject({ code: 'E_FORMAT', message: expect.stringContaining(name) });
    }
  });
});

describe.skipIf(!hasLlamaCpp)('gpt-oss against llama.cpp on the same files', () => {
  const figures: string[] = [];
  afterAll(() => { if (figures.length) console.log(`gpt-oss, ours vs llama.cpp (${PROMPT.length} prompt positions, then ${STEPS.length} decode steps):\n${figures.join('\n')}`); });

  const CASES = [
    { name: 'F32', spec: SPEC },
    { name: 'F16', spec: { ...SPEC, type: 'F16' } },
    // As published: MXFP4 experts beside 16-bit attention.
    { name: 'F16 + MXFP4 experts', spec: { ...SPEC, type: 'F16', expertType: 'MXFP4' } },
    { name: 'Q8_0 + MXFP4 experts', spec: { ...SPEC, type: 'Q8_0', expertType: 'MXFP4' } },
  ] as const satisfies readonly { name: string; spec: SyntheticModelSpec }[];

  /** llama.cpp's rows and ours, prompt then decode steps, with their figures. */
  async function against(name: string, spec: SyntheticModelSpec): Promise<{ all: ReturnType<typeof compare>; line: string }> {
    const path = file(name.replace(/[^A-Za-z0-9]+/g, '_'));
    writeSyntheticModel(path, spec);
    const theirs = await llamaCppDecodeProbabilities(path, PROMPT, STEPS, V);
    const ours = await ourProbabilities(path, PROMPT, STEPS);
    const prompt = compare(theirs.slice(0, PROMPT.length), ours.slice(0, PROMPT.length));
    const decode = compare(theirs.slice(PROMPT.length), ours.slice(PROMPT.length));
    const f = (s: { agree: number; mean: number; max: number }) => `top-1 ${(s.agree * 100).toFixed(1)}%, KL mean ${s.mean.toExponential(1)} max ${s.max.toExponential(1)}`;
    return { all: compare(theirs, ours), line: `  ${name.padEnd(30)} prompt: ${f(prompt)}; decode: ${f(decode)}` };
  }

  for (const c of CASES) {
    it(`${c.name}: prompt and decode steps`, async () => {
      const { all, line } = await against(c.name, c.spec);
      figures.push(line);
      if (!('expertType' in c.spec)) {
        expect(all.agree).toBeGreaterThanOrEqual(0.99);
        expect(all.max).toBeLessThanOrEqual(1e-3);
        return;
      }
      // llama.cpp multiplies MXFP4 and Q8_0 weights by 8-bit activations, we by float32 ones.
      // Where a router's 2nd and 3rd logits nearly tie, that rounding can choose other experts at
      // a position: a jump (KL ~0.1) no bound on the arithmetic covers, which the max shows. So
      // with 2 of 4 experts only the share of such positions is bounded; with all 4 experts used
      // (nothing to choose) every position must be within the bound of the other quantized models.
      expect(all.agree).toBeGreaterThanOrEqual(0.9);
      expect(all.mean).toBeLessThanOrEqual(3e-2);
      const every = await against(`${c.name}, 4 of 4 experts`, { ...c.spec, expertsUsed: 4 });
      figures.push(every.line);
      // Top-1 tokens may differ only where llama.cpp's top two are within 5% of each other.
      expect(every.all.decidedAgree).toBe(1);
      expect(every.all.max).toBeLessThanOrEqual(3e-2);
    });
  }

  it('the sliding window is what llama.cpp applies: ignoring it moves the distributions away', async () => {
    const path = file('F32');
    writeSyntheticModel(path, SPEC);
    const theirs = await llamaCppDecodeProbabilities(path, PROMPT, STEPS, V);
    const widePath = file('F32-w64');
    writeSyntheticModel(widePath, { ...SPEC, slidingWindow: 64 });
    const wide = compare(theirs, await ourProbabilities(widePath, PROMPT, STEPS));
    figures.push(`  F32 with the window ignored: ${(wide.agree * 100).toFixed(1)}% top-1, KL max ${wide.max.toExponential(1)}`);
    expect(wide.max).toBeGreaterThan(1e-2);
  });

  it('greedy generation equals llama.cpp token for token', async () => {
    const path = file('F32-greedy');
    writeSyntheticModel(path, SPEC);
    const model = await loadModel(dev, path, { contextSize: 64 });
    const ours = await model.generate(PROMPT.slice(0, 6), { maxTokens: 24, stop: [] });
    // llama.cpp stops at an end-of-generation token (yielding it); compare up to there.
    const theirs = await llamaCppGreedy(path, PROMPT.slice(0, 6), 24);
    const end = ours.findIndex((t) => model.tokenizer.eogIds.has(t));
    model.dispose();
    expect(theirs).toEqual(end < 0 ? ours : ours.slice(0, end + 1));
    expect(theirs.length).toBeGreaterThanOrEqual(8);
  });

  it('tokenizer (gpt2 vocabulary, gpt-4o pre-tokenizer, harmony tokens): token for token as llama.cpp', async () => {
    const path = file('tok');
    writeSyntheticModel(path, SPEC);
    const model = await loadModel(dev, path, { contextSize: 16 });
    const tok = model.tokenizer;
    model.dispose();
    const ref = await llamaCppModel(path);
    expect([tok.bos, tok.eos, tok.eot], 'bos, eos, eot').toEqual([ref.tokens.bos, ref.tokens.eos, ref.tokens.eot]);
    // node-llama-cpp's isEogToken is llama.cpp's end-of-generation set plus its EOS and EOT ids.
    const isEog = ref.isEogToken as (id: number) => boolean;
    const eog = Array.from({ length: tok.vocabSize }, (_, i) => i).filter((i) => isEog.call(ref, i));
    expect([...new Set([...tok.eogIds, tok.eos, tok.eot])].sort((a, b) => a - b), 'end-of-generation tokens').toEqual(eog);
    // <|return|> and <|call|> end generation; <|end|> (here llama.cpp's EOT) does not: llama.cpp's
    // o200k_harmony rule takes it out of its end-of-generation set.
    const id = (t: string) => tok.encode(t, { addSpecial: false, parseSpecial: true })[0];
    expect(['<|return|>', '<|call|>', '<|end|>'].map((t) => tok.eogIds.has(id(t)))).toEqual([true, true, false]);
    const strings = [
      'the quick brown fox jumps over the lazy dog', "It's 2024: we're testing, they'll see!", '  spaces\n\nand\ttabs  ',
      '<|start|>user<|message|>hi there<|end|><|start|>assistant<|channel|>final<|message|>ok<|return|>',
      'Ünïcödé 日本語 😀 mixed CASE words', 'numbers 1 12 123 1234 12345',
    ];
    for (const s of strings) {
      for (const parseSpecial of [false, true]) {
        expect(Array.from(tok.encode(s, { addSpecial: false, parseSpecial })), `${JSON.stringify(s)} parseSpecial=${parseSpecial}`)
          .toEqual(ref.tokenize(s, parseSpecial));
      }
    }
  });
});
