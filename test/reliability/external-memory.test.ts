// The tensors' bytes reported to V8 as external memory pace its collections: a loop that disposes
// what it makes should not collect every step, and one that drops its tensors undisposed must still
// be collected often enough that memory stays bounded. Each loop runs in a child
// (external-memory-child.cjs) so that nothing else in the process moves the counts.
import { describe, expect, it } from 'vitest';
import { runProbe } from './child';

const MiB = 2 ** 20;

describe('external memory reported to V8', () => {
  it('a loop that makes and disposes 64 MiB outputs (add, rmsNorm) runs without a major collection per step', async () => {
    const steps = 40;
    const r = await runProbe('external-memory-child.cjs', ['dispose', String(steps)]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    // Reporting every drop made 40 majors in 40 steps (V8 starts one when external memory grows
    // 64 MiB past its last figure); holding the figure until the live bytes halve leaves ~1.
    expect(r.report!.majors as number).toBeLessThanOrEqual(steps / 8);
  }, 120_000);

  it('outputs dropped without dispose() are still collected: 40 of 64 MiB (2.5 GiB made) never hold more than 1 GiB', async () => {
    const r = await runProbe('external-memory-child.cjs', ['drop', '40']);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.report!.majors as number).toBeGreaterThan(0);
    // The two 64 MiB operands, the addon and V8 (~300 MiB) plus what waits for collection.
    expect(r.report!.maxRss as number).toBeLessThan(300 * MiB + 1024 * MiB);
  }, 120_000);
});
