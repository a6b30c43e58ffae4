#!/usr/bin/env node
// npm run bench [-- options]: the cpu backend against onnxruntime-node on the CPU (and OpenBLAS on
// the float32 linear cases), in one run, with the machine's FMA peak and read bandwidth measured at
// the start.
//
//   --json           print one JSON document (progress goes to stderr)
//   --filter TEXT    only cases whose id holds every word of TEXT; several filters with commas
//                    ("linear decode,attention")
//   --threads N      threads for ours and for onnxruntime (default: all cores)
//   --quick          fewer repetitions (same shapes)
//   --smoke          tiny shapes, a handful of repetitions: checks that the bench works
//   --no-peer        run our side only
//   --peer           fail unless the peers (onnxruntime-node, protobufjs, koffi) load; without it
//                    the bench runs our side alone when they are not installed (peers.mjs:
//                    `npm run bench:peers` installs them)
//   --out FILE       also write the JSON document to FILE (written once the run is complete)
//   --models         instead of the op cases: whole models (bench/models.mjs), ours against
//                    llama.cpp (node-llama-cpp) on generated GGUF files with Llama-3.2-1B's
//                    shapes in Q8_0, Q4_0 and MXFP4, and gpt-oss-20b's layer in 2 layers (--filter
//                    picks by model and weights: --filter q4_0, --filter gpt-oss)
//   --ggml DIR       also time ggml's CPU backend on the same shapes with the test-backend-ops built
//                    in the ggml (or llama.cpp) checkout DIR (peer-ggml.mjs)
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import { dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { combinePeaks, describeMachine, measurePeaks } from './machine.mjs';
import { MODES } from './cases.mjs';
import { runAttention } from './attention.mjs';
import { runDecodeStep } from './decode-step.mjs';
import { runLinear } from './linear.mjs';
import { runModelOps } from './model-ops.mjs';
import { runOverhead } from './overhead.mjs';
import { runQuantize } from './quantize.mjs';
import { renderText } from './format.mjs';
import { hostKernelTimes } from './timing.mjs';
import { makeRecord } from './record.mjs';
import { ACCURACY_LEVEL, OrtPeer, loadPeer } from './peer-ort.mjs';
import { loadOpenBlas } from './peer-openblas.mjs';
import { loadGgml } from './peer-ggml.mjs';
import { INSTALL_HINT, PINNED, loadPeerModule } from './peers.mjs';
import { loadLlamaCpp, renderModels, runModels } from './models.mjs';

const require = createRequire(import.meta.url);
/** An error whose message says all: printed without a stack. */
class PlainError extends Error {}
/** A mistake in the command line: exit code 2. */
class UsageError extends PlainError {}

const USAGE = 'usage: npm run bench -- [--json] [--filter TEXT] [--threads N] [--quick | --smoke] [--no-peer | --peer] [--out FILE] [--ggml DIR] [--models]';

function parseArgs(argv) {
  const a = { json: false, filter: null, threads: null, mode: 'full', peer: true, requirePeer: false, out: null, ggml: null, models: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new UsageError(`${arg} needs a value\n${USAGE}`);
      return argv[++i];
    };
    if (arg === '--json') a.json = true;
    else if (arg === '--quick') a.mode = 'quick';
    else if (arg === '--smoke') a.mode = 'smoke';
    else if (arg === '--no-peer') a.peer = false;
    else if (arg === '--models') a.models = true;
    else if (arg === '--peer') a.requirePeer = true;
    else if (arg === '--filter') a.filter = value();
    else if (arg === '--out') a.out = value();
    else if (arg === '--ggml') a.ggml = value();
    else if (arg.startsWith('--filter=')) a.filter = arg.slice(9);
    else if (arg === '--threads' || arg.startsWith('--threads=')) {
      const v = arg === '--threads' ? value() : arg.slice(10);
      a.threads = Number(v);
      if (!Number.isInteger(a.threads) || a.threads < 1 || a.threads > 1024) throw new UsageError(`--threads must be an integer from 1 to 1024; got ${v}`);
    } else if (arg === '--help' || arg === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else throw new UsageError(`unknown option ${arg}\n${USAGE}`);
  }
  if (!a.peer && a.requirePeer) throw new UsageError(`--peer and --no-peer contradict each other\n${USAGE}`);
  return a;
}

/** A case is wanted when, for some comma-separated filter, its id holds every word of it. */
function makeFilter(filter) {
  if (!filter) return () => true;
  const alternatives = filter.split(',').map((f) => f.trim().toLowerCase().split(/\s+/).filter(Boolean)).filter((f) => f.length);
  return (id) => alternatives.some((words) => words.every((w) => id.toLowerCase().includes(w)));
}

/** The git commit the run measured, and whether tracked files differed from it (null outside git). */
function sourceCommit() {
  const git = (...a) => execFileSync('git', a, { cwd: new URL('..', import.meta.url), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    return { commit: git('rev-parse', 'HEAD'), modified: git('status', '--porcelain', '--untracked-files=no') !== '' };
  } catch {
    return null;
  }
}

function loadPackage() {
  try {
    return { mto: require('../dist/cjs/index.js'), binding: require('../dist/cjs/native.js').loadBinding() };
  } catch (err) {
    throw new Error(`cannot load metal-tensorops from dist/ (run npm run build first): ${err.message}`);
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const settings = MODES[args.mode];
  const log = (msg) => process.stderr.write(`[bench] ${msg}\n`);
  if (args.requirePeer) {  // before the second of measuring: asked for, the peers must be there
    const missing = Object.keys(PINNED).filter((name) => loadPeerModule(name).missing);
    if (missing.length) throw new PlainError(`--peer: ${missing.join(', ')} did not load; ${INSTALL_HINT}`);
  }
  const { mto, binding } = loadPackage();
  const machine = describeMachine();
  const threads = args.threads ?? machine.cores;
  if (args.models) return benchModels(args, mto, machine, threads, log);

  log(`measuring the machine's FMA peak and read bandwidth (${threads} threads and 1)`);
  const peaksAtStart = measurePeaks(binding, threads, settings.peaks);
  log(`FMA peak ${peaksAtStart.fmaGflops} GFLOP/s (${peaksAtStart.fmaIsa}), read ${peaksAtStart.readGBps} GB/s`);

  const loaded = args.peer ? loadPeer() : { missing: 'disabled by --no-peer' };
  const blasLoaded = args.peer ? loadOpenBlas(threads, { avx512: peaksAtStart.fmaIsa === 'avx512' }) : { missing: 'disabled by --no-peer' };
  if (loaded.notInstalled || blasLoaded.notInstalled) {
    // The peers are optional (peers.mjs): said once, plainly, with how to install them.
    log(`the peers (onnxruntime-node, protobufjs, koffi) are not installed: running our side alone; ${INSTALL_HINT}`);
  }
  if (loaded.missing) log(`peer missing: ${loaded.missing}`);
  else log(`onnxruntime-node ${loaded.version} (from ${loaded.path})`);
  const peer = loaded.ort ? new OrtPeer(loaded.ort, threads) : null;
  if (blasLoaded.missing) log(`OpenBLAS peer missing: ${blasLoaded.missing}`);
  else log(`OpenBLAS ${blasLoaded.blas.version} (${blasLoaded.blas.core} kernels, ${blasLoaded.blas.threads} threads)`);

  const ggmlLoaded = args.ggml ? loadGgml(args.ggml) : { missing: 'not asked for (--ggml DIR)' };
  if (args.ggml && ggmlLoaded.missing) log(`ggml peer missing: ${ggmlLoaded.missing}`);

  const dev = await mto.open({ backend: 'cpu', threads });
  const dev1 = threads > 1 ? await mto.open({ backend: 'cpu', threads: 1 }) : null;
  const ctx = {
    dev, dev1, peer, blas: blasLoaded.blas ?? null, ggml: ggmlLoaded.ggml ?? null, mode: args.mode, settings, log,
    kernelTimes: hostKernelTimes(binding),
    wanted: makeFilter(args.filter),
    record: (c) => c,  // records are made at the end, once the limits are final
  };
  const recordOptions = {
    targets: args.mode !== 'smoke',
    ...(loaded.missing ? { peerMissing: `onnxruntime-node not available: ${loaded.missing}` } : {}),
  };

  const started = Date.now();
  const measured = [
    ...(await runOverhead(ctx)),
    ...(await runLinear(ctx)),
    ...(await runAttention(ctx)),
    ...(await runQuantize(ctx)),
    ...(await runModelOps(ctx)),
  ];
  const decodeStep = await runDecodeStep(ctx);
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  log('measuring the limits again (the best of both measurements counts)');
  const peaks = combinePeaks([peaksAtStart, measurePeaks(binding, threads, settings.peaks)]);
  const cases = measured.map(makeRecord(peaks, threads, recordOptions));
  const targets = cases.flatMap((c) => c.targets);
  const doc = {
    bench: 'metal-tensorops cpu backend vs onnxruntime-node (CPU)',
    package: require('../package.json').version,
    source: sourceCommit(),
    date: new Date().toISOString(),
    mode: args.mode,
    filter: args.filter,
    threads,
    seconds,
    machine: { ...machine, loadAverage1mAtEnd: Math.round(os.loadavg()[0] * 100) / 100, peaks },
    peer: loaded.ort
      ? { name: 'onnxruntime-node', version: loaded.version, available: true, loadedFrom: relative(fileURLToPath(new URL('..', import.meta.url)), loaded.path), executionProvider: 'cpu', intraOpThreads: threads, matMulNBitsAccuracyLevel: ACCURACY_LEVEL }
      : { name: 'onnxruntime-node', available: false, reason: loaded.missing },
    morePeers: {
      openblas: blasLoaded.blas ? blasLoaded.blas.describe() : { name: 'OpenBLAS', available: false, reason: blasLoaded.missing },
      ggml: ggmlLoaded.ggml ? ggmlLoaded.ggml.describe() : { name: 'ggml', available: false, reason: ggmlLoaded.missing },
    },
    notes: [
      'Times are medians of the timed repetitions after warm-up, from the call to the resolved Promise, for ours and the peer alike.',
      'ratio = peer median / our median: above 1, ours is faster.',
      'fractionOfLimit: GFLOP/s over the measured FMA peak (limit fma), or GB/s of weight bytes (linear) / K and V bytes (attention) / input bytes (quantize) over the measured read bandwidth (limit bandwidth).',
      'linear: x and W uniform in [-1, 1); affine4 uses group size 32, like the peer. Each check compares with the float32 result; the float32 and mxint8 cases also with the peer, which then runs exactly the same weights.',
      `MatMulNBits accuracy_level ${ACCURACY_LEVEL} is the op's default (unset): float32 computation on the CPU.`,
      'scaling (prefill cases): our 1-thread and N-thread runs alternate in pairs, after a warm-up of each and a 20 ms pause before every run; speedup is the median over the pairs of the 1-thread time over the N-thread time (medianMs: the 1-thread median; pairedMedianMs: the N-thread median of those pairs).',
      `decode cases (limit bandwidth): a loop over layers, as a model's decode runs. Each side makes C copies of the streamed data (weights; K and V), C = max(2, ceil(${settings.layerLoopBytes / 2 ** 20} MiB / bytes per copy)) (streaming.copies), and runs rep i on copy i % C back to back, so every run reads data that the other C - 1 runs have evicted from the caches. Ours: C weight (K, V) tensors; the peer: C sessions of the same model with intra-op spinning off (linear: C spinning thread pools would compete for the cores, which the single pool of a model's one session never does), C feed sets with their own past_key/past_value on one session (attention).`,
    ],
    cases,
    ...(decodeStep ? { decodeStep } : {}),
    summary: {
      cases: cases.length,
      targetsMet: targets.filter((t) => t.met === true).length,
      targetsMissed: targets.filter((t) => t.met === false).length,
      targetsUnknown: targets.filter((t) => t.met === null).length,
      checksFailed: cases.filter((c) => c.check && !c.check.ok).length,
    },
  };
  log(`done in ${doc.seconds} s`);
  const json = `${JSON.stringify(doc, null, 2)}\n`;
  if (args.out) {
    mkdirSync(dirname(args.out), { recursive: true });
    writeFileSync(args.out, json);
    log(`wrote ${args.out}`);
  }
  process.stdout.write(args.json ? json : `${renderText(doc)}\n`);
}

/** --models: the whole-model cases alone, with their own document and table. */
async function benchModels(args, mto, machine, threads, log) {
  const peer = args.peer ? await loadLlamaCpp() : { missing: 'disabled by --no-peer' };
  if (peer.missing) {
    if (args.requirePeer) throw new PlainError(`--peer: ${peer.missing}; ${INSTALL_HINT}`);
    log(`llama.cpp peer missing: ${peer.missing}`);
  } else log(`node-llama-cpp ${peer.version} (llama.cpp, CPU build, ${threads} threads)`);
  const started = Date.now();
  const result = await runModels({ mto, mode: args.mode, threads, peer: peer.missing ? null : peer, log, wanted: makeFilter(args.filter) });
  const doc = {
    bench: 'metal-tensorops models vs llama.cpp (node-llama-cpp, CPU)',
    package: require('../package.json').version,
    source: sourceCommit(),
    date: new Date().toISOString(),
    mode: args.mode,
    threads,
    seconds: Math.round((Date.now() - started) / 100) / 10,
    machine,
    peer: peer.missing ? { name: 'llama.cpp', available: false, reason: peer.missing } : { name: 'llama.cpp (node-llama-cpp)', version: peer.version, available: true },
    notes: [
      'pp: one forward pass over N prompt tokens from an empty KV cache, timed to the logits read back (llama.cpp: evaluateWithoutGeneratingNewTokens with batch size N).',
      'tg: N tokens from an empty cache after one prompt token, greedy, each fed back (ours: model.generate; llama.cpp: sequence.evaluate with temperature 0).',
      'tokens/s of the median of the timed repetitions after one warm-up; ratio = ours / llama.cpp (above 1: ours is faster).',
      'Weights: random, Llama-3.2-1B shapes (width 2048, 16 layers, 32/8 heads of 64, MLP 8192, vocabulary 128256, tied embeddings); norms in F32 as llama.cpp quantizes them; both sides read the same file.',
      'gpt-oss: gpt-oss-20b\'s layer (width 2880, 64/8 heads of 64, attention sinks, q/k/v/o biases, YaRN, 32 experts of 2880 with 4 used, a sliding window of 128 on layer 0) in 2 layers and a vocabulary of 32768; F16 attention and embeddings, MXFP4 experts; both sides keep only the window on the sliding layer (llama.cpp: swa_full off, its default).',
    ],
    ...result,
  };
  const json = `${JSON.stringify(doc, null, 2)}\n`;
  if (args.out) {
    mkdirSync(dirname(args.out), { recursive: true });
    writeFileSync(args.out, json);
    log(`wrote ${args.out}`);
  }
  process.stdout.write(args.json ? json : `${renderModels(result)}\n`);
}

main().catch((err) => {
  process.stderr.write(`[bench] ${err instanceof PlainError ? err.message : err.stack ?? err}\n`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
