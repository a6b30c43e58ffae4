// The backend-neutral half of the Metal host (native/core: capabilities, tiers, buffer_pool,
// pipeline_key), run on any platform through the addon's test-only `_internal` export. The
// Objective-C++ half fills a Capabilities record from Metal and calls exactly this code, so the
// decision table below is what a Mac will decide, given the same record.
import { describe, expect, it } from 'vitest';
import { loadBinding } from '../lib/native';

interface Caps {
  hasDevice?: boolean; deviceName?: string; architecture?: string; os?: string; rosetta?: boolean;
  appleFamily?: number; metal4Family?: boolean; unifiedMemory?: boolean;
  /** Probe outcome per tier: true / absent = compiles, a string = the compiler's error. */
  probes?: Partial<Record<'simdgroup' | 'tensorops' | 'tensorops-mx', true | string>>;
}
interface Choice {
  backend: string; tier: string; neuralAccelerators: boolean; fallbackReason?: string;
  probed: string[]; needsProbe?: string;
}
interface PoolStep { handle?: number; bytes?: number; reused?: boolean; error?: string; code?: string }
interface PoolResult {
  steps: PoolStep[]; freed: number[];
  stats: { liveBytes: number; cachedBytes: number; cachedBlocks: number; allocations: number; reuses: number; frees: number };
}
interface Internal {
  selectTier(caps: Caps, request?: { backend?: string; tier?: string }, opts?: { probing?: boolean }): Choice;
  describeCaps(caps: Caps): { generation: number; neuralAcceleratorHardware: boolean; gpuFamily: string };
  mslVersion(tier: string): { version: string; raw: number };
  sizeClass(bytes: number): number;
  poolRun(opts: { cacheLimit: number; maxOutstanding?: number }, script: ({ acquire: number } | { release: number })[]): PoolResult;
  pipelineKey(kernel: string, constants?: { index: number; type: string; value: number | boolean }[]): string;
  commitPolicy(architecture: string, opsEnv?: string, mbEnv?: string): { maxOps: number; maxBytes: number };
  batchBudgetCommits(maxOps: number, maxBytes: number, opBytes: number[], turnEnds?: number[]): number[];
}

const internal = (loadBinding() as unknown as { _internal: Internal })._internal;

// Capability records as device.mm would fill them (architecture names as MLX and llama.cpp logs
// report them: M1 applegpu_g13*, M4 g16*, M5 g17*, A18 Pro g17p).
const gpu = (name: string, architecture: string, appleFamily: number, os: string, extra: Caps = {}): Caps => ({
  hasDevice: true, deviceName: name, architecture, appleFamily, os, unifiedMemory: true,
  metal4Family: os.startsWith('2') && appleFamily >= 7, ...extra,
});
const m1 = (os: string, extra?: Caps) => gpu('Apple M1', 'applegpu_g13g', 7, os, extra);
const m4 = (os: string, extra?: Caps) => gpu('Apple M4 Pro', 'applegpu_g16s', 9, os, extra);
const m5 = (os: string, extra?: Caps) => gpu('Apple M5', 'applegpu_g17g', 10, os, extra);
const paravirtual: Caps = { hasDevice: true, deviceName: 'Apple Paravirtual device', architecture: '', appleFamily: 5, os: '15.5' };

function thrown(fn: () => unknown): { code?: string; message: string } {
  try {
    fn();
  } catch (e) {
    return e as { code?: string; message: string };
  }
  throw new Error('expected a throw');
}

