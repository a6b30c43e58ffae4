#!/usr/bin/env node
// `metal-tensorops`: the command line (package.json "bin"). Parses the command and its options
// (node:util parseArgs, strict) and dispatches to lib/cli/commands/<name>.ts, one command per file.
// Exit codes: 0 success, 1 a failure while running (or a failed self-test), 2 a usage error.
import { parseArgs } from 'node:util';
import { UsageError, type Command } from './command';
import { bench } from './commands/bench';
import { info } from './commands/info';
import { logits } from './commands/logits';
import { run } from './commands/run';
import { selftest } from './commands/selftest';
import { packageVersion } from './package-version';

const COMMANDS: readonly Command[] = [info, selftest, bench, run, logits];
const DEFAULT = info;

const USAGE = `usage: metal-tensorops [command] [options]

commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(14)}  ${c.summary}`).join('\n')}
  help [command]  this text, or a command's options

  --version, -v     print the package version
  --help, -h        print this text (after a command: its options)`;

/** Prints a usage error: what was wrong, then the usage that says what is accepted. */
function usageError(message: string, usage: string): number {
  console.error(`metal-tensorops: ${message}\n\n${usage}`);
  return 2;
}

async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === '--version' || first === '-v') {
    if (rest.length) return usageError(`${first} takes no arguments; got '${rest[0]}'`, USAGE);
    console.log(packageVersion());
    return 0;
  }
  if (first === '--help' || first === '-h') {
    console.log(USAGE);
    return 0;
  }
  if (first === 'help') {
    const topic = rest[0] === undefined ? undefined : COMMANDS.find((c) => c.name === rest[0]);
    if (rest.length > 1 || (rest[0] !== undefined && !topic)) {
      return usageError(`help takes one command name (${COMMANDS.map((c) => c.name).join(', ')}); got '${rest.join(' ')}'`, USAGE);
    }
    console.log(topic ? topic.usage : USAGE);
    return 0;
  }
  // No command, or options only: the default command (`metal-tensorops --json` is `info --json`).
  const named = first === undefined || first.startsWith('-') ? undefined : COMMANDS.find((c) => c.name === first);
  if (first !== undefined && !first.startsWith('-') && !named) {
    return usageError(`unknown command '${first}'`, USAGE);
  }
  const command = named ?? DEFAULT;
  const args = named ? rest : argv;
  if (command.passThrough) return command.run({ values: {}, positionals: args });
  if (args.includes('--help') || args.includes('-h')) {
    console.log(command.usage);
    return 0;
  }
  let parsed;
  try {
    parsed = parseArgs({ args, options: command.options, allowPositionals: command.positionals === true, strict: true });
  } catch (err) {
    // parseArgs names the argument ("Unknown option '--foo'", "Option '--backend <value>' argument missing").
    return usageError(`${command.name}: ${(err as Error).message}`, command.usage);
  }
  try {
    return await command.run({ values: parsed.values, positionals: parsed.positionals });
  } catch (err) {
    if (err instanceof UsageError) return usageError(`${command.name}: ${err.message}`, command.usage);
    throw err;
  }
}

// A reader that goes away (`metal-tensorops selftest | head`) ends the output, not with a stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(process.exitCode ?? 0);
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof Error ? `${err.name}: ${err.message}` : String(err));
    process.exitCode = 1;
  },
);
