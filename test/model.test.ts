// Whole models (issue 26): generated GGUF files loaded with loadModel, checked against a float64
// forward pass written from the architectures (always) and against llama.cpp on the same files
// (where node-llama-cpp is installed: npm run bench:peers).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TensorOpsError, decodeGgml, encodeGgml, loadModel, open, writeGguf, writeSyntheticModel, type Device, type SyntheticModelSpec } from '../lib/index';
import { referenceLogits } from './helpers/decoder-ref';
import { disposeLlamaCppModels, hasLlamaCpp, llamaCppGreedy, llamaCppProbabilities } from './helpers/llama-cpp';
import { argmax, kl, softmax } from './helpers/distributions';

const ARCHS = ['llama', 'qwen2', 'qwen3', 'qwen3moe'] as const;
const spec = (arch: (typeof ARCHS)[number], type: SyntheticModelSpec['type']): SyntheticModelSpec => ({
  arch, type, vocab: 512, width: 64, layers: 2, heads: 4, kvHeads: 2, ff: 128, experts: 4, expertsUsed: 2, seed: 11,
});
const PROMPT = [1, 300, 301, 302, 303, 350, 400, 77, 5, 260, 261, 420, 499, 3, 4, 300, 301, 302, 280, 281, 282, 283, 284, 285];

let dir: string;
let dev: Device;
const file = (arch: string, type: string) => join(dir, `${arch}-${type}.gguf`);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mto-model-'));
  dev = await open({ backend: 'cpu', threads: 2 });
});
afterAll(async () => {
  await disposeLlamaCppModels();
  await dev?.close();
  rmSync(dir, { recursive: true, force: true });
});


async function ourProbabilities(path: string, ids: readonly number[]): Promise<Float64Array[]> {
  const model = await loadModel(dev, path, { contextSize: 256 });
  try {
    const cache = model.createCache();
    const logits = await (await model.forward(ids, cache, { logits: 'all' })).toFloat32();
    cache.dispose();
    const V = model.config.vocab;
    return ids.map((_, p) => softmax(logits.subarray(p * V, (p + 1) * V)));
  } finally {
    model.dispose();
  }
}

