// The benchmark must not rot: its quickest mode (--smoke: tiny shapes, a few repetitions) runs
// here and its JSON document is checked for structure and for the correctness checks it makes
// against the peer. Nothing here judges speed: speed is what `npm run bench` reports.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { skipUnlessFull } from './helpers/suite';

const root = resolve(__dirname, '..');
// The peers are not dependencies of the package: they load from bench/peers (npm run bench:peers),
// as bench/peers.mjs loads them.
const peersDir = join(root, 'bench/peers');
const requirePeer = createRequire(join(peersDir, 'package.json'));

interface Streaming { method: string; copies: number; bytesPerCopy: number }
interface Timing { medianMs: number; minMs: number; reps: number; gflops: number | null; gbps: number | null; streaming?: Streaming; kernel?: Timing }
interface MorePeer extends Timing { op: string; ratio: number | null; error?: string; ratioTo?: string }
interface Case {
  id: string; op: string; phase: string | null; weights: string | null; threads: number;
  morePeers?: Record<string, MorePeer>; oursFromCache?: Timing;
  ours: Timing; peer: (Timing & { op: string; error?: string }) | null; peerMissing?: string;
  ratio: number | null; limit: string; fractionOfLimit: number | null; kernelFractionOfLimit?: number | null; streaming?: Streaming;
  scaling: { speedup: number } | null;
  check: Record<string, number | string | boolean> | null;
  targets: unknown[];
}
interface Doc {
  mode: string; threads: number;
  machine: { cpu: string; cpuId: { family: number; model: number; stepping: number | null } | null; cores: number; node: string; peaks: { fmaGflops: number; readGBps: number; fmaIsa: string; kernels: string; oneThread: { fmaGflops: number } } };
  peer: { available: boolean; version?: string; reason?: string; intraOpThreads?: number; loadedFrom?: string };
  morePeers: { openblas: { available: boolean; threads?: number; core?: string; reason?: string } };
  cases: Case[];
  decodeStep?: {
    shape: { layers: number }; opsPerToken: Record<string, number>; queueCallUs: { median: number; calls: number };
    queueCost: { calls: number; rounds: number; medianUs: number; meanUs: number };
    variants: Record<string, { tokensPerSecond: number; stepMs: number; kernelSumMs: number; overKernels: number; perOpOverheadUs: number }>;
  };
  summary: { checksFailed: number };
}

function bench(args: string[]): Doc {
  const out = execFileSync(process.execPath, [join(root, 'bench/run.mjs'), '--smoke', '--json', '--threads', '2', ...args], {
    cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 100_000, maxBuffer: 64 << 20,
  });
  return JSON.parse(out) as Doc;
}

/** Whether OpenBLAS loads the way bench/peer-openblas.mjs loads it (koffi, the system library). */
function openBlasLoads(): boolean {
  try {
    requirePeer('koffi').load('libopenblas.so.0');
    return true;
  } catch {
    return false;
  }
}

function peerLoads(): boolean {
  try {
    requirePeer('onnxruntime-node');
    requirePeer('protobufjs');  // builds the models the peer runs
    return true;
  } catch {
    return false;
  }
}

