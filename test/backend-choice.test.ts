// open()'s backend choice, made in C++ (native/core/backend_open.cc + tiers.cc), as seen from a
// build without Metal: what dev.info says, what the environment overrides force, and the
// thread-safe completion path (native/addon/js_completion.cc) that metal ops settle through.
import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { open, TensorOpsError } from '../lib/index';
import { loadBinding, packageRoot } from '../lib/native';

const metalBuild = process.platform === 'darwin';
const platform = `${process.platform}-${process.arch}`;

interface Internal {
  completeOnThread(error: string | null): Promise<string>;
  dropCompletion(): Promise<void>;
}
const internal = (loadBinding() as unknown as { _internal: Internal })._internal;

async function openError(options: Parameters<typeof open>[0]): Promise<TensorOpsError> {
  try {
    await open(options);
  } catch (e) {
    expect(e).toBeInstanceOf(TensorOpsError);
    return e as TensorOpsError;
  }
  throw new Error('open() did not fail');
}

const saved = { backend: process.env.METAL_TENSOROPS_BACKEND, tier: process.env.METAL_TENSOROPS_TIER };
afterEach(() => {
  for (const [key, value] of [['METAL_TENSOROPS_BACKEND', saved.backend], ['METAL_TENSOROPS_TIER', saved.tier]] as const) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
});

describe.skipIf(metalBuild)('backend choice in a build without Metal', () => {
  it('auto opens cpu and says in fallbackReason that Metal needs macOS, naming this platform', async () => {
    delete process.env.METAL_TENSOROPS_BACKEND;
    delete process.env.METAL_TENSOROPS_TIER;
    const dev = await open();
    expect(dev.info).toMatchObject({ backend: 'cpu', tier: 'cpu', neuralAccelerators: false, arch: process.arch });
    expect(dev.info.fallbackReason).toBe(`Metal is only available on macOS on Apple silicon; this is ${platform}`);
    expect(dev.info.gpuFamily).toBeUndefined();
    expect(dev.info.unifiedMemory).toBeUndefined();
  });

  it('METAL_TENSOROPS_BACKEND=metal overrides options.backend and fails with E_BACKEND saying why', async () => {
    process.env.METAL_TENSOROPS_BACKEND = 'metal';
    const e = await openError({ backend: 'cpu' });
    expect(e.code).toBe('E_BACKEND');
    expect(e.message).toBe(
      `backend 'metal' was asked for but is not available: Metal is only available on macOS on Apple silicon; this is ${platform}`,
    );
  });

  it('METAL_TENSOROPS_BACKEND=cpu overrides options.backend: cpu, and nothing fell back', async () => {
    process.env.METAL_TENSOROPS_BACKEND = 'cpu';
    const dev = await open({ backend: 'metal' });
    expect(dev.info.backend).toBe('cpu');
    expect(dev.info.fallbackReason).toBeUndefined();
  });

  it('METAL_TENSOROPS_TIER forcing a metal tier fails with E_BACKEND naming the tier', async () => {
    for (const tier of ['simdgroup', 'tensorops', 'tensorops-mx']) {
      process.env.METAL_TENSOROPS_TIER = tier;
      const e = await openError({});
      expect(e.code).toBe('E_BACKEND');
      expect(e.message).toBe(`METAL_TENSOROPS_TIER=${tier} cannot run here: Metal is only available on macOS on Apple silicon; this is ${platform}`);
    }
  });

  it('METAL_TENSOROPS_TIER=cpu opens cpu without a fallbackReason', async () => {
    process.env.METAL_TENSOROPS_TIER = 'cpu';
    const dev = await open();
    expect(dev.info).toMatchObject({ backend: 'cpu', tier: 'cpu' });
    expect(dev.info.fallbackReason).toBeUndefined();
  });

  it('bad or contradictory environment values are E_ARG naming the variable and the value', async () => {
    process.env.METAL_TENSOROPS_TIER = 'fastest';
    let e = await openError({});
    expect(e.code).toBe('E_ARG');
    expect(e.message).toContain("METAL_TENSOROPS_TIER must be 'auto', 'tensorops-mx', 'tensorops', 'simdgroup' or 'cpu'; got 'fastest'");
    process.env.METAL_TENSOROPS_TIER = 'simdgroup';
    e = await openError({ backend: 'cpu' });
    expect(e.code).toBe('E_ARG');
    expect(e.message).toBe("METAL_TENSOROPS_TIER=simdgroup contradicts backend 'cpu'");
    delete process.env.METAL_TENSOROPS_TIER;
    process.env.METAL_TENSOROPS_BACKEND = 'gpu';
    e = await openError({});
    expect(e.code).toBe('E_ARG');
    expect(e.message).toBe("METAL_TENSOROPS_BACKEND must be 'auto', 'cpu' or 'metal'; got 'gpu'");
  });
});

describe('completion from another thread (the metal ops\' path)', () => {
  it('resolves on the JS thread, once, when a foreign thread completes', async () => {
    await expect(internal.completeOnThread(null)).resolves.toBe('resolved on the JS thread');
  });

  it('a failed status rejects with its code and message, and the path keeps working after', async () => {
    const err = await internal.completeOnThread('GPU timeout (simulated)').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as { code: string }).code).toBe('E_BACKEND');
    expect((err as Error).message).toBe('GPU timeout (simulated)');
    const many = await Promise.all(Array.from({ length: 50 }, (_, i) => internal.completeOnThread(i % 2 ? 'odd' : null).catch(() => 'rejected')));
    expect(many.filter((x) => x === 'rejected')).toHaveLength(25);
  });

  it('a completion dropped uncalled does not keep the process alive', () => {
    const script = `const b = require('node-gyp-build')(${JSON.stringify(packageRoot)});
      b._internal.dropCompletion(); console.log('exited');`;
    const out = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20000 });
    expect(out.trim()).toBe('exited');
  });
});
