// What the emulator's user-kernel test files share: whether they run here (the compiler the
// emulator builds with), a cpu device whose kernels build afresh in a temporary cache, and inputs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, type Device, type Tensor } from '../../lib/index';
import { canRun, fullSuite } from './suite';
import { expect } from 'vitest';

export const compiler = process.env.METAL_TENSOROPS_EMULATOR_CXX || 'clang++-19';
export const haveCompiler = canRun(compiler);
// As the MSL suite: the full suite on Linux (CI installs clang-19) fails without the compiler.
export const skipEmulator = !haveCompiler && (!fullSuite || process.platform !== 'linux');
/** The suffix of a describe() title: why it is skipped, when it is. */
export const skipReason = haveCompiler ? '' : ` (skipped: ${compiler} not found)`;

/** A cpu device with METAL_TENSOROPS_CACHE_DIR a fresh folder (the build is part of what is tested); close() undoes both. */
export async function emulatorDevice(): Promise<{ dev: Device; close: () => Promise<void> }> {
  if (!haveCompiler) throw new Error(`${compiler} not found: install clang-19 (apt-get install -y clang-19)`);
  const saved = process.env.METAL_TENSOROPS_CACHE_DIR;
  const cache = mkdtempSync(join(tmpdir(), 'mto-kernels-'));
  process.env.METAL_TENSOROPS_CACHE_DIR = cache;
  const dev = await open({ backend: 'cpu', threads: 2 });
  return {
    dev,
    close: async () => {
      await dev.close();
      if (saved === undefined) delete process.env.METAL_TENSOROPS_CACHE_DIR;
      else process.env.METAL_TENSOROPS_CACHE_DIR = saved;
      rmSync(cache, { recursive: true, force: true });
    },
  };
}

/** n values in [-2, 2) from a seed (an LCG: the same on every machine). */
export function random(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32) * 4 - 2;
  });
}

/** The error a read of `t` rejects with (the run failed in the stream). */
export async function failure(t: Tensor): Promise<{ code: string; message: string }> {
  const err = await t.toFloat32().then(() => null, (e: { code: string; message: string }) => e);
  expect(err, 'the read should reject').not.toBeNull();
  return err!;
}

/** A rejected promise as 'CODE: message' ('resolved' if it resolved). */
export const rejection = (p: Promise<unknown>) => p.then(() => 'resolved', (e: { code: string; message: string }) => `${e.code}: ${e.message}`);