describe('tier selection (native/core/tiers.cc)', () => {
  it('M1 on macOS 14: simdgroup, probing only simdgroup, nothing dropped', () => {
    expect(internal.selectTier(m1('14.5'))).toEqual({
      backend: 'metal', tier: 'simdgroup', neuralAccelerators: false, probed: ['simdgroup'],
    });
  });

  it('M4 on macOS 26.2: simdgroup stays the default (no neural accelerators), saying why and how to override', () => {
    const c = internal.selectTier(m4('26.2'));
    expect(c).toMatchObject({ backend: 'metal', tier: 'simdgroup', neuralAccelerators: false, probed: ['simdgroup'] });
    expect(c.fallbackReason).toMatch(/^tensorops: GPU 'Apple M4 Pro' has no neural accelerators/);
    expect(c.fallbackReason).toContain('llama.cpp measured no faster than simdgroup');
    expect(c.fallbackReason).toContain('METAL_TENSOROPS_TIER=tensorops uses it anyway');
  });

  it('M4 on macOS 26.2 with METAL_TENSOROPS_TIER=tensorops: tensorops, still no neural accelerators', () => {
    expect(internal.selectTier(m4('26.2'), { tier: 'tensorops' })).toEqual({
      backend: 'metal', tier: 'tensorops', neuralAccelerators: false, probed: ['tensorops'],
    });
  });

  it('M5 on macOS 26.2: tensorops with neural accelerators; tensorops-mx (macOS 27) is not a fallback', () => {
    expect(internal.selectTier(m5('26.2'))).toEqual({
      backend: 'metal', tier: 'tensorops', neuralAccelerators: true, probed: ['tensorops'],
    });
  });

  it('M5 on macOS 27 with its probes passing: tensorops-mx, which needs the tensorops probe (its MSL 4.0 libraries) first', () => {
    expect(internal.selectTier(m5('27.0'))).toEqual({
      backend: 'metal', tier: 'tensorops-mx', neuralAccelerators: true, probed: ['tensorops', 'tensorops-mx'],
    });
  });

  it('a failing probe drops exactly one tier and records the compiler message', () => {
    const err = "program_source:12:3: error: no member named 'get_left_input_cooperative_tensor' in 'mpp::tensor_ops::matmul2d'";
    const c = internal.selectTier(m5('27.0', { probes: { 'tensorops-mx': err } }));
    expect(c).toMatchObject({ tier: 'tensorops', neuralAccelerators: true, probed: ['tensorops', 'tensorops-mx'] });
    expect(c.fallbackReason).toBe(`tensorops-mx: its probe kernel failed: ${err}`);
  });

  it('the tensorops probe failing on macOS 27 drops both TensorOps tiers, its message said once', () => {
    const err = "program_source:40:5: error: use of undeclared identifier 'reduce_rows'";
    const c = internal.selectTier(m5('27.0', { probes: { tensorops: err } }));
    expect(c).toMatchObject({ tier: 'simdgroup', neuralAccelerators: false, probed: ['tensorops', 'simdgroup'] });
    expect(c.fallbackReason).toBe(
      `tensorops-mx: the tensorops probe kernel it also needs failed (below); tensorops: its probe kernel failed: ${err}`);
    const forced = thrown(() => internal.selectTier(m5('27.0', { probes: { tensorops: err } }), { tier: 'tensorops-mx' }));
    expect(forced.message).toBe(`METAL_TENSOROPS_TIER=tensorops-mx cannot run here: the tensorops probe kernel it also needs failed: ${err}`);
  });

  it('two failing probes drop two tiers, one clause each', () => {
    const c = internal.selectTier(m5('27.0', { probes: { 'tensorops-mx': 'mx broke', tensorops: "use of undeclared identifier 'mpp'" } }));
    expect(c).toMatchObject({ tier: 'simdgroup', neuralAccelerators: false, probed: ['tensorops', 'simdgroup'] });
    expect(c.fallbackReason).toBe(
      "tensorops-mx: the tensorops probe kernel it also needs failed (below); tensorops: its probe kernel failed: use of undeclared identifier 'mpp'");
  });

  it('M5 on macOS 26.1: simdgroup, and says the neural accelerators wait for 26.2', () => {
    const c = internal.selectTier(m5('26.1'));
    expect(c).toMatchObject({ tier: 'simdgroup', neuralAccelerators: false });
    expect(c.fallbackReason).toBe(
      "tensorops: needs macOS 26.2 or later (this is macOS 26.1); the GPU's neural accelerators stay unused");
  });

  it('a GPU without family Metal4 on macOS 26.2 says so', () => {
    const c = internal.selectTier(m5('26.2', { metal4Family: false }));
    expect(c.tier).toBe('simdgroup');
    expect(c.fallbackReason).toBe("tensorops: GPU 'Apple M5' does not support MTLGPUFamilyMetal4");
  });

  it('A18 Pro (applegpu_g17p, Apple9): no neural accelerators by MLX rule, so simdgroup', () => {
    const c = internal.selectTier(gpu('Apple A18 Pro GPU', 'applegpu_g17p', 9, '26.2'));
    expect(c.tier).toBe('simdgroup');
    expect(c.fallbackReason).toMatch(/no neural accelerators/);
  });

  it('the simdgroup probe failing leaves the cpu backend, with the reason', () => {
    const c = internal.selectTier(m1('15.0', { probes: { simdgroup: 'pipeline creation failed' } }));
    expect(c).toMatchObject({ backend: 'cpu', tier: 'cpu', neuralAccelerators: false, probed: ['simdgroup'] });
    expect(c.fallbackReason).toBe('no metal tier can run here (simdgroup: its probe kernel failed: pipeline creation failed)');
  });

  it('Rosetta: cpu without probing, with the reason', () => {
    const c = internal.selectTier(m5('26.2', { rosetta: true }));
    expect(c).toMatchObject({ backend: 'cpu', tier: 'cpu', probed: [] });
    expect(c.fallbackReason).toMatch(/Rosetta 2.*native arm64 Node\.js/);
  });

  it('a paravirtual Apple5-class device (hosted CI runners): cpu, naming the family it lacks', () => {
    const c = internal.selectTier(paravirtual);
    expect(c).toMatchObject({ backend: 'cpu', tier: 'cpu', probed: [] });
    expect(c.fallbackReason).toMatch(/^GPU 'Apple Paravirtual device' supports GPU family Apple5 only; .*Apple7 \(M1\)/);
  });

  it('no Metal device: cpu', () => {
    expect(internal.selectTier({ hasDevice: false, os: '15.0' }).fallbackReason).toMatch(/^no Metal device/);
  });

  it('METAL_TENSOROPS_BACKEND=cpu: cpu, nothing probed, no fallbackReason', () => {
    expect(internal.selectTier(m5('26.2'), { backend: 'cpu' })).toEqual({
      backend: 'cpu', tier: 'cpu', neuralAccelerators: false, probed: [],
    });
    expect(internal.selectTier(m5('26.2'), { tier: 'cpu' }).backend).toBe('cpu');
  });

  it('METAL_TENSOROPS_BACKEND=metal where Metal cannot run: E_BACKEND with the reason', () => {
    const e = thrown(() => internal.selectTier(paravirtual, { backend: 'metal' }));
    expect(e.code).toBe('E_BACKEND');
    expect(e.message).toMatch(/^backend 'metal' was asked for but is not available: GPU 'Apple Paravirtual device'/);
    expect(internal.selectTier(m1('14.0'), { backend: 'metal' }).tier).toBe('simdgroup');
  });

  it('a forced tier honours it below the best (simdgroup on M5) and refuses it above what can run', () => {
    expect(internal.selectTier(m5('26.2'), { tier: 'simdgroup' })).toEqual({
      backend: 'metal', tier: 'simdgroup', neuralAccelerators: false, probed: ['simdgroup'],
    });
    const old = thrown(() => internal.selectTier(m4('15.3'), { tier: 'tensorops' }));
    expect(old.code).toBe('E_BACKEND');
    expect(old.message).toBe('METAL_TENSOROPS_TIER=tensorops cannot run here: needs macOS 26.2 or later (this is macOS 15.3)');
    const probe = thrown(() => internal.selectTier(m5('26.2', { probes: { tensorops: 'no mpp' } }), { tier: 'tensorops' }));
    expect(probe.message).toBe('METAL_TENSOROPS_TIER=tensorops cannot run here: its probe kernel failed: no mpp');
    const rosetta = thrown(() => internal.selectTier(m1('14.0', { rosetta: true }), { tier: 'simdgroup' }));
    expect(rosetta.message).toMatch(/^METAL_TENSOROPS_TIER=simdgroup cannot run here: this process runs under Rosetta 2/);
  });

  it('unknown names and contradictory requests are E_ARG naming the accepted values', () => {
    const tier = thrown(() => internal.selectTier(m1('14.0'), { tier: 'fast' }));
    expect(tier.code).toBe('E_ARG');
    expect(tier.message).toBe("METAL_TENSOROPS_TIER must be 'auto', 'tensorops-mx', 'tensorops', 'simdgroup' or 'cpu'; got 'fast'");
    const backend = thrown(() => internal.selectTier(m1('14.0'), { backend: 'gpu' }));
    expect(backend.message).toBe("backend (METAL_TENSOROPS_BACKEND) must be 'auto', 'metal' or 'cpu'; got 'gpu'");
    expect(thrown(() => internal.selectTier(m1('14.0'), { backend: 'cpu', tier: 'simdgroup' })).code).toBe('E_ARG');
    expect(thrown(() => internal.selectTier(m1('14.0'), { backend: 'metal', tier: 'cpu' })).code).toBe('E_ARG');
    expect(internal.selectTier(m1('14.0'), { backend: 'auto', tier: 'auto' }).tier).toBe('simdgroup');
  });

  it('without probing, the decision names the one probe it needs next', () => {
    expect(internal.selectTier(m5('26.2'), {}, { probing: false })).toEqual({ needsProbe: 'tensorops' });
    expect(internal.selectTier(m1('14.0'), {}, { probing: false })).toEqual({ needsProbe: 'simdgroup' });
    expect(internal.selectTier(paravirtual, {}, { probing: false })).toMatchObject({ backend: 'cpu' });
  });
});

