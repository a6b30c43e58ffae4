// The sliding-window layers' ring cache (lib/model/kv-ring.ts, kv-ring-read.ts): gpt-oss's even
// layers keep window + 1 positions instead of the whole context. Checked against the cache that
// keeps every position (createCache({ swaFull: true }): the implementation before the ring), the
// float64 forward pass and llama.cpp (whose SWA cache also keeps only the window), over prompts and
// generations longer than the window, in chunks longer and shorter than it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel, open, writeSyntheticModel, type Device, type SyntheticModelSpec } from '../lib/index';
import { SlidingRing } from '../lib/model/kv-ring';
import { referenceLogits } from './helpers/decoder-ref';
import { disposeLlamaCppModels, hasLlamaCpp, llamaCppDecodeProbabilities } from './helpers/llama-cpp';
import { argmax, kl, softmax } from './helpers/distributions';

// As model-gpt-oss.test.ts: four layers (0 and 2 slide), a window of 8, YaRN, sinks, 4 experts.
const SPEC: SyntheticModelSpec = {
  arch: 'gpt-oss', type: 'F32', vocab: 512, width: 64, layers: 4, heads: 4, kvHeads: 2, headDim: 32, ff: 128,
  experts: 4, expertsUsed: 2, slidingWindow: 8, ropeScaling: { type: 'yarn', factor: 4, originalContext: 32 }, seed: 23,
};
const PROMPT = [300, 301, 302, 303, 350, 400, 77, 5, 260, 261, 420, 499, 3, 4, 300, 301, 302, 280, 281, 282, 283, 284, 285, 290];
// 20 decode steps: the ring wraps more than twice after the prompt.
const STEPS = [40, 41, 300, 301, 302, 7, 8, 9, 10, 11, 12, 13, 260, 261, 262, 263, 264, 1, 2, 3];
const V = SPEC.vocab;
// Chunkings of the prompt: chunks shorter than the window over a wrapped ring, one longer than it
// after earlier positions (12 and 13 positions: a band over the ring and the chunk), and a first
// chunk longer than the window (a band over the chunk alone).
const CHUNKINGS = [[5, 12, 17, 24], [5, 17, 24], [11, 24]];

