// The version of the installed package, from its package.json (found beside binding.gyp, which
// ships with it), read at run time so that dist/ never holds a stale copy.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../native';

export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;
}
