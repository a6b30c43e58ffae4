#!/usr/bin/env node
// `metal-tensorops`: what this machine gets (device, backend, tier, why), as text or JSON.
import { open } from './index';

const USAGE = `usage: metal-tensorops [info] [--json] [--backend auto|metal|cpu]
  info       print the device open() picks on this machine (default)
  --json     print it as JSON`;

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return 0;
  }
  const backendAt = argv.indexOf('--backend');
  const backend = backendAt >= 0 ? argv[backendAt + 1] : undefined;
  const dev = await open(backend ? { backend: backend as 'auto' } : {});
  if (argv.includes('--json')) {
    console.log(JSON.stringify(dev.info, null, 2));
  } else {
    for (const [key, value] of Object.entries(dev.info)) console.log(`${key.padEnd(26)} ${value}`);
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? `${err.name}: ${err.message}` : String(err));
    process.exit(1);
  },
);