describe('capability helpers (native/core/capabilities.cc)', () => {
  it('parses the GPU generation as MLX does (two digits before the last character)', () => {
    const gen = (architecture: string) => internal.describeCaps({ hasDevice: true, architecture }).generation;
    expect(gen('applegpu_g13s')).toBe(13);
    expect(gen('applegpu_g16g')).toBe(16);
    expect(gen('applegpu_g17p')).toBe(17);
    expect(gen('')).toBe(0);
    expect(gen('g7')).toBe(0);
    expect(gen('applegpu_gxys')).toBe(0);
  });

  it('neural accelerators: family Apple10, or generation >= 17 (>= 18 for phone-class GPUs)', () => {
    const na = (c: Caps) => internal.describeCaps({ hasDevice: true, ...c }).neuralAcceleratorHardware;
    expect(na({ architecture: 'applegpu_g17s', appleFamily: 9 })).toBe(true);
    expect(na({ architecture: 'applegpu_g17g' })).toBe(true);
    expect(na({ architecture: 'applegpu_g16s', appleFamily: 9 })).toBe(false);
    expect(na({ architecture: 'applegpu_g17p', appleFamily: 9 })).toBe(false);
    expect(na({ architecture: 'applegpu_g18p' })).toBe(true);
    expect(na({ architecture: '', appleFamily: 10 })).toBe(true);
    expect(internal.describeCaps({ hasDevice: false, architecture: 'applegpu_g17s' }).neuralAcceleratorHardware).toBe(false);
    expect(internal.describeCaps(m4('26.2')).gpuFamily).toBe('apple9');
  });

  it('each tier compiles with an explicit MSL version (raw value (major << 16) + minor)', () => {
    expect(internal.mslVersion('simdgroup')).toEqual({ version: '3.1', raw: (3 << 16) + 1 });
    expect(internal.mslVersion('tensorops')).toEqual({ version: '4.0', raw: 4 << 16 });
    expect(internal.mslVersion('tensorops-mx')).toEqual({ version: '4.1', raw: (4 << 16) + 1 });
  });
});

