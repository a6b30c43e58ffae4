// What a command of the `metal-tensorops` CLI is (lib/cli/commands/<name>.ts, one per file, listed
// in cli.ts), and the option checks they share.
import type { ParseArgsConfig } from 'node:util';

export interface Command {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** The command's own usage: synopsis and options, printed by `help <name>` and on a usage error. */
  usage: string;
  /** node:util parseArgs options (strict: anything else is a usage error). */
  options: NonNullable<ParseArgsConfig['options']>;
  /** Positional arguments accepted (none unless set). */
  positionals?: boolean;
  /** The arguments go to another program unparsed (bench: bench/run.mjs checks its own). */
  passThrough?: boolean;
  /** Runs the command; resolves to the exit code. */
  run(args: { values: Record<string, unknown>; positionals: string[] }): Promise<number>;
}

/** A mistake on the command line: the CLI prints the message and the command's usage, exit code 2. */
export class UsageError extends Error {}

export const BACKENDS = ['auto', 'metal', 'cpu'] as const;
export type BackendChoice = (typeof BACKENDS)[number];

/** --backend's value, checked. */
export function backendOption(value: unknown): BackendChoice {
  if (value === undefined) return 'auto';
  if (typeof value === 'string' && (BACKENDS as readonly string[]).includes(value)) return value as BackendChoice;
  throw new UsageError(`--backend must be auto, metal or cpu; got '${String(value)}'`);
}

/** --threads's value, checked: an integer from 1 to 1024, or undefined (one per hardware thread). */
export function threadsOption(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (typeof value !== 'string' || !/^\d+$/.test(value) || n < 1 || n > 1024) {
    throw new UsageError(`--threads must be an integer from 1 to 1024; got '${String(value)}'`);
  }
  return n;
}

/** The options every device command takes. */
export const DEVICE_OPTIONS = {
  backend: { type: 'string' },
  threads: { type: 'string' },
} as const;

export const DEVICE_USAGE = `  --backend auto|metal|cpu   the backend to open (default auto: metal where usable, else cpu;
                             METAL_TENSOROPS_BACKEND overrides it, as it does for open())
  --threads N                cpu backend threads (default: one per hardware thread)`;
