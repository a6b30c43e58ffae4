// A pids cgroup (the limit a container runtime or systemd sets on threads) for one child process:
// cgroup v1's pids hierarchy, or a cgroup v2 hierarchy with the pids controller. Needs root.
import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function pidsRoot(): string | undefined {
  const v1 = '/sys/fs/cgroup/pids';
  if (existsSync(join(v1, 'cgroup.procs'))) return v1;
  for (const v2 of ['/sys/fs/cgroup', '/sys/fs/cgroup/unified']) {
    try {
      if (readFileSync(join(v2, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('pids')) return v2;
    } catch {
      // not a cgroup v2 root
    }
  }
  return undefined;
}

/** Why threads cannot be limited here, or undefined when they can. */
export function pidsLimitUnavailable(): string | undefined {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not root (a pids cgroup needs root)';
  const root = pidsRoot();
  if (!root) return 'no pids cgroup controller is mounted';
  const probe = join(root, `metal-tensorops-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
  } catch (err) {
    return `the pids cgroup at ${root} cannot be written (${(err as Error).message})`;
  }
  return undefined;
}

/** Moves `pid` (all its threads) into a new cgroup allowing `max` tasks; returns its remover. */
export function limitTasks(pid: number, max: number): () => void {
  const root = pidsRoot();
  if (!root) throw new Error('no pids cgroup controller');
  const dir = join(root, `metal-tensorops-test-${process.pid}-${pid}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'pids.max'), String(max));
  writeFileSync(join(dir, 'cgroup.procs'), String(pid));
  return () => {
    // The child has exited (or is moved back first if it has not).
    try {
      for (const p of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
        writeFileSync(join(root, 'cgroup.procs'), p);
      }
      rmdirSync(dir);
    } catch {
      // best effort
    }
  };
}

export function taskCount(pid: number): number {
  return readdirSync(`/proc/${pid}/task`).length;
}