describe('buffer pool size classes (native/core/buffer_pool.cc)', () => {
  const page = 16384;
  const large = 256 * 1024 * 1024;

  it('rounds everything up to at least one 16 KiB page', () => {
    expect([0, 1, 4096, page].map(internal.sizeClass)).toEqual([page, page, page, page]);
    expect(internal.sizeClass(page + 1)).toBe(2 * page);
  });

  it('has four classes per octave: at most 25% waste above 64 KiB, whole pages, monotone, idempotent', () => {
    let prev = 0;
    for (let bytes = 65537; bytes <= large; bytes = Math.ceil(bytes * 1.013) + 7) {
      const c = internal.sizeClass(bytes);
      expect(c).toBeGreaterThanOrEqual(bytes);
      expect(c).toBeLessThanOrEqual(bytes * 1.25);
      expect(c % page).toBe(0);
      expect(c).toBeGreaterThanOrEqual(prev);
      expect(internal.sizeClass(c)).toBe(c);
      prev = c;
    }
    const octave = new Set<number>();
    for (let b = 1 << 20; b <= 2 << 20; b += 4096) octave.add(internal.sizeClass(b));
    expect([...octave].sort((a, b) => a - b)).toEqual([1, 1.25, 1.5, 1.75, 2].map((m) => m * (1 << 20)));
  });

  it('above 256 MiB rounds to pages only', () => {
    expect(internal.sizeClass(large + 1)).toBe(large + page);
    expect(internal.sizeClass(3 * large + 5)).toBe(3 * large + page);
  });
});

