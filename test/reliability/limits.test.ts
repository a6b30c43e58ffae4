// Resource limits never abort the process: open() under a pids limit runs with the threads it
// could start or answers E_BACKEND, and a read whose destination cannot be allocated answers
// E_OOM. Each probe runs in a child (limits-child.cjs) that the parent limits once it is ready.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { open } from '../../lib/index';
import { runProbe } from './child';
import { limitTasks, pidsLimitUnavailable, taskCount } from './pids-cgroup';

const linux = process.platform === 'linux';
const threadsNow = () => readFileSync('/proc/self/status', 'utf8').match(/Threads:\s+(\d+)/)![1];

describe.runIf(linux)('resource limits', () => {
  // A pids cgroup needs root and a mounted pids controller: where there is none (a contributor's
  // machine, a container without it) the test is skipped, saying why.
  const noPids = pidsLimitUnavailable();
  it.skipIf(noPids !== undefined)(
    `under a pids limit, open() runs with the threads it got or answers E_BACKEND, and close() returns them${noPids ? ` (skipped: ${noPids})` : ''}`,
    async () => {
      let release = () => {};
      const spare = 3;
      const r = await runProbe('limits-child.cjs', ['threads'], {
        onLine: (line, child) => {
          if (!line.includes('"ready"')) return;
          release = limitTasks(child.pid!, taskCount(child.pid!) + spare);
          child.stdin!.write('go\n');
        },
      }).finally(() => release());
      expect(r.signal, r.stderr).toBeNull();
      expect(r.code, r.stderr).toBe(0);
      // 8 threads asked for each time: the first device gets the 3 the limit leaves, the next ones none.
      expect(r.report).toEqual({ opened: [spare, 'E_BACKEND', 'E_BACKEND', 'E_BACKEND'], values: [128], reopened: 2 });
    },
    60_000,
  );

  it('reading back with memory exhausted answers E_OOM; so does an op whose memory runs out while it runs, and what is computed from it; the device still works', async () => {
    // Less than any of the three reads needs (256, 256 and 64 MiB), and than the 32 MiB output plus
    // the 64 MiB staging of the run-time failure; the rest is room for V8 to grow its heap after the
    // limit applies (48 MiB once left too little: V8 aborted the child, "NewSpace::EnsureCurrentCapacity").
    const slack = 60 * 2 ** 20;
    const r = await runProbe('limits-child.cjs', ['memory'], {
      prefix: ['prlimit', `--as=${4 * 2 ** 30}`],
      onLine: (line, child) => {
        const m = /"vmSize":(\d+)/.exec(line);
        if (!m) return;
        const limit = Number(m[1]) + slack;
        const set = require('node:child_process').spawnSync('prlimit', ['--pid', String(child.pid), `--as=${limit}`]);
        if (set.status !== 0) throw new Error(`prlimit failed: ${set.stderr}`);
        child.stdin!.write('go\n');
      },
    });
    expect(r.signal, r.stderr).toBeNull();
    expect(r.code, r.stderr).toBe(0);
    expect(r.report).toEqual({
      reads: { data: 'E_OOM', toFloat32: 'E_OOM', codes: 'E_OOM' },
      runtime: { op: 'E_OOM', downstream: 'E_OOM' },
      small: [11],
    });
  }, 60_000);

  it('100 devices opened in one turn and closed release their threads at once', async () => {
    const before = Number(threadsNow());
    const devices = await Promise.all(Array.from({ length: 100 }, () => open({ backend: 'cpu', threads: 2 })));
    expect(Number(threadsNow())).toBeGreaterThanOrEqual(before + 200);
    await Promise.all(devices.map((d) => d.close()));
    expect(Number(threadsNow())).toBeLessThanOrEqual(before);
  });
});
