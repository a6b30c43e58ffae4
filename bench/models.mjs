// npm run bench -- --models: whole models, ours against llama.cpp (node-llama-cpp, a bench peer)
// on the same generated GGUF file with the same threads in the same run, as llama-bench reports
// them: prompt processing (pp: one forward of N prompt tokens from an empty cache) and generation
// (tg: N tokens one at a time from an empty cache, each sampled greedily and fed back), in tokens/s.
// Ours runs twice: float32 activations (the default) and `activations: 'int8'` (what llama.cpp
// does with these weight types: its quantized matmuls take 8-bit activations). The models: a llama
// with Llama-3.2-1B's shapes in each weight type, and a gpt-oss with gpt-oss-20b's layer (sinks,
// a sliding window of 128 on every other layer, 4 of 32 MXFP4 experts) in fewer layers.
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { PEERS_DIR } from './peers.mjs';

const require = createRequire(import.meta.url);

/** Llama-3.2-1B's shapes (the bench model); the smoke mode's tiny model checks the bench works. */
export function modelShapes(mode) {
  if (mode === 'smoke') return { arch: 'llama', vocab: 1024, width: 128, layers: 2, heads: 4, kvHeads: 2, ff: 256, pp: 32, tg: 8 };
  return { arch: 'llama', vocab: 128256, width: 2048, layers: 16, heads: 32, kvHeads: 8, ff: 8192, tiedEmbeddings: true, pp: 512, tg: 128 };
}

export const MODEL_TYPES = ['Q8_0', 'Q4_0', 'MXFP4'];

/**
 * gpt-oss-20b's layer (width 2880, 64/8 heads of 64, attention sinks, q/k/v/o biases, YaRN, 32
 * experts of 2880 with 4 used, a window of 128 on the even layers) in 2 layers instead of 24 and a
 * vocabulary of 32768 instead of 201088, so that the file is written and both sides run in minutes
 * on two cores; F16 attention and embeddings beside MXFP4 experts, as published. The smoke mode's
 * tiny one has a window of 8, so that its pp32 needs a band mask and its tg8 wraps the ring.
 */
export function gptOssShape(mode) {
  if (mode === 'smoke') {
    return { arch: 'gpt-oss', vocab: 512, width: 128, layers: 2, heads: 4, kvHeads: 2, headDim: 32, ff: 128, experts: 8, expertsUsed: 2,
      slidingWindow: 8, ropeScaling: { type: 'yarn', factor: 4, originalContext: 64 }, pp: 32, tg: 8 };
  }
  return { arch: 'gpt-oss', vocab: 32768, width: 2880, layers: 2, heads: 64, kvHeads: 8, headDim: 64, ff: 2880, experts: 32, expertsUsed: 4,
    slidingWindow: 128, ropeBase: 150000, ropeScaling: { type: 'yarn', factor: 32, originalContext: 4096 }, context: 131072, eps: 1e-5, pp: 512, tg: 128 };
}

/** The bench's models: { model, type (the weights), spec (writeSyntheticModel's, with pp and tg) }, named `${model} ${type}` for --filter. */
export function modelCases(mode) {
  return [
    ...MODEL_TYPES.map((type) => ({ model: 'llama', type, spec: { ...modelShapes(mode), type } })),
    { model: 'gpt-oss', type: 'F16+MXFP4', spec: { ...gptOssShape(mode), type: 'F16', expertType: 'MXFP4' } },
  ];
}

/** node-llama-cpp from the bench peers (an ES module), or { missing }. */
export async function loadLlamaCpp() {
  let entry;
  try {
    entry = createRequire(join(PEERS_DIR, 'package.json')).resolve('node-llama-cpp');
  } catch {
    return { missing: 'node-llama-cpp is not installed (npm run bench:peers)' };
  }
  try {
    const mod = await import(pathToFileURL(entry).href);
    const llama = await mod.getLlama({ gpu: false, build: 'never', logLevel: 'error' });
    const version = require(join(PEERS_DIR, 'node_modules', 'node-llama-cpp', 'package.json')).version;
    return { llama, version };
  } catch (err) {
    return { missing: `node-llama-cpp did not load: ${String(err?.message ?? err).split('\n')[0]}` };
  }
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

function promptIds(n, vocab, seed) {
  const ids = new Int32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; ids[i] = 3 + (s % (vocab - 3)); }
  ids[0] = 1;
  return ids;
}