describe('npm run bench -- --smoke --json', () => {
  let doc: Doc;
  beforeAll(() => {
    doc = bench([]);
  }, 110_000);

  it('describes the machine and its measured limits', () => {
    expect(doc.mode).toBe('smoke');
    expect(doc.threads).toBe(2);
    expect(doc.machine.cpu.length).toBeGreaterThan(0);
    expect(doc.machine.cores).toBeGreaterThan(0);
    expect(doc.machine.node).toBe(process.version);
    expect(doc.machine.peaks.fmaGflops).toBeGreaterThan(0);
    expect(doc.machine.peaks.oneThread.fmaGflops).toBeGreaterThan(0);
    expect(doc.machine.peaks.readGBps).toBeGreaterThan(0);
    expect(typeof doc.machine.peaks.fmaIsa).toBe('string');
    // The kernels ours ran with (conversion/fused dot), as the addon chose them for this CPU.
    expect(doc.machine.peaks.kernels).toMatch(/^(baseline|avx2|avx512|avx512vbmi|neon)\/(none|avx2|avx512|avx512vbmi|neon)$/);
    // x86 Linux: family and model as /proc/cpuinfo's first processor gives them (a virtual
    // machine's model name may not tell Zen 3 from Zen 5).
    if (process.platform === 'linux' && process.arch === 'x64' && existsSync('/proc/cpuinfo')) {
      const info = readFileSync('/proc/cpuinfo', 'utf8').split('\n\n')[0];
      const field = (name: string) => Number(info.split('\n').find((l) => l.startsWith(name))!.split(':')[1]);
      expect(doc.machine.cpuId).toEqual({ family: field('cpu family'), model: field('model\t'), stepping: field('stepping') });
    }
  });

  it('runs every case of issue 6 (at tiny shapes), each with our timing', () => {
    const ids = doc.cases.map((c) => c.id);
    for (const phase of ['decode', 'prefill']) {
      for (const f of ['float32', 'float16', 'mxfp4', 'mxfp8', 'mxint8', 'affine4']) {
        expect(ids.some((id) => id.startsWith(`linear ${phase} `) && id.endsWith(` ${f}`)), `${phase} ${f}`).toBe(true);
      }
    }
    expect(ids.filter((id) => id.startsWith('attention prefill'))).toHaveLength(1);
    expect(ids.filter((id) => id.startsWith('attention decode'))).toHaveLength(3);
    expect(ids.filter((id) => id.endsWith(' mxfp8 K/V'))).toHaveLength(1);
    expect(ids.filter((id) => id.startsWith('quantize'))).toHaveLength(2);
    // Issue 25's memory-bound ops, two of them beside onnxruntime's fused contrib ops.
    expect(ids.filter((id) => id.startsWith('model '))).toHaveLength(7);
    // The inline call (the latency target) and the round trip through the thread pool.
    expect(ids.filter((id) => id.startsWith('overhead'))).toHaveLength(2);
    for (const c of doc.cases) {
      expect(c.ours.medianMs, c.id).toBeGreaterThan(0);
      expect(c.ours.reps, c.id).toBeGreaterThanOrEqual(1);
      expect(['fma', 'bandwidth', 'latency'], c.id).toContain(c.limit);
      if (c.limit !== 'latency') expect(c.fractionOfLimit, c.id).toBeGreaterThan(0);
      if (c.phase === 'prefill') expect(c.scaling?.speedup, c.id).toBeGreaterThan(0);
    }
  });

  it('times decode cases as a loop over at least 2 copies of their data, every copy at least once', () => {
    const decode = doc.cases.filter((c) => c.phase === 'decode');
    expect(decode.length).toBe(15);
    for (const c of decode) {
      expect(c.streaming?.method, c.id).toBe('layer loop');
      expect(c.streaming?.copies, c.id).toBeGreaterThanOrEqual(2);
      expect(c.streaming?.bytesPerCopy, c.id).toBe(c.bytes);
      expect(c.ours.reps, c.id).toBeGreaterThanOrEqual(c.streaming?.copies ?? Infinity);
      if (c.peer && !c.peer.error) {
        expect(c.peer.streaming?.copies, c.id).toBeGreaterThanOrEqual(2);
        expect(c.peer.reps, c.id).toBeGreaterThanOrEqual(c.peer.streaming?.copies ?? Infinity);
      }
    }
    for (const c of doc.cases.filter((x) => x.phase === 'prefill')) expect(c.streaming, c.id).toBeUndefined();
  });

  it('times a decode step three ways (the whole layer on the device, its device ops queued, awaited one by one), each beside its kernels\' sum, and the JS cost of queueing an op', () => {
    const d = doc.decodeStep!;
    expect(Object.keys(d.variants)).toEqual(['layer', 'queued', 'awaited']);
    expect(d.opsPerToken).toEqual({ layer: 20 * d.shape.layers, queued: 8 * d.shape.layers, awaited: 8 * d.shape.layers });
    expect(d.queueCallUs.calls).toBe(d.opsPerToken.queued);
    expect(d.queueCallUs.median).toBeGreaterThan(0);
    expect(d.queueCost.calls).toBe(500);
    expect(d.queueCost.medianUs).toBeGreaterThan(0);
    expect(d.queueCost.meanUs).toBeGreaterThan(0);
    for (const [name, v] of Object.entries(d.variants)) {
      // Both are rounded to 4 significant digits: each within 5e-4 of its value (a fixed 0.5 fails above 1000 t/s).
      expect(Math.abs(v.tokensPerSecond * v.stepMs / 1e3 - 1), name).toBeLessThan(1.5e-3);
      expect(v.kernelSumMs, name).toBeGreaterThan(0);
      // The kernels run one after another inside the step: their sum fits in its wall time.
      expect(v.kernelSumMs, name).toBeLessThanOrEqual(v.stepMs);
    }
  });

  it('reports our time in the kernel alone for ops run on the pool, within our round trip', () => {
    // Linear decode at the smoke shapes (1 x 256 x 256 and up) runs on the pool threads.
    const decode = doc.cases.filter((c) => c.op === 'linear' && c.phase === 'decode');
    expect(decode.length).toBe(12);
    for (const c of decode) {
      expect(c.ours.kernel?.medianMs, c.id).toBeGreaterThan(0);
      expect(c.ours.kernel!.medianMs, c.id).toBeLessThanOrEqual(c.ours.medianMs);
      expect(c.kernelFractionOfLimit, c.id).toBeGreaterThanOrEqual(c.fractionOfLimit!);
    }
  });

  it('our results pass every check (float32 and mxint8 linear equal the peer on the same weights)', () => {
    expect(doc.summary.checksFailed).toBe(0);
    for (const c of doc.cases) if (c.check) expect(c.check.ok, `${c.id}: ${JSON.stringify(c.check)}`).toBe(true);
  });

  it('compares with onnxruntime in the same run when it loads', () => {
    expect(doc.peer.available).toBe(peerLoads());
    if (!doc.peer.available) return;
    expect(doc.peer.intraOpThreads).toBe(2);
    for (const c of doc.cases.filter((x) => x.op === 'linear' || x.op === 'attention' || x.op === 'overhead')) {
      expect(c.peer?.error, c.id).toBeUndefined();
      expect(c.peer?.medianMs, c.id).toBeGreaterThan(0);
      expect(c.ratio, c.id).toBeGreaterThan(0);
    }
    for (const c of doc.cases.filter((x) => x.op === 'attention')) {
      expect(c.check?.maxAbsDiff, c.id).toBeLessThanOrEqual(1e-4);
    }
    for (const c of doc.cases.filter((x) => x.op === 'linear' && (x.weights === 'float32' || x.weights === 'mxint8'))) {
      expect(c.check?.peerHasOurWeights, c.id).toBe(true);
      expect(c.check?.oursVsPeerRelRms, c.id).toBeLessThanOrEqual(1e-5);
    }
  });

  it('compares float32 linear with OpenBLAS in the same run when it loads, and checks ours against it', () => {
    expect(doc.morePeers.openblas.available).toBe(openBlasLoads());
    if (!doc.morePeers.openblas.available) return;
    expect(doc.morePeers.openblas.threads).toBe(2);
    const f32 = doc.cases.filter((c) => c.op === 'linear' && c.weights === 'float32');
    expect(f32).toHaveLength(4);
    for (const c of f32) {
      const b = c.morePeers?.openblas;
      expect(b?.error, c.id).toBeUndefined();
      expect(b?.medianMs, c.id).toBeGreaterThan(0);
      expect((b?.ratio ?? 0) / ((b?.medianMs ?? 0) / c.ours.medianMs), c.id).toBeCloseTo(1, 2);
      expect(b?.op, c.id).toMatch(c.phase === 'decode' ? /cblas_sgemv/ : /cblas_sgemm/);
      if (c.phase === 'decode') expect(b?.streaming?.copies, c.id).toBeGreaterThanOrEqual(2);
      expect(c.check?.oursVsOpenBlasRelRms, c.id).toBeLessThanOrEqual(1e-5);
    }
    for (const c of doc.cases.filter((x) => !(x.op === 'linear' && x.weights === 'float32'))) {
      expect(c.morePeers?.openblas, c.id).toBeUndefined();
    }
  });

  it('renders as a Markdown table (bench/table.mjs)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mto-bench-'));
    const file = join(dir, 'smoke.json');
    writeFileSync(file, JSON.stringify(doc));
    const md = execFileSync(process.execPath, [join(root, 'bench/table.mjs'), file], { encoding: 'utf8' });
    expect(md).toMatch(/^\| case \| ours \| ORT \| ORT\/ours \| ORT lvl4 \(ratio\) \| OpenBLAS \(ratio\) \| ggml \(ratio\) \|/m);
    expect(md.split('\n').filter((l) => l.startsWith('| linear ')).length).toBe(doc.cases.filter((c) => c.op === 'linear').length);
  });
});

