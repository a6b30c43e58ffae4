// `metal-tensorops bench <model.gguf | folder>`: prompt processing and generation speed of one model,
// as llama-bench reports them (pp512: one forward over 512 prompt tokens from an empty cache;
// tg128: 128 tokens generated one at a time, greedy), in tokens/s, median of the repetitions.
import { parseArgs } from 'node:util';
import { UsageError } from './command';
import { MODEL_OPTIONS, numberOption, openModel } from './model-options';

export const BENCH_MODEL_USAGE = `usage: metal-tensorops bench <model.gguf | folder> [-p N] [-n N] [-r N] [--json] [--activations int8] [--backend ...] [--threads N]
  -p, --prompt N             prompt tokens (default 512)
  -n, --tokens N             generated tokens (default 128)
  -r, --repetitions N        timed repetitions after a warm-up (default 3)
  --json                     print one JSON object`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function benchModel(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args, allowPositionals: true, strict: true,
      options: { prompt: { type: 'string', short: 'p' }, tokens: { type: 'string', short: 'n' }, repetitions: { type: 'string', short: 'r' }, json: { type: 'boolean' }, ...MODEL_OPTIONS },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) throw new UsageError(`give one model file; got ${positionals.join(' ')}`);
  const pp = numberOption('prompt', values.prompt, 1, 1 << 20, true) ?? 512;
  const tg = numberOption('tokens', values.tokens, 1, 1 << 20, true) ?? 128;
  const reps = numberOption('repetitions', values.repetitions, 1, 1000, true) ?? 3;
  const { dev, model } = await openModel({ ...values, context: values.context ?? String(pp + tg + 1) }, positionals[0]);
  try {
    const ppMs: number[] = [];
    const tgMs: number[] = [];
    for (let r = 0; r <= reps; r++) {
      const ids = Array.from({ length: pp }, (_, i) => (i * 7919 + r) % model.config.vocab);
      const cache = model.createCache();
      let t0 = performance.now();
      await (await model.forward(ids, cache)).toFloat32();
      const a = performance.now() - t0;
      cache.dispose();
      t0 = performance.now();
      await model.generate([ids[0]], { maxTokens: tg, stop: [] });
      const b = performance.now() - t0;
      if (r > 0) { ppMs.push(a); tgMs.push(b); }
      if (!values.json) console.error(`${r === 0 ? 'warm-up' : `rep ${r}`}: pp${pp} ${(pp / a * 1e3).toFixed(1)} t/s, tg${tg} ${(tg / b * 1e3).toFixed(1)} t/s`);
    }
    const result = {
      model: positionals[0], arch: model.config.arch, backend: dev.info.backend, threads: dev.info.threads, activations: model.activations,
      pp: { tokens: pp, tokensPerS: pp / median(ppMs) * 1e3 }, tg: { tokens: tg, tokensPerS: tg / median(tgMs) * 1e3 },
    };
    if (values.json) console.log(JSON.stringify(result, null, 2));
    else console.log(`pp${pp}: ${result.pp.tokensPerS.toFixed(1)} tokens/s\ntg${tg}: ${result.tg.tokensPerS.toFixed(1)} tokens/s`);
    return 0;
  } finally {
    model.dispose();
    await dev.close();
  }
}
