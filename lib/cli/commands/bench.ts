// `metal-tensorops bench [...]`: the benchmark, bench/run.mjs (it ships in the package; its peers,
// onnxruntime-node, protobufjs and koffi, are installed on demand: bench/peers.mjs), with its
// arguments passed through unparsed. Its result (a table, or JSON with --json) goes to stdout as
// it comes; its progress lines ("[bench] ...", on stderr) become one status line redrawn in place
// on a terminal, with the notes that matter kept.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { packageRoot } from '../../native';
import type { Command } from '../command';
import { Progress } from '../progress';
import { BENCH_MODEL_USAGE, benchModel } from '../bench-model';

/** Progress lines worth keeping on screen: what is missing, what failed. */
const LASTING = /missing|not installed|failed|error|wrote /i;

export const bench: Command = {
  name: 'bench',
  summary: 'time the cpu backend against its peers (bench/run.mjs), or a model: bench model.gguf (or a Hugging Face folder)',
  usage: `usage: metal-tensorops bench [--json] [--filter TEXT] [--threads N] [--quick | --smoke]
                             [--no-peer | --peer] [--out FILE] [--ggml DIR]
  runs bench/run.mjs (its options: metal-tensorops bench --help); the peers it compares with
  install with \`npm run bench:peers\` in a clone (without them it times our side alone)
${BENCH_MODEL_USAGE}`,
  options: {},
  passThrough: true,
  async run({ positionals }) {
    // A model: a GGUF file, or a Hugging Face folder (its config.json); anything else is the bench's own arguments.
    const first = positionals[0];
    if (first !== undefined && (first.endsWith('.gguf') || existsSync(join(first, 'config.json')))) return benchModel(positionals);
    const script = join(packageRoot, 'bench', 'run.mjs');
    if (!existsSync(script)) {
      console.error(`metal-tensorops bench: the benchmark is not in this installation (no ${script}); ` +
        'it ships in the npm package, or run it from a clone: npm run bench');
      return 1;
    }
    const progress = new Progress(process.stderr);
    const child = spawn(process.execPath, [script, ...positionals], { stdio: ['inherit', 'inherit', 'pipe'] });
    const started = Date.now();
    createInterface({ input: child.stderr }).on('line', (line) => {
      if (progress.tty && line.startsWith('[bench] ') && !LASTING.test(line)) {
        progress.status(`${line} (${Math.round((Date.now() - started) / 1000)} s)`);
      } else {
        progress.line(line);
      }
    });
    // Ctrl-C reaches the bench too (same process group): wait for it to end rather than leave it.
    const ignore = () => {};
    process.on('SIGINT', ignore);
    const code = await new Promise<number>((resolve) => child.on('close', (c, signal) => resolve(c ?? (signal ? 130 : 1))));
    process.off('SIGINT', ignore);
    progress.clear();
    return code;
  },
};
