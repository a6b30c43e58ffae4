// Runs a reliability probe (a .cjs script of this folder) in a child process, where a crash or an
// abort ends only the child: the parent sees its exit code or signal and what it printed.
import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';

export const dist = join(resolve(__dirname, '..', '..'), 'dist', 'cjs', 'index.js');  // built by pretest

/** Every reliability check runs more seeds and rounds in `npm run test:all`. */
export { fullSuite as full } from '../helpers/suite';

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The last line of stdout, parsed as JSON (the probes report there). */
  report: Record<string, unknown> | undefined;
}

export interface ChildOptions {
  /** Command words before node (prlimit, setpriv, ...). */
  prefix?: string[];
  timeoutMs?: number;
  /** Called with the child as soon as it starts (to signal it, limit it, write to it). */
  onSpawn?: (child: ChildProcess) => void;
  /** Called with each line of stdout as it arrives. */
  onLine?: (line: string, child: ChildProcess) => void;
}

export function runProbe(script: string, args: string[], options: ChildOptions = {}): Promise<ChildResult> {
  const words = [...(options.prefix ?? []), process.execPath, join(__dirname, script), dist, ...args];
  return new Promise((resolvePromise, reject) => {
    const child = spawn(words[0], words.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '', stderr = '', partial = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      partial += chunk;
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) options.onLine?.(line, child);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const last = stdout.trim().split('\n').pop() ?? '';
      let report: Record<string, unknown> | undefined;
      try { report = JSON.parse(last) as Record<string, unknown>; } catch { report = undefined; }
      resolvePromise({ code, signal, stdout, stderr, report });
    });
    options.onSpawn?.(child);
  });
}