// Installed by `npm run bench:peers` (.ci/run does): the quick suite skips what needs them where
// they are not; the full suite fails.
const peersInstalled = existsSync(join(peersDir, 'node_modules/onnxruntime-node/package.json'));

describe('the peers in bench/peers', () => {
  it.skipIf(skipUnlessFull(peersInstalled ? undefined : 'npm run bench:peers'))('load from there, at the versions bench/peers/package.json pins', () => {
    const pinned = JSON.parse(readFileSync(join(peersDir, 'package.json'), 'utf8')).dependencies as Record<string, string>;
    expect(Object.keys(pinned).sort()).toEqual(['koffi', 'node-llama-cpp', 'onnxruntime-node', 'protobufjs']);
    for (const [name, version] of Object.entries(pinned)) {
      // node-llama-cpp is an ES module only (bench/models.mjs imports it by path): no require.resolve.
      if (name !== 'node-llama-cpp') expect(requirePeer.resolve(name), name).toContain(join(peersDir, 'node_modules', name));
      expect(JSON.parse(readFileSync(join(peersDir, 'node_modules', name, 'package.json'), 'utf8')).version, name).toBe(version);
    }
    const doc = bench(['--peer', '--filter', 'overhead']);
    expect(doc.peer).toMatchObject({ available: true, version: pinned['onnxruntime-node'] });
    expect(doc.peer.loadedFrom).toMatch(/^bench[\\/]peers[\\/]node_modules[\\/]onnxruntime-node[\\/]/);
  }, 110_000);

  it('when not installed, the bench runs our side alone and says how to install them; --peer fails', () => {
    const env = { ...process.env, METAL_TENSOROPS_BENCH_PEERS: mkdtempSync(join(tmpdir(), 'mto-no-peers-')) };
    delete env.METAL_TENSOROPS_BENCH_NO_PEER;
    const run = (args: string[]) => spawnSync(process.execPath, [join(root, 'bench/run.mjs'), '--smoke', '--json', '--threads', '2', '--filter', 'overhead', ...args], {
      cwd: root, encoding: 'utf8', timeout: 100_000, env,
    });
    const alone = run([]);
    expect(alone.status, alone.stderr).toBe(0);
    expect(alone.stderr).toMatch(/peers \(onnxruntime-node, protobufjs, koffi\) are not installed: running our side alone; .*npm run bench:peers/);
    const doc = JSON.parse(alone.stdout) as Doc;
    expect(doc.peer.available).toBe(false);
    expect(doc.peer.reason).toMatch(/is not installed \(npm run bench:peers\)/);
    expect(doc.morePeers.openblas.reason).toMatch(/koffi is not installed/);
    expect(doc.cases.map((c) => c.op)).toEqual(['overhead', 'overhead']);
    for (const c of doc.cases) expect(c.ours.medianMs, c.id).toBeGreaterThan(0);

    const asked = run(['--peer']);
    expect(asked.status).toBe(1);
    expect(asked.stdout).toBe('');
    expect(asked.stderr.trim()).toMatch(/^\[bench\] --peer: onnxruntime-node, protobufjs, koffi did not load; .*npm run bench:peers/);
  }, 110_000);
});

