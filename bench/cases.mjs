// The cases of issue 6, and the tiny shapes of the smoke mode (a quick self-check of the bench).
import { LAYER_LOOP_BYTES } from './layer-loop.mjs';

export const WEIGHT_FORMATS = ['float32', 'float16', 'mxfp4', 'mxfp8', 'mxint8', 'affine4'];

/**
 * Timing settings per mode: about targetMs of timed work per side and case (full: up to 1000
 * repetitions, so that a decode op's median spans ~1 s of a shared machine's changing load, not
 * the ~20 ms that 60 repetitions of a 0.3 ms op took). peaks: time per roofline measurement and
 * the buffer streamed for bandwidth (the smoke mode's 32 MiB may sit in a cache: its bandwidth is
 * not a memory bandwidth). layerLoopBytes: what a decode case's layer loop
 * reads per pass (layer-loop.mjs); the smoke mode's tiny shapes would need thousands of copies for
 * 256 MiB, so it reads 256 KiB per pass (a few copies, from a cache: it only checks the bench works).
 */
export const MODES = {
  full: { targetMs: 1500, minReps: 3, maxReps: 1000, warmup: 2, scalingReps: 5, overheadCalls: 3000, peaks: { seconds: 0.3, readMiB: 1024 }, layerLoopBytes: LAYER_LOOP_BYTES },
  quick: { targetMs: 300, minReps: 2, maxReps: 30, warmup: 1, scalingReps: 1, overheadCalls: 500, peaks: { seconds: 0.1, readMiB: 256 }, layerLoopBytes: LAYER_LOOP_BYTES },
  smoke: { targetMs: 20, minReps: 1, maxReps: 5, warmup: 1, scalingReps: 1, overheadCalls: 50, peaks: { seconds: 0.03, readMiB: 32 }, layerLoopBytes: 256 * 2 ** 10 },
};

export function linearShapes(mode) {
  if (mode === 'smoke') return { shapes: [[256, 256], [320, 256]], Ms: [1, 16] };
  return { shapes: [[4096, 4096], [11008, 4096]], Ms: [1, 512] };
}

export function attentionCases(mode) {
  if (mode === 'smoke') {
    const s = { B: 1, Hq: 4, Hkv: 2, D: 32 };
    return [{ ...s, Lq: 64, Lk: 64 }, { ...s, Lq: 1, Lk: 32 }, { ...s, Lq: 1, Lk: 128 },
      { ...s, Lq: 1, Lk: 128, kv: 'mxfp8' }];
  }
  // The last case: the same decode with an FP8 KV cache (beyond issue 6's list: no target).
  const s = { B: 1, Hq: 32, Hkv: 8, D: 128 };
  return [{ ...s, Lq: 1024, Lk: 1024 }, { ...s, Lq: 1, Lk: 512 }, { ...s, Lq: 1, Lk: 4096 },
    { ...s, Lq: 1, Lk: 4096, kv: 'mxfp8' }];
}

export function quantizeCases(mode) {
  const [rows, cols] = mode === 'smoke' ? [256, 256] : [4096, 4096];
  return ['mxfp4', 'mxfp8'].map((format) => ({ rows, cols, format }));
}

/**
 * The calling-overhead cases, float32 linear: 1 x 32 x 32 runs inline on the JS thread (the issue's
 * latency target), 1 x 256 x 256 is past the inline limit and makes the round trip through the cpu
 * backend's thread pool that every larger op pays (no target: it shows what a decode-sized op
 * cannot go below).
 */
export const OVERHEAD_CASES = [
  { M: 1, N: 32, K: 32, path: 'inline' },
  { M: 1, N: 256, K: 256, path: 'pool' },
];