/** The distributions of decoding `ids` one token at a time (the rows the int8 kernels take). */
async function decodeProbabilities(path: string, ids: readonly number[], activations: 'float32' | 'int8'): Promise<Float64Array[]> {
  const model = await loadModel(dev, path, { contextSize: 256, activations });
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

describe('models against a float64 forward pass', () => {
  for (const arch of ARCHS) {
    it(`${arch}, F32 weights: next-token distributions within KL 1e-4, same top token`, async () => {
      const path = file(arch, 'F32-ref');
      const weights = writeSyntheticModel(path, spec(arch, 'F32'), true);
      const ref = referenceLogits(spec(arch, 'F32'), weights, PROMPT);
      const ours = await ourProbabilities(path, PROMPT);
      const V = 512;
      for (let p = 0; p < PROMPT.length; p++) {
        const want = softmax(ref.subarray(p * V, (p + 1) * V));
        expect(kl(want, ours[p]), `position ${p}`).toBeLessThan(1e-4);
        expect(argmax(ours[p]), `position ${p}`).toBe(argmax(want));
      }
    });
  }

  for (const type of ['Q8_0', 'Q4_0', 'MXFP4'] as const) {
    it(`llama, ${type} weights: equal to the float64 pass over ggml's decoded weights (loading is exact)`, async () => {
      const path = file('llama', `${type}-ref`);
      const kept = writeSyntheticModel(path, spec('llama', type), true);
      const decoded = new Map<string, ArrayLike<number>>();
      // Norms stay F32 in the file; every 2-D weight holds ggml's decode of its blocks.
      for (const [name, v] of kept) decoded.set(name, name.endsWith('norm.weight') ? v : decodeGgml(type, encodeGgml(type, v)));
      const ref = referenceLogits(spec('llama', type), decoded, PROMPT);
      const ours = await ourProbabilities(path, PROMPT);
      for (let p = 0; p < PROMPT.length; p++) {
        const want = softmax(ref.subarray(p * 512, (p + 1) * 512));
        expect(kl(want, ours[p]), `position ${p}`).toBeLessThan(1e-4);
        expect(argmax(ours[p]), `position ${p}`).toBe(argmax(want));
      }
    });
  }

  it('decoding one token at a time gives the logits of one forward over the prompt', async () => {
    const path = file('qwen3', 'F16');
    writeSyntheticModel(path, spec('qwen3', 'F16'));
    const model = await loadModel(dev, path, { contextSize: 64 });
    const all = await (await model.forward(PROMPT, model.createCache(), { logits: 'all' })).toFloat32();
    const cache = model.createCache();
    for (let p = 0; p < PROMPT.length; p++) {
      const row = await (await model.forward([PROMPT[p]], cache)).toFloat32();
      const want = all.subarray(p * 512, (p + 1) * 512);
      let maxDiff = 0;
      for (let i = 0; i < 512; i++) maxDiff = Math.max(maxDiff, Math.abs(row[i] - want[i]));
      expect(maxDiff, `position ${p}`).toBeLessThan(2e-3);
    }
    expect(cache.length).toBe(PROMPT.length);
    model.dispose();
  });

  it('an mxfp8 KV cache: decode equals its prefill, and both stay close to the float16 cache', async () => {
    const path = file('llama', 'F32-mx');
    writeSyntheticModel(path, { ...spec('llama', 'F32'), width: 128, headDim: 32 });
    const model = await loadModel(dev, path, { contextSize: 64, cacheDtype: 'mxfp8' });
    const V = 512;
    const ref = await (await model.forward(PROMPT, model.createCache({ dtype: 'float16' }), { logits: 'all' })).toFloat32();
    const all = await (await model.forward(PROMPT, model.createCache(), { logits: 'all' })).toFloat32();
    const cache = model.createCache();
    expect(cache.dtype).toBe('mxfp8');
    let agree = 0;
    for (let p = 0; p < PROMPT.length; p++) {
      const row = await (await model.forward([PROMPT[p]], cache)).toFloat32();
      const want = softmax(all.subarray(p * V, (p + 1) * V));
      expect(kl(want, softmax(row)), `decode vs prefill at ${p}`).toBeLessThan(1e-6);
      // FP8 E4M3 keeps 3 mantissa bits (up to 6% per element), where float16 keeps 10.
      const f16 = softmax(ref.subarray(p * V, (p + 1) * V));
      expect(kl(f16, want), `mxfp8 vs float16 at ${p}`).toBeLessThan(0.1);
      if (argmax(f16) === argmax(want)) agree++;
    }
    expect(agree / PROMPT.length).toBeGreaterThanOrEqual(0.9);
    model.dispose();
  });
});

describe('generate', () => {
  let path: string;
  beforeAll(() => {
    path = file('llama', 'Q8_0-gen');
    writeSyntheticModel(path, spec('llama', 'Q8_0'));
  });

  it('greedy equals the argmax of forward, step by step; streams every token to onToken', async () => {
    const model = await loadModel(dev, path, { contextSize: 64 });
    const seen: number[] = [];
    const out = await model.generate(PROMPT.slice(0, 5), { maxTokens: 12, stop: [], onToken: (id) => seen.push(id) });
    expect(out).toHaveLength(12);
    expect(seen).toEqual(out);
    const cache = model.createCache();
    let logits = await (await model.forward(PROMPT.slice(0, 5), cache)).toFloat32();
    for (const id of out) {
      expect(id).toBe(argmax(logits));
      logits = await (await model.forward([id], cache)).toFloat32();
    }
    model.dispose();
  });

  it('sampling: the same seed gives the same tokens, another seed others; stop tokens end it', async () => {
    const model = await loadModel(dev, path, { contextSize: 64 });
    const opts = { maxTokens: 16, temperature: 1.5, topK: 50, stop: [] as number[] };
    const a = await model.generate([1], { ...opts, seed: 5 });
    expect(await model.generate([1], { ...opts, seed: 5 })).toEqual(a);
    expect(await model.generate([1], { ...opts, seed: 6 })).not.toEqual(a);
    const stopped = await model.generate([1], { ...opts, seed: 5, stop: [a[3]] });
    expect(stopped).toEqual(a.slice(0, a.indexOf(a[3]) + 1));
    expect(await model.generate([1], { maxTokens: 0 })).toEqual([]);
    model.dispose();
  });

  it('continuing from a given cache equals one longer generation', async () => {
    const model = await loadModel(dev, path, { contextSize: 64 });
    const whole = await model.generate(PROMPT.slice(0, 5), { maxTokens: 10, stop: [] });
    const cache = model.createCache();
    const first = await model.generate(PROMPT.slice(0, 5), { maxTokens: 4, stop: [], cache });
    expect(cache.length).toBe(5 + 3);
    const rest = await model.generate([first[3]], { maxTokens: 6, stop: [], cache });
    expect([...first, ...rest]).toEqual(whole);
    expect(cache.length).toBe(5 + 9);
    cache.dispose();
    model.dispose();
  });

  it('an AbortSignal stops it; bad arguments are E_ARG; a full cache is E_ARG', async () => {
    const model = await loadModel(dev, path, { contextSize: 16 });
    const ac = new AbortController();
    let n = 0;
    await expect(model.generate([1], { maxTokens: 100, stop: [], signal: ac.signal, onToken: () => { if (++n === 3) ac.abort(); } }))
      .rejects.toMatchObject({ name: 'AbortError' });
    expect(n).toBe(3);
    await expect(model.generate([1, 512])).rejects.toMatchObject({ code: 'E_ARG', message: expect.stringContaining('ids[1]') });
    await expect(model.generate([1], { maxTokens: -1 })).rejects.toMatchObject({ code: 'E_ARG' });
    const cache = model.createCache();
    await model.forward(new Array(16).fill(1), cache);
    await expect(model.forward([1], cache)).rejects.toMatchObject({ code: 'E_ARG', message: expect.stringContaining('KV cache holds 16') });
    // The generation stops when the cache is full.
    expect((await model.generate(new Array(10).fill(1), { maxTokens: 100, stop: [] })).length).toBe(7);
    model.dispose();
  });
});

describe('bad model files', () => {
  it('not a GGUF file, an unsupported architecture: E_FORMAT naming what is wrong', async () => {
    const junk = join(dir, 'junk.gguf');
    writeFileSync(junk, 'not a model');
    await expect(loadModel(dev, junk)).rejects.toBeInstanceOf(TensorOpsError);
    await expect(loadModel(dev, junk)).rejects.toMatchObject({ code: 'E_FORMAT' });
    const noArch = join(dir, 'gpt-j.gguf');
    writeGguf(noArch, [['general.architecture', { type: 'string', value: 'gptj' }],
      ['tokenizer.ggml.model', { type: 'string', value: 'llama' }],
      ['tokenizer.ggml.tokens', { type: 'array', of: 'string', value: ['<unk>', '<s>', '</s>', 'a'] }],
      ['tokenizer.ggml.scores', { type: 'array', of: 'float32', value: [0, 0, 0, 0] }],
      ['tokenizer.ggml.token_type', { type: 'array', of: 'int32', value: [2, 3, 3, 1] }]], []);
    await expect(loadModel(dev, noArch)).rejects.toMatchObject({ code: 'E_FORMAT', message: expect.stringContaining('gptj') });
  });
});

describe.skipIf(!hasLlamaCpp)('models against llama.cpp on the same files', () => {
  const TYPES = ['F32', 'F16', 'Q8_0', 'Q4_0', 'MXFP4'] as const;
  const figures: string[] = [];
  afterAll(() => { if (figures.length) console.log(`ours vs llama.cpp (${PROMPT.length} positions):\n${figures.join('\n')}`); });

  for (const arch of ARCHS) {
    for (const type of TYPES) {
      it(`${arch} ${type}`, async () => {
        const path = file(arch, type);
        writeSyntheticModel(path, spec(arch, type));
        const ours = await ourProbabilities(path, PROMPT);
        const theirs = await llamaCppProbabilities(path, PROMPT, 512);
        const kls = theirs.map((p, i) => kl(p, ours[i]));
        const agree = theirs.filter((p, i) => argmax(p) === argmax(ours[i])).length / PROMPT.length;
        const maxKl = Math.max(...kls);
        figures.push(`  ${arch.padEnd(9)} ${type.padEnd(6)} top-1 agreement ${(agree * 100).toFixed(1)}%, KL mean ${(kls.reduce((a, b) => a + b) / kls.length).toExponential(1)} max ${maxKl.toExponential(1)}`);
        if (type === 'F32' || type === 'F16') {
          expect(agree).toBeGreaterThanOrEqual(0.99);
          expect(maxKl).toBeLessThanOrEqual(1e-3);
        } else {
          // llama.cpp multiplies these weights by 8-bit activations (q8_0/q8_K); we use float32.
          expect(agree).toBeGreaterThanOrEqual(0.9);
          expect(maxKl).toBeLessThanOrEqual(3e-2);
        }
      });
    }
  }

  // llama.cpp multiplies quantized weights by 8-bit activations; so does activations: 'int8'. Each
  // rounding of x moves the distributions by about as much as the other (KL ~1e-3 between ours
  // with float32 and with int8 activations, as between either and llama.cpp): the int8 path must
  // stay within the bounds the float32 path meets, and its figures are printed next to them.
  for (const arch of ARCHS) {
    for (const type of ['Q8_0', 'Q4_0', 'MXFP4'] as const) {
      it(`${arch} ${type}, activations int8, decoding: as close to llama.cpp as float32 activations`, async () => {
        const path = file(arch, type);
        writeSyntheticModel(path, spec(arch, type));
        const theirs = await llamaCppProbabilities(path, PROMPT, 512);
        const stats = async (activations: 'float32' | 'int8') => {
          const ours = await decodeProbabilities(path, PROMPT, activations);
          const kls = theirs.map((p, i) => kl(p, ours[i]));
          return { mean: kls.reduce((a, b) => a + b) / kls.length, max: Math.max(...kls), agree: theirs.filter((p, i) => argmax(p) === argmax(ours[i])).length / PROMPT.length };
        };
        const [f, q] = [await stats('float32'), await stats('int8')];
        figures.push(`  ${arch.padEnd(9)} ${type.padEnd(6)} decoding: KL mean float32 ${f.mean.toExponential(1)}, int8 ${q.mean.toExponential(1)}; max ${f.max.toExponential(1)}, ${q.max.toExponential(1)}; top-1 ${(f.agree * 100).toFixed(0)}%, ${(q.agree * 100).toFixed(0)}%`);
        expect(q.agree).toBeGreaterThanOrEqual(0.9);
        expect(q.max).toBeLessThanOrEqual(3e-2);
        expect(q.mean).toBeLessThan(3 * f.mean);
      });
    }
  }

  for (const ropeScaling of [{ type: 'linear', factor: 4 }, { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalContext: 64 },
    { type: 'yarn', factor: 4, originalContext: 32 }] as const) {
    it(`RoPE scaling ${ropeScaling.type}: the same distributions as llama.cpp`, async () => {
      const path = file('llama', `F32-rope-${ropeScaling.type}`);
      writeSyntheticModel(path, { ...spec('llama', 'F32'), ropeScaling });
      const ours = await ourProbabilities(path, PROMPT);
      const theirs = await llamaCppProbabilities(path, PROMPT, 512);
      for (let p = 0; p < PROMPT.length; p++) {
        expect(kl(theirs[p], ours[p]), `position ${p}`).toBeLessThan(1e-4);
        expect(argmax(ours[p]), `position ${p}`).toBe(argmax(theirs[p]));
      }
      // And the scaling matters: without it the distributions differ.
      const plain = file('llama', 'F32-rope-none');
      writeSyntheticModel(plain, spec('llama', 'F32'));
      const unscaled = await ourProbabilities(plain, PROMPT);
      expect(Math.max(...theirs.map((p, i) => kl(p, unscaled[i])))).toBeGreaterThan(1e-3);
    });
  }

  it('greedy generation equals llama.cpp token for token', async () => {
    const path = file('qwen2', 'F32');
    writeSyntheticModel(path, spec('qwen2', 'F32'));
    const model = await loadModel(dev, path, { contextSize: 64 });
    const ours = await model.generate(PROMPT.slice(0, 6), { maxTokens: 24, stop: [] });
    model.dispose();
    expect(ours).toEqual(await llamaCppGreedy(path, PROMPT.slice(0, 6), 24));
  });
});

describe('command line', () => {
  const cli = join(__dirname, '..', 'dist', 'cjs', 'cli', 'cli.js');
  const run = promisify(execFile);

  it('logits --json lists the top log-probabilities of forward(); run streams text and reports tokens/s', async () => {
    const path = file('qwen3', 'Q4_0-cli');
    writeSyntheticModel(path, spec('qwen3', 'Q4_0'));
    const { stdout } = await run(process.execPath, [cli, 'logits', path, '--tokens', '1,300,301', '--top', '5', '--json', '--threads', '2']);
    const doc = JSON.parse(stdout) as { tokens: number[]; top: { id: number; logprob: number }[] };
    const ours = await ourProbabilities(path, [1, 300, 301]);
    const last = ours[2];
    const order = Array.from(last.keys()).sort((a, b) => last[b] - last[a]).slice(0, 5);
    expect(doc.tokens).toEqual([1, 300, 301]);
    expect(doc.top.map((t) => t.id)).toEqual(order);
    for (const t of doc.top) expect(t.logprob).toBeCloseTo(Math.log(last[t.id]), 4);
    const gen = await run(process.execPath, [cli, 'run', path, '-p', 'the cat', '-n', '8', '--threads', '2']);
    expect(gen.stdout.startsWith('the cat')).toBe(true);
    expect(gen.stderr).toMatch(/prompt: \d+ tokens, [\d.]+ tokens\/s; generation: \d+ tokens/);
    await expect(run(process.execPath, [cli, 'run', path, '-n', 'many'])).rejects.toMatchObject({ code: 2 });
    const bench = await run(process.execPath, [cli, 'bench', path, '-p', '16', '-n', '4', '-r', '1', '--json', '--threads', '2']);
    const b = JSON.parse(bench.stdout) as { arch: string; pp: { tokens: number; tokensPerS: number }; tg: { tokens: number; tokensPerS: number } };
    expect(b.arch).toBe('qwen3');
    expect([b.pp.tokens, b.tg.tokens]).toEqual([16, 4]);
    expect(b.pp.tokensPerS).toBeGreaterThan(0);
    expect(b.tg.tokensPerS).toBeGreaterThan(0);
    // examples/generate.mjs writes a model when given none and streams its text.
    const ex = await run(process.execPath, [join(__dirname, '..', 'examples', 'generate.mjs')]);
    expect(ex.stdout).toMatch(/^\(no model given: wrote a random-weight one to .*\)\nllama: 4 layers, width 256, vocabulary 4096; cpu backend\nOnce upon a time/);
    expect(ex.stdout).toMatch(/\n\d+ tokens in [\d.]+ s \(prompt \d+ tokens\)\n$/);
  });
});
