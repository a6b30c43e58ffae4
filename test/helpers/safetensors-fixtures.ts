// The safetensors suites' fixtures: a cpu device and a scratch folder for the file, model folders
// written there, and the expectations both suites use.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import {
  QuantizedTensor, TensorOpsError, loadSafetensors, open, writeSafetensors, type Device, type SafetensorsWriteTensor, type Tensor,
} from '../../lib/index';
import { rng } from './compare';

/** Registers the file's device and scratch folder; call once at the top of a test file. */
export function safetensorsFixtures() {
  let dev: Device;
  let dir: string;
  let fileNo = 0;
  beforeAll(async () => {
    dev = await open({ backend: 'cpu', threads: 1 });
    dir = mkdtempSync(join(tmpdir(), 'st-test-'));
  });
  afterAll(async () => {
    await dev.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const newDir = (): string => {
    const d = join(dir, `m${fileNo++}`);
    mkdirSync(d);
    return d;
  };
  return {
    dev: () => dev,
    newDir,
    write(tensors: SafetensorsWriteTensor[], config?: unknown, metadata?: Record<string, string>): string {
      const d = newDir();
      writeSafetensors(join(d, 'model.safetensors'), tensors, metadata);
      if (config !== undefined) writeFileSync(join(d, 'config.json'), JSON.stringify(config));
      return d;
    },
    /** E_FORMAT matching `pattern`, within 2 s (no huge allocation or read first). */
    async expectFormatError(path: string, pattern: RegExp | string, options?: Parameters<typeof loadSafetensors>[2]): Promise<void> {
      const start = Date.now();
      const err = await loadSafetensors(dev, path, options).then(() => undefined, (e: unknown) => e);
      expect(err, `no error for ${pattern}`).toBeInstanceOf(TensorOpsError);
      expect((err as TensorOpsError).code, (err as Error).message).toBe('E_FORMAT');
      expect((err as Error).message).toMatch(pattern);
      expect(Date.now() - start).toBeLessThan(2000);
    },
  };
}

export function uniform(n: number, seed: number, lo = -1, hi = 1): Float64Array {
  const r = rng(seed), out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = lo + (hi - lo) * r();
  return out;
}

export function disposeAll(m: { tensors: Map<string, Tensor | QuantizedTensor> }): void {
  for (const t of m.tensors.values()) if (!t.disposed) t.dispose();
}