describe('npm run bench without the peer', () => {
  it('still runs our side and says the peer is missing', () => {
    const doc = bench(['--no-peer', '--filter', 'attention decode,overhead']);
    expect(doc.peer.available).toBe(false);
    expect(doc.peer.reason).toMatch(/--no-peer/);
    expect(doc.cases.map((c) => c.op).sort()).toEqual(['attention', 'attention', 'attention', 'overhead', 'overhead']);
    for (const c of doc.cases) {
      expect(c.peer).toBeNull();
      expect(c.peerMissing).toMatch(/not available/);
      expect(c.ours.medianMs).toBeGreaterThan(0);
    }
  }, 110_000);
});

describe('npm run bench -- --models --smoke', () => {
  interface Side { ppTokensPerS: number; tgTokensPerS: number; ppReps: number[]; tgReps: number[] }
  interface ModelsDoc {
    threads: number; peer: { available: boolean; version?: string; reason?: string };
    shape: { pp: number; tg: number };
    cases: {
      model: string; type: string; fileBytes: number; ours: Side; oursInt8: Side; llamaCpp: (Side & { error?: string }) | null;
      ppRatio: number | null; tgRatio: number | null; int8PpRatio: number | null; int8TgRatio: number | null;
    }[];
  }
  const hasLlamaCpp = existsSync(join(peersDir, 'node_modules/node-llama-cpp/package.json'));

  it('times a generated llama of each weight type and a gpt-oss, ours and llama.cpp on the same file', () => {
    const doc = bench(['--models']) as unknown as ModelsDoc;
    expect(doc.cases.map((c) => `${c.model} ${c.type}`)).toEqual(['llama Q8_0', 'llama Q4_0', 'llama MXFP4', 'gpt-oss F16+MXFP4']);
    expect(doc.peer.available).toBe(hasLlamaCpp);
    for (const c of doc.cases) {
      expect(c.fileBytes).toBeGreaterThan(0);
      expect(c.ours.ppTokensPerS).toBeGreaterThan(0);
      expect(c.ours.tgTokensPerS).toBeGreaterThan(0);
      expect(c.oursInt8.tgTokensPerS).toBeGreaterThan(0);
      // --smoke: one counted repetition per side (after the warm-up), its rate the median.
      for (const side of [c.ours, c.oursInt8, ...(hasLlamaCpp ? [c.llamaCpp!] : [])]) {
        expect(side.ppReps).toEqual([side.ppTokensPerS]);
        expect(side.tgReps).toEqual([side.tgTokensPerS]);
      }
      if (hasLlamaCpp) {
        expect(c.llamaCpp?.error).toBeUndefined();
        expect(c.ppRatio).toBeCloseTo(c.ours.ppTokensPerS / c.llamaCpp!.ppTokensPerS, 6);
        expect(c.tgRatio).toBeCloseTo(c.ours.tgTokensPerS / c.llamaCpp!.tgTokensPerS, 6);
        expect(c.int8TgRatio).toBeCloseTo(c.oursInt8.tgTokensPerS / c.llamaCpp!.tgTokensPerS, 6);
      } else {
        expect(c.llamaCpp).toBeNull();
      }
    }
  }, 110_000);
});
