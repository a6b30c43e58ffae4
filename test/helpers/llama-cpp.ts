// llama.cpp as the reference, through node-llama-cpp (a bench peer: `npm run bench:peers`
// installs it under bench/peers/node_modules). Tests that need it skip when it is not installed:
// `describe.skipIf(!hasLlamaCpp)`.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** node-llama-cpp's entry point. */
export const LLAMA_CPP_ENTRY = join(__dirname, '../../bench/peers/node_modules/node-llama-cpp/dist/index.js');

/** Whether node-llama-cpp is installed (the tests that compare against llama.cpp skip otherwise). */
export const hasLlamaCpp = existsSync(LLAMA_CPP_ENTRY);

/** The parts of node-llama-cpp's LlamaModel the tests use (its own types are not imported here). */
export interface LlamaCppModel {
  tokenize(text: string, specialTokens?: boolean): number[];
  detokenize(tokens: readonly number[], specialTokens?: boolean): string;
  readonly tokens: { readonly bos: number | null; readonly eos: number | null; readonly eot: number | null };
  dispose(): Promise<void>;
  [key: string]: unknown;
}

export interface LlamaCpp {
  loadModel(options: { modelPath: string; vocabOnly?: boolean; gpuLayers?: number | 'auto'; [key: string]: unknown }): Promise<LlamaCppModel>;
  [key: string]: unknown;
}

let llama: Promise<LlamaCpp | null> | undefined;

/** The llama.cpp instance (CPU build, prebuilt binaries only, errors-only logging), or null when not installed. */
export function loadLlamaCpp(): Promise<LlamaCpp | null> {
  llama ??= (async () => {
    if (!hasLlamaCpp) return null;
    const mod = (await import(LLAMA_CPP_ENTRY)) as { getLlama(options: Record<string, unknown>): Promise<LlamaCpp> };
    return mod.getLlama({ gpu: false, build: 'never', logLevel: 'error', progressLogs: false });
  })();
  return llama;
}

const models = new Map<string, Promise<LlamaCppModel>>();

/** A model file loaded by llama.cpp, once per path and options (vocabOnly: just the tokenizer). */
export async function llamaCppModel(
  modelPath: string, options: { vocabOnly?: boolean; [key: string]: unknown } = {},
): Promise<LlamaCppModel> {
  const key = `${modelPath}\0${JSON.stringify(options)}`;
  let m = models.get(key);
  if (!m) {
    m = (async () => {
      const l = await loadLlamaCpp();
      if (!l) throw new Error(`node-llama-cpp is not installed (${LLAMA_CPP_ENTRY})`);
      return l.loadModel({ modelPath, gpuLayers: 0, ...options });
    })();
    models.set(key, m);
  }
  return m;
}

/** Disposes the cached models (files can then be removed). */
export async function disposeLlamaCppModels(): Promise<void> {
  const all = [...models.values()];
  models.clear();
  for (const m of all) await (await m.catch(() => null))?.dispose();
}

interface ContextSequence {
  controlledEvaluate(input: unknown[]): Promise<({ next?: { probabilities?: Map<number, number> } } | undefined)[]>;
  evaluate(tokens: number[], options: Record<string, unknown>): AsyncGenerator<number>;
}
interface Context { getSequence(): ContextSequence; dispose(): Promise<void> }

async function withContext<T>(path: string, fn: (seq: ContextSequence) => Promise<T>): Promise<T> {
  const model = await llamaCppModel(path);
  const ctx = await (model as unknown as { createContext(o: Record<string, unknown>): Promise<Context> })
    .createContext({ contextSize: 512, threads: 2 });
  try {
    return await fn(ctx.getSequence());
  } finally {
    await ctx.dispose();
  }
}

/** llama.cpp's next-token probabilities after each prefix of `tokens` (row p: after tokens[0..p]). */
export async function llamaCppProbabilities(path: string, tokens: readonly number[], vocab: number): Promise<Float64Array[]> {
  return withContext(path, async (seq) => {
    const res = await seq.controlledEvaluate(tokens.map((t) => [t, { generateNext: { probabilities: true } }]));
    return res.map((r, p) => {
      const probs = r?.next?.probabilities;
      if (!probs) throw new Error(`llama.cpp gave no probabilities at position ${p}`);
      const row = new Float64Array(vocab);
      for (const [id, pr] of probs) row[id] = pr;
      return row;
    });
  });
}

/** llama.cpp's greedy continuation of `prompt` (n tokens, end-of-generation tokens included). */
export async function llamaCppGreedy(path: string, prompt: readonly number[], n: number): Promise<number[]> {
  return withContext(path, async (seq) => {
    const out: number[] = [];
    for await (const t of seq.evaluate([...prompt], { temperature: 0, yieldEogToken: true })) {
      out.push(t);
      if (out.length >= n) break;
    }
    return out;
  });
}

/**
 * llama.cpp's next-token probabilities over a prompt (one batch, row p: after prompt[0..p]) and
 * then over `steps` decoded one token per call on the same sequence (row prompt.length + i: after
 * steps[i]): prefill and decode, as its KV cache (sliding-window layers included) runs them.
 */
export async function llamaCppDecodeProbabilities(path: string, prompt: readonly number[], steps: readonly number[], vocab: number): Promise<Float64Array[]> {
  return withContext(path, async (seq) => {
    const rows: Float64Array[] = [];
    const take = (res: Awaited<ReturnType<ContextSequence['controlledEvaluate']>>) => {
      for (const r of res) {
        const probs = r?.next?.probabilities;
        if (!probs) throw new Error(`llama.cpp gave no probabilities at position ${rows.length}`);
        const row = new Float64Array(vocab);
        for (const [id, pr] of probs) row[id] = pr;
        rows.push(row);
      }
    };
    take(await seq.controlledEvaluate(prompt.map((t) => [t, { generateNext: { probabilities: true } }])));
    for (const t of steps) take(await seq.controlledEvaluate([[t, { generateNext: { probabilities: true } }]]));
    return rows;
  });
}
