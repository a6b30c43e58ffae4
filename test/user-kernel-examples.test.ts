// The user-kernel examples as a user runs them (`node examples/...mjs`, the package imported by
// its name, so dist/ must be built: npm run build:ts): each must exit 0 and say that its kernel
// matches the built-in ops it stands for. Where the other user-kernel tests skip (no compiler for
// the emulator), these skip too.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipEmulator, skipReason } from './helpers/user-kernels';

const run = promisify(execFile);
const root = join(__dirname, '..');

describe.skipIf(skipEmulator)(`the user-kernel examples${skipReason}`, () => {
  let cache: string;
  beforeAll(() => {
    if (!existsSync(join(root, 'dist', 'esm', 'index.js'))) throw new Error('dist/ is not built: run npm run build:ts first');
    cache = mkdtempSync(join(tmpdir(), 'mto-examples-'));
  });
  afterAll(() => rmSync(cache, { recursive: true, force: true }));

  const example = async (file: string) => {
    // A fresh kernel cache: the examples build their kernels as a first run does.
    const env = { ...process.env, METAL_TENSOROPS_CACHE_DIR: cache, METAL_TENSOROPS_BACKEND: 'cpu' };
    const r = await run(process.execPath, [join(root, 'examples', file)], { cwd: root, env }).catch((e: { code: number; stdout: string; stderr: string }) => e);
    return { code: 'code' in r ? r.code : 0, stdout: r.stdout, stderr: r.stderr };
  };

  it('examples/user-kernel.mjs: the fused residual + RMSNorm matches add + rmsNorm', async () => {
    const r = await example('user-kernel.mjs');
    expect(r.stdout, r.stderr).toMatch(/^rms_norm_residual on emulator: y\[0\]\[0\.\.3\] = [-\d., ]+; matches add \+ rmsNorm \(largest relative difference [\d.e+-]+, allowed 1e-5\)\n$/);
    expect(r.code, r.stderr).toBe(0);
  });

  it('examples/user-kernel-attention.mjs: attention over an mxfp8 KV cache matches dev.attention', async () => {
    const r = await example('user-kernel-attention.mjs');
    expect(r.stdout, r.stderr).toMatch(/^attention_mxfp8_kv on emulator: o\[0\]\[0\]\[0\]\[0\.\.3\] = [-\d., ]+; matches dev\.attention \(largest difference [\d.e+-]+, allowed [\d.e+-]+: 1e-5 of max \|v\|\)\n$/);
    expect(r.code, r.stderr).toBe(0);
  });

  it('examples/user-kernel-mx.mjs: matmul2d over an mxfp4 scale-plane weight matches dev.linear', async () => {
    const r = await example('user-kernel-mx.mjs');
    expect(r.stdout, r.stderr).toMatch(/^mx_linear_mxfp4 on emulator: y\[0\]\[0\.\.3\] = [-\d., ]+; matches dev\.linear \(largest difference [\d.e+-]+, allowed [\d.e+-]+: 1e-5 of max \|y\|\)\n$/);
    expect(r.code, r.stderr).toBe(0);
  });
});