// Each side is a runner: opened once (the model loaded), then asked for one repetition at a time
// ({ ppMs, tgMs }), so that runModels can interleave the sides' repetitions. Run one side's
// repetitions after the other's and the memory bandwidth this VM gets moves between the blocks
// (a pure read measured 30-57 GB/s within minutes): a memory-bound generation then measured the
// moment more than the code.
async function openOurs(mto, dev, path, shape, activations) {
  const model = await mto.loadModel(dev, path, { contextSize: shape.pp + shape.tg + 8, activations });
  return {
    name: `ours (${activations})`,
    async rep(r) {
      const ids = promptIds(shape.pp, shape.vocab, r + 1);
      const cache = model.createCache();
      let t0 = performance.now();
      const logits = await model.forward(ids, cache);
      await logits.toFloat32();
      const ppMs = performance.now() - t0;
      logits.dispose();
      cache.dispose();
      t0 = performance.now();
      const out = await model.generate([1], { maxTokens: shape.tg, stop: [] });
      const tgMs = performance.now() - t0;
      if (out.length !== shape.tg) throw new Error(`generate gave ${out.length} tokens, not ${shape.tg}`);
      return { ppMs, tgMs };
    },
    async dispose() { model.dispose(); },
  };
}

async function openLlamaCpp(llama, path, shape, threads) {
  const model = await llama.loadModel({ modelPath: path });
  const context = await model.createContext({ contextSize: shape.pp + shape.tg + 8, batchSize: shape.pp, threads });
  const seq = context.getSequence();
  return {
    name: 'llama.cpp',
    async rep(r) {
      const ids = Array.from(promptIds(shape.pp, shape.vocab, r + 1));
      await seq.clearHistory();
      let t0 = performance.now();
      await seq.evaluateWithoutGeneratingNewTokens(ids);
      const ppMs = performance.now() - t0;
      await seq.clearHistory();
      t0 = performance.now();
      let n = 0;
      for await (const _ of seq.evaluate([1], { temperature: 0, yieldEogToken: true })) { if (++n >= shape.tg) break; }
      const tgMs = performance.now() - t0;
      if (n !== shape.tg) throw new Error(`llama.cpp gave ${n} tokens, not ${shape.tg}`);
      return { ppMs, tgMs };
    },
    async dispose() { await context.dispose(); await model.dispose(); },
  };
}

/**
 * Repetition 0 of every runner (a warm-up, not counted), then repetitions 1..reps, each round
 * running every side once in a rotated order; per side the median tokens/s and every repetition.
 * A side that throws is reported as { error } and leaves the rounds.
 */
async function interleave(runners, shape, reps, log) {
  const times = runners.map(() => ({ pp: [], tg: [], error: null }));
  for (let r = 0; r <= reps; r++) {
    for (let k = 0; k < runners.length; k++) {
      const i = (k + r) % runners.length;
      if (times[i].error) continue;
      try {
        const { ppMs, tgMs } = await runners[i].rep(r);
        if (r > 0) { times[i].pp.push(ppMs); times[i].tg.push(tgMs); }
        log(`  ${runners[i].name} rep ${r}: pp ${(shape.pp / ppMs * 1e3).toFixed(1)} t/s, tg ${(shape.tg / tgMs * 1e3).toFixed(1)} t/s`);
      } catch (err) {
        times[i].error = String(err?.message ?? err);
      }
    }
  }
  const rate = (n, ms) => n / ms * 1e3;
  return times.map((t) => t.error ? { error: t.error } : {
    ppTokensPerS: rate(shape.pp, median(t.pp)), tgTokensPerS: rate(shape.tg, median(t.tg)),
    ppReps: t.pp.map((ms) => rate(shape.pp, ms)), tgReps: t.tg.map((ms) => rate(shape.tg, ms)),
  });
}

