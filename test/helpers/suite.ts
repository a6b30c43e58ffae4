// Which suite is running. `npm test` is the quick suite (minutes): a test whose toolchain is
// missing on this machine (clang-19, qemu, wine, the bench peers) is skipped there, with the reason
// in its name. `npm run test:all` (vitest --mode full, what CI runs) is the whole suite: more
// seeds, rounds and planted faults, and a missing toolchain is a failure, never a skip.
import { execFileSync } from 'node:child_process';

export const fullSuite = process.env.MTO_TEST_FULL === '1';

/** Skip (quick suite only) when `missing` names something this machine lacks. */
export function skipUnlessFull(missing: string | undefined): boolean {
  return missing !== undefined && !fullSuite;
}

/** Whether `command --version` runs here (a compiler a suite needs: clang++-19, ...). */
export function canRun(command: string): boolean {
  try {
    execFileSync(command, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
