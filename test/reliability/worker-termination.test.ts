// Terminating worker threads that use the addon, at random moments (module load, open(), ops and
// reads in flight, finalizers pending), never aborts the process: each round's worker is torn
// down while Node-API calls fail with the termination pending (node-addon-api's
// NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS, and finalizers that never throw).
import { describe, expect, it } from 'vitest';
import { full, runProbe } from './child';

describe('worker termination', () => {
  const runs = full ? 4 : 1;
  for (let run = 1; run <= runs; run++) {
    it(`run ${run}: 30 workers terminated mid-work; the process survives and its own device computes`, async () => {
      const r = await runProbe('worker-terminate-child.cjs', ['30', String(run)], { timeoutMs: 180_000 });
      expect(r.signal, r.stderr).toBeNull();
      expect(r.stderr).not.toMatch(/terminate called|Abort|FATAL/);
      expect(r.code, r.stderr).toBe(0);
      expect(r.report).toEqual({ rounds: 30, out: [10, 20] });  // [1,2,3,4] . [1,1,1,1] and . [2,2,2,2]
    }, 200_000);
  }
});