/** The model cases (modelCases, those `wanted` keeps): ours and llama.cpp's tokens/s and the ratios. */
export async function runModels({ mto, mode, threads, peer, log, wanted = () => true }) {
  const { writeSyntheticModel } = require('../dist/cjs/model/synthetic.js');
  const shape = modelShapes(mode);
  const reps = mode === 'full' ? 3 : 1;
  const dir = join(tmpdir(), `mto-bench-models-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const dev = await mto.open({ backend: 'cpu', threads });
  const cases = [];
  try {
    for (const { model, type, spec } of modelCases(mode).filter((c) => wanted(`${c.model} ${c.type}`))) {
      const name = `${model} ${type}`;
      const path = join(dir, `${model}-${type.replace(/[^A-Za-z0-9_]/g, '_')}.gguf`);
      log(`writing a ${name} model with ${mode === 'smoke' ? 'tiny' : model === 'llama' ? "Llama-3.2-1B's" : "gpt-oss-20b's layer"} shapes`);
      writeSyntheticModel(path, { ...spec, seed: 7 });
      const fileBytes = statSync(path).size;
      const runners = [];
      let theirs = null;
      try {
        log(`loading ${name} (${(fileBytes / 2 ** 20).toFixed(0)} MiB): ours with float32 and int8 activations${peer ? ', llama.cpp' : ''}`);
        runners.push(await openOurs(mto, dev, path, spec, 'float32'), await openOurs(mto, dev, path, spec, 'int8'));
        if (peer) {
          try {
            runners.push(await openLlamaCpp(peer.llama, path, spec, threads));
          } catch (err) {
            theirs = { error: String(err?.message ?? err) };
          }
        }
        const [ours, oursInt8, peerTimes] = await interleave(runners, spec, reps, log);
        if (ours.error || oursInt8.error) throw new Error(ours.error ?? oursInt8.error);
        theirs = peerTimes ?? theirs;
        const ratio = (o, k) => (theirs && !theirs.error ? o[k] / theirs[k] : null);
        cases.push({
          model, type, fileBytes, pp: spec.pp, tg: spec.tg, ours, oursInt8, llamaCpp: theirs,
          ppRatio: ratio(ours, 'ppTokensPerS'), tgRatio: ratio(ours, 'tgTokensPerS'),
          int8PpRatio: ratio(oursInt8, 'ppTokensPerS'), int8TgRatio: ratio(oursInt8, 'tgTokensPerS'),
        });
      } finally {
        for (const r of runners) await r.dispose();
        rmSync(path, { force: true });
      }
    }
  } finally {
    await dev.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return { shape, cases };
}

/** The model cases as a Markdown table. */
export function renderModels(result) {
  const f = (x) => (x === null || x === undefined ? '-' : x.toFixed(1));
  const r = (x) => (x === null || x === undefined ? '-' : `${x.toFixed(2)}x`);
  const { pp, tg } = result.shape;
  const lines = [
    `| model | weights | activations | ours pp${pp} t/s | llama.cpp pp${pp} t/s | ours/llama.cpp | ours tg${tg} t/s | llama.cpp tg${tg} t/s | ours/llama.cpp |`,
    '|---|---|---|---|---|---|---|---|---|',
  ];
  const theirs = (c, k) => (c.llamaCpp?.error ? 'error' : f(c.llamaCpp?.[k]));
  for (const c of result.cases) {
    // Documents from before gpt-oss joined have no model: they were all llama.
    const model = c.model ?? 'llama';
    lines.push(`| ${model} | ${c.type} | float32 | ${f(c.ours.ppTokensPerS)} | ${theirs(c, 'ppTokensPerS')} | ${r(c.ppRatio)} | ${f(c.ours.tgTokensPerS)} | ${theirs(c, 'tgTokensPerS')} | ${r(c.tgRatio)} |`);
    lines.push(`| ${model} | ${c.type} | int8 | ${f(c.oursInt8.ppTokensPerS)} | ${theirs(c, 'ppTokensPerS')} | ${r(c.int8PpRatio)} | ${f(c.oursInt8.tgTokensPerS)} | ${theirs(c, 'tgTokensPerS')} | ${r(c.int8TgRatio)} |`);
  }
  return lines.join('\n');
}