let dir: string;
let dev: Device;
let path: string;
let weights: Map<string, Float32Array>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mto-ring-'));
  dev = await open({ backend: 'cpu', threads: 2 });
  path = join(dir, 'gpt-oss.gguf');
  weights = writeSyntheticModel(path, SPEC, true);
});
afterAll(async () => {
  await disposeLlamaCppModels();
  await dev?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Logits rows: the prompt in the given chunks (ends of each), then each step decoded alone. */
async function logitsOf(opts: { dtype: 'float16' | 'mxfp8'; swaFull: boolean; ends?: number[] }): Promise<Float32Array[]> {
  const model = await loadModel(dev, path, { contextSize: 64 });
  try {
    const cache = model.createCache({ dtype: opts.dtype, swaFull: opts.swaFull });
    const out: Float32Array[] = [];
    let a = 0;
    for (const b of opts.ends ?? [PROMPT.length]) {
      const all = await (await model.forward(PROMPT.slice(a, b), cache, { logits: 'all' })).toFloat32();
      for (let p = 0; p < b - a; p++) out.push(all.slice(p * V, (p + 1) * V));
      a = b;
    }
    for (const id of STEPS) out.push(await (await model.forward([id], cache)).toFloat32());
    cache.dispose();
    return out;
  } finally {
    model.dispose();
  }
}

function maxDiff(a: Float32Array[], b: Float32Array[]): number {
  let m = 0;
  for (let r = 0; r < a.length; r++) for (let i = 0; i < V; i++) m = Math.max(m, Math.abs(a[r][i] - b[r][i]));
  return m;
}

describe('the ring bookkeeping', () => {
  it('puts position q in slot q % slots, keeps a long chunk\'s last positions, and says who sees what', () => {
    const ring = new SlidingRing(4, 5);
    const plan = ring.plan(0, 7);
    // Positions 2..6 stay (5 slots): 2, 3, 4 in slots 2..4, then 5, 6 wrap to slots 0, 1.
    expect(plan.writes).toEqual([{ from: 2, to: 5, slot: 2 }, { from: 5, to: 7, slot: 0 }]);
    expect(Array.from(plan.after)).toEqual([5, 6, 2, 3, 4]);
    ring.commit(plan);
    // Query at position 7 sees 3 < q <= 7: the slots holding 4, 5 and 6 (7 is not written yet).
    expect(Array.from(ring.visible(plan.after, 7, 1))).toEqual([1, 1, 0, 0, 1]);
    // Queries 5 and 6 of a chunk at 5 over the slots and the chunk: 1 < q <= 5 and 2 < q <= 6.
    expect(Array.from(ring.visible([5, 6, 2, 3, 4, -1], 5, 2))).toEqual([1, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 0]);
    const next = ring.plan(7, 1);
    expect(next.writes).toEqual([{ from: 0, to: 1, slot: 2 }]);
    ring.commit(next);
    // Back two positions (to 6) is fine: 3, 4, 5 are held; back three (to 5) needs 2, overwritten by 7.
    expect(() => ring.truncate(5, 8)).toThrow(/swaFull/);
    ring.truncate(6, 8);
    expect(() => ring.plan(6, 1)).not.toThrow();
  });
});

describe('sliding-window layers in a ring of window + 1 positions', () => {
  it('holds window + 1 positions on the sliding layers: cache.bytes shrinks by what they no longer keep', async () => {
    const model = await loadModel(dev, path, { contextSize: 64 });
    const { kvHeads, headDim } = model.config;
    for (const dtype of ['float16', 'mxfp8'] as const) {
      const ring = model.createCache({ dtype });
      const full = model.createCache({ dtype, swaFull: true });
      // Keys and values, 2 full layers of 64 positions and 2 sliding ones of 9.
      const positions = { ring: 2 * (2 * 64 + 2 * 9), full: 2 * 4 * 64 };
      // float16: 2 bytes an element; mxfp8: a byte an element and an E8M0 scale per 32.
      const perPosition = kvHeads * headDim * (dtype === 'float16' ? 2 : 33 / 32);
      expect(ring.bytes, dtype).toBe(positions.ring * perPosition);
      expect(full.bytes, dtype).toBe(positions.full * perPosition);
      ring.dispose();
      full.dispose();
      expect(ring.bytes).toBe(0);
    }
    // A context shorter than the window + 1: the ring is the context.
    const small = model.createCache({ contextSize: 6 });
    expect(small.bytes).toBe(2 * 4 * 6 * kvHeads * headDim * 2);
    small.dispose();
    model.dispose();
  });

  for (const dtype of ['float16', 'mxfp8'] as const) {
    it(`${dtype}: the logits of the cache that keeps every position, prompt in chunks and ${STEPS.length} decode steps`, async () => {
      for (const ends of [undefined, ...CHUNKINGS]) {
        const full = await logitsOf({ dtype, swaFull: true, ends });
        const ring = await logitsOf({ dtype, swaFull: false, ends });
        // The same keys and values in another order: only float summation order differs (prompt
        // rows at position 0 are bit for bit). The difference grows over the decode steps: a key
        // that moves by 1e-7 before float16 rounding can land one float16 step (2^-11) away, and
        // later positions read it; measured up to 3e-4 (logits of standard deviation ~4), against
        // the 5e-3 both caches are from the float64 pass.
        expect(maxDiff(full, ring), `chunks ${ends ?? 'one'}`).toBeLessThan(1e-3);
      }
    });
  }

  it('equals the float64 forward pass over the prompt in chunks and the decode steps', async () => {
    const all = [...PROMPT, ...STEPS];
    const ref = referenceLogits(SPEC, weights, all);
    for (const ends of CHUNKINGS) {
      const ours = await logitsOf({ dtype: 'float16', swaFull: false, ends });
      for (let p = 0; p < all.length; p++) {
        const r = softmax(ref.subarray(p * V, (p + 1) * V));
        const o = softmax(ours[p]);
        expect(kl(r, o), `chunks ${ends}, position ${p}`).toBeLessThan(1e-4);
        expect(argmax(o), `chunks ${ends}, position ${p}`).toBe(argmax(r));
      }
    }
  });

  it('truncate goes back two positions (generate\'s step ahead), further only with swaFull; what follows is unchanged', async () => {
    const model = await loadModel(dev, path, { contextSize: 64 });
    try {
      const run = async (cache: ReturnType<typeof model.createCache>, ids: number[]) => (await model.forward(ids, cache)).toFloat32();
      const ring = model.createCache();
      await run(ring, PROMPT);
      await run(ring, [40]);
      await run(ring, [41]);
      expect(() => ring.truncate(PROMPT.length - 1)).toThrow(expect.objectContaining({ code: 'E_ARG', message: expect.stringContaining('swaFull') }));
      expect(ring.length).toBe(PROMPT.length + 2);
      ring.truncate(PROMPT.length);
      const again = await run(ring, [77]);
      const fresh = model.createCache({ swaFull: true });
      await run(fresh, PROMPT);
      const expected = await run(fresh, [77]);
      // Ring against full cache: float summation order only, bounded as in the chunked test above
      // (a key one float16 step apart; 2.2e-4 seen on an AVX-512 machine).
      expect(maxDiff([again], [expected])).toBeLessThan(1e-3);
      // The full cache goes back anywhere; the ring to 0 too (nothing before it is needed).
      fresh.truncate(3);
      ring.truncate(0);
      expect(maxDiff([await run(ring, PROMPT.slice(0, 4))], [await run(fresh, [PROMPT[3]])])).toBeLessThan(1e-3);
      ring.dispose();
      fresh.dispose();
      expect(() => model.createCache({ swaFull: 1 as unknown as boolean })).toThrow(expect.objectContaining({ code: 'E_ARG' }));
    } finally {
      model.dispose();
    }
  });

  it('generate: continuing from a given cache after an abort (it queued a step ahead) gives the tokens of one run', async () => {
    const model = await loadModel(dev, path, { contextSize: 64 });
    try {
      const whole = await model.generate(PROMPT, { maxTokens: 20, stop: [] });
      const cache = model.createCache();
      const ctrl = new AbortController();
      const first: number[] = [];
      await expect(model.generate(PROMPT, {
        maxTokens: 20, stop: [], cache, signal: ctrl.signal,
        onToken: (t) => { first.push(t); if (first.length === 12) ctrl.abort(new Error('enough')); },
      })).rejects.toThrow('enough');
      // generate had queued the step of the 13th token when it saw the abort: it takes back that
      // step and the 12th token's, two positions, and the 12th is the next call's prompt.
      const kept = cache.length - PROMPT.length;
      expect(kept).toBe(11);
      const rest = await model.generate(whole.slice(kept, kept + 1), { maxTokens: 20 - kept - 1, stop: [], cache });
      expect([...whole.slice(0, kept + 1), ...rest]).toEqual(whole);
      cache.dispose();
    } finally {
      model.dispose();
    }
  });
});

describe.skipIf(!hasLlamaCpp)('the ring against llama.cpp (its SWA cache keeps the window too)', () => {
  it('prompt in chunks and decode steps: the distributions of llama.cpp, within KL 1e-3', async () => {
    const theirs = await llamaCppDecodeProbabilities(path, PROMPT, STEPS, V);
    for (const ends of CHUNKINGS) {
      const ours = await logitsOf({ dtype: 'float16', swaFull: false, ends });
      let same = 0;
      for (let p = 0; p < theirs.length; p++) {
        const o = softmax(ours[p]);
        expect(kl(theirs[p], o), `chunks ${ends}, position ${p}`).toBeLessThan(1e-3);
        if (argmax(o) === argmax(theirs[p])) same++;
      }
      expect(same / theirs.length).toBeGreaterThanOrEqual(0.99);
    }
  });
});