describe('buffer pool reuse (native/core/buffer_pool.cc)', () => {
  const MiB = 1 << 20;

  it('a create/dispose loop reuses one buffer instead of allocating each time', () => {
    const script = [];
    for (let i = 0; i < 200; i++) script.push({ acquire: MiB - (i % 7) * 100 }, { release: 2 * i });
    const r = internal.poolRun({ cacheLimit: 64 * MiB }, script);
    expect(r.stats).toMatchObject({ allocations: 1, reuses: 199, liveBytes: 0, cachedBlocks: 1 });
    expect(new Set(r.steps.filter((s) => s.handle).map((s) => s.handle))).toEqual(new Set([1]));
  });

  it('a slowly growing buffer (a KV cache gaining a row per step) keeps hitting its class', () => {
    const script: ({ acquire: number } | { release: number })[] = [{ acquire: 100_000 }];
    for (let i = 1, prev = 0; i <= 300; i++) {
      script.push({ acquire: 100_000 + 1000 * i }, { release: prev });  // grow: copy, drop the old one
      prev = script.length - 2;
    }
    const r = internal.poolRun({ cacheLimit: 64 * MiB }, script);
    const classes = new Set(r.steps.filter((s) => s.bytes).map((s) => s.bytes));
    // Old and new buffer are alive together, so two blocks per class at most.
    expect(r.stats.allocations).toBeLessThanOrEqual(2 * classes.size);
    expect(r.stats.allocations).toBeLessThan(30);
    expect(r.stats.reuses).toBeGreaterThan(270);
  });

  it('takes the most recently released block of a class first', () => {
    const r = internal.poolRun({ cacheLimit: MiB }, [
      { acquire: 5000 }, { acquire: 6000 }, { release: 0 }, { release: 1 }, { acquire: 7000 },
    ]);
    expect(r.steps[4]).toEqual({ handle: 2, bytes: 16384, reused: true });
  });

  it('evicts the least recently released blocks beyond the cache limit', () => {
    const script = [];
    for (let i = 0; i < 5; i++) script.push({ acquire: 16384 });
    for (let i = 0; i < 5; i++) script.push({ release: i });
    const r = internal.poolRun({ cacheLimit: 4 * 16384 }, script);
    expect(r.stats).toMatchObject({ cachedBlocks: 4, cachedBytes: 4 * 16384, frees: 1 });
    expect(r.freed[0]).toBe(1);  // released first, evicted first; the rest are freed with the pool
    expect(r.freed.slice(1).sort()).toEqual([2, 3, 4, 5]);
  });

  it('never caches blocks above 256 MiB or above the cache limit', () => {
    const big = internal.poolRun({ cacheLimit: 1024 * MiB }, [{ acquire: 300 * MiB }, { release: 0 }]);
    expect(big.stats).toMatchObject({ cachedBytes: 0, frees: 1 });
    const overLimit = internal.poolRun({ cacheLimit: MiB }, [{ acquire: 2 * MiB }, { release: 0 }]);
    expect(overLimit.stats).toMatchObject({ cachedBytes: 0, frees: 1 });
  });

  it('when allocation fails it empties the cache and retries, then reports E_OOM', () => {
    const r = internal.poolRun({ cacheLimit: 64 * MiB, maxOutstanding: 1 }, [
      { acquire: 1000 }, { release: 0 }, { acquire: MiB }, { acquire: MiB },
    ]);
    expect(r.steps[2]).toMatchObject({ handle: 2, reused: false });
    expect(r.freed[0]).toBe(1);
    expect(r.steps[3].code).toBe('E_OOM');
    expect(r.steps[3].error).toMatch(/could not allocate a buffer of 1048576 bytes/);
  });
});

