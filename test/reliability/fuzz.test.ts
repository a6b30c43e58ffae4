// A seeded fuzz of every public entry point (fuzz-child.cjs), each seed in its own child process
// with its address space capped, so that a valid but huge request fails with E_OOM instead of
// swapping the machine: zero crashes, and every failure a TensorOpsError with a stable code.
import { describe, expect, it } from 'vitest';
import { full, runProbe } from './child';

const seeds = full ? 12 : 3;
const calls = full ? 6000 : 3000;

describe('fuzz of every public entry point', () => {
  for (let seed = 1; seed <= seeds; seed++) {
    it(`seed ${seed}: ${calls} calls, no crash, every failure a TensorOpsError with a code`, async () => {
      const r = await runProbe('fuzz-child.cjs', [String(seed), String(calls)], {
        prefix: ['prlimit', `--as=${6 * 2 ** 30}`],
        timeoutMs: 240_000,
      });
      expect(r.signal, r.stderr).toBeNull();
      expect(r.code, r.stderr).toBe(0);
      expect(r.report?.fatal).toBeUndefined();
      expect(r.report?.calls).toBe(calls);
      expect(r.report?.failures, `seed ${seed}`).toEqual([]);
      // The fuzz reaches the kernels: every entry point also succeeded some of the time.
      const outcomes = r.report?.outcomes as Record<string, Record<string, number>>;
      for (const call of ['tensor', 'fromQuantized', 'quantize', 'dequantize', 'cast', 'linear', 'matmul', 'attention', 'read', 'open', 'empty']) {
        expect(outcomes[call]?.ok ?? 0, `${call} never succeeded`).toBeGreaterThan(0);
      }
    }, 300_000);
  }
});