describe('pipeline cache keys (native/core/pipeline_key.cc)', () => {
  it('is the kernel name alone without constants, and lists constants by index otherwise', () => {
    expect(internal.pipelineKey('attention_simdgroup')).toBe('attention_simdgroup');
    expect(internal.pipelineKey('qmm', [
      { index: 5, type: 'f32', value: 1 }, { index: 0, type: 'u32', value: 64 },
      { index: 2, type: 'i16', value: -2 }, { index: 1, type: 'bool', value: true },
    ])).toBe('qmm<0:u32=64,1:bool=1,2:i16=-2,5:f32=0x3f800000>');
  });

  it('does not depend on the order the constants are given in', () => {
    const a = [{ index: 0, type: 'u32', value: 32 }, { index: 1, type: 'bool', value: false }];
    expect(internal.pipelineKey('k', a)).toBe(internal.pipelineKey('k', [...a].reverse()));
  });

  it('tells apart values, types and float bit patterns', () => {
    const keys = [
      internal.pipelineKey('k', [{ index: 0, type: 'u32', value: 1 }]),
      internal.pipelineKey('k', [{ index: 0, type: 'i32', value: 1 }]),
      internal.pipelineKey('k', [{ index: 0, type: 'bool', value: true }]),
      internal.pipelineKey('k', [{ index: 0, type: 'u32', value: 2 }]),
      internal.pipelineKey('k', [{ index: 1, type: 'u32', value: 1 }]),
      internal.pipelineKey('k', [{ index: 0, type: 'f32', value: 0 }]),
      internal.pipelineKey('k', [{ index: 0, type: 'f32', value: -0 }]),
      internal.pipelineKey('k2', [{ index: 0, type: 'u32', value: 1 }]),
    ];
    expect(new Set(keys).size).toBe(keys.length);
    expect(internal.pipelineKey('k', [{ index: 0, type: 'i32', value: -2147483648 }])).toBe('k<0:i32=-2147483648>');
  });

  it('rejects repeated indices, non-identifier kernel names and out-of-range values', () => {
    const dup = thrown(() => internal.pipelineKey('k', [{ index: 3, type: 'u32', value: 1 }, { index: 3, type: 'u32', value: 2 }]));
    expect(dup).toMatchObject({ code: 'E_ARG', message: 'function constant index 3 given twice for k' });
    expect(thrown(() => internal.pipelineKey('k<x>')).code).toBe('E_ARG');
    expect(thrown(() => internal.pipelineKey('9k')).code).toBe('E_ARG');
    expect(thrown(() => internal.pipelineKey('k', [{ index: 0, type: 'i16', value: 40000 }])).code).toBe('E_ARG');
    expect(thrown(() => internal.pipelineKey('k', [{ index: 0, type: 'u32', value: -1 }])).code).toBe('E_ARG');
    expect(thrown(() => internal.pipelineKey('k', [{ index: 0, type: 'f64', value: 1 }])).code).toBe('E_ARG');
  });
});

describe('command buffer commit policy (core/commit_policy.h)', () => {
  const MiB = 2 ** 20;
  it('by GPU class, from the architecture name\'s last letter, as MLX sets it', () => {
    expect(internal.commitPolicy('applegpu_g17p')).toEqual({ maxOps: 20, maxBytes: 40 * MiB });  // phone / tablet
    expect(internal.commitPolicy('applegpu_g13g')).toEqual({ maxOps: 40, maxBytes: 40 * MiB });  // base, Pro
    expect(internal.commitPolicy('applegpu_g16s')).toEqual({ maxOps: 50, maxBytes: 50 * MiB });  // Max
    expect(internal.commitPolicy('applegpu_g15d')).toEqual({ maxOps: 50, maxBytes: 50 * MiB });  // Ultra
    expect(internal.commitPolicy('')).toEqual({ maxOps: 40, maxBytes: 40 * MiB });  // paravirtual: unknown
  });

  it('BatchBudget: the op that reaches max_ops, or brings the bound bytes to max_bytes, ends the batch; any commit starts the count again', () => {
    // 4 ops or 100 bytes: ops 1-4 (40 B) end on the count; 5-6 (90 + 20 B) on the bytes; 7-10 on
    // the count again (215 B, both at once).
    expect(internal.batchBudgetCommits(4, 100, [10, 10, 10, 10, 90, 20, 5, 5, 5, 200])).toEqual([4, 6, 10]);
    // A commit for another reason (a turn's end after op 2) restarts both counts: 3-6 is a full batch.
    expect(internal.batchBudgetCommits(4, 100, [10, 50, 10, 10, 10, 10, 10], [2])).toEqual([2, 6]);
    // One op binding more than the budget is a batch of its own.
    expect(internal.batchBudgetCommits(4, 100, [150, 1, 1], [])).toEqual([1]);
    // The default policy's 40 ops, with ops that bind nothing (the async test backend's view).
    const { maxOps, maxBytes } = internal.commitPolicy('');
    expect(internal.batchBudgetCommits(maxOps, maxBytes, new Array(100).fill(0))).toEqual([40, 80]);
  });

  it('METAL_TENSOROPS_COMMIT_OPS and _MB override it; a bad value is E_ARG naming the variable', () => {
    expect(internal.commitPolicy('applegpu_g16s', '80', '256')).toEqual({ maxOps: 80, maxBytes: 256 * MiB });
    expect(internal.commitPolicy('applegpu_g17p', '', undefined)).toEqual({ maxOps: 20, maxBytes: 40 * MiB });
    for (const bad of ['0', '-3', '1.5', 'many']) {
      expect(thrown(() => internal.commitPolicy('applegpu_g13g', bad))).toMatchObject({
        code: 'E_ARG', message: `METAL_TENSOROPS_COMMIT_OPS must be an integer from 1 to 100000; got '${bad}'`,
      });
    }
  });
});
