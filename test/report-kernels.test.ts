// `npm run report:kernels` (scripts/report-kernels.mjs): the kernel cost report runs, and the
// committed docs/kernel-costs.{md,json} are what it makes from the current shaders, so a shader
// edit that changes a hot loop's cost shows up in review. Needs clang++-19 and Debian's arm64
// cross headers (.ci/run installs them): skipped in the quick suite without them, a failure in
// the full one. A committed report made by another clang than this machine's is not compared
// (skipped, with the reason): instruction counts belong to the compiler that made them.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { skipUnlessFull } from './helpers/suite';

const root = resolve(__dirname, '..');
const missing = spawnSync('clang++-19', ['--version']).status !== 0 ? 'clang++-19'
  : !existsSync('/usr/aarch64-linux-gnu/include/stdlib.h') ? "Debian's arm64 cross headers" : undefined;

describe.skipIf(process.platform === 'darwin' || skipUnlessFull(missing))(`npm run report:kernels${missing ? ` (needs ${missing})` : ''}`, () => {
  it('the committed kernel cost report is current', (ctx) => {
    const r = spawnSync(process.execPath, [join(root, 'scripts', 'report-kernels.mjs'), '--check'], { cwd: root, encoding: 'utf8' });
    const output = `${r.stdout}${r.stderr}`;
    if (r.status === 2 && /was made by/.test(output)) ctx.skip();
    expect(r.status, output).toBe(0);
  }, 300_000);

  it('reports every hot kernel with MLX beside it', () => {
    const report = JSON.parse(readFileSync(join(root, 'docs', 'kernel-costs.json'), 'utf8'));
    const names = report.kernels.map((k: { kernel: string }) => k.kernel);
    for (const k of ['qlinear_decode_mxfp4_f16', 'qlinear_decode_mxfp8_f16', 'qlinear_decode_affine4_f16', 'attention_decode_f16_dense_d128']) {
      expect(names).toContain(k);
    }
    for (const k of report.kernels) {
      expect(k.loop.insns, k.kernel).toBeGreaterThan(0);
      expect(report.mlx.kernels[k.mlx], `${k.kernel}: MLX's ${k.mlx}`).toBeDefined();
      for (const s of k.shapes) expect(s.passes.length, `${k.kernel} ${s.shape}`).toBeGreaterThan(0);
    }
  });

  it("plans the attention decode's key split by the GPU's cores: at least MLX's first-pass threadgroups on every profile", () => {
    const report = JSON.parse(readFileSync(join(root, 'docs', 'kernel-costs.json'), 'utf8'));
    const att = report.kernels.find((k: { kernel: string }) => k.kernel === 'attention_decode_f16_dense_d128');
    for (const s of att.shapes) {
      for (const c of report.profiles) {
        const mlx = (report.mlx.parallelism[s.shape] as { kernel: string; threadgroups: Record<string, number | null> }[])
          .filter((p) => p.kernel !== 'sdpa_vector_2pass_2').map((p) => p.threadgroups[String(c)] ?? 0);
        expect(s.passes[0].threadgroups[String(c)], `${s.shape} on ${c} cores`).toBeGreaterThanOrEqual(Math.max(...mlx));
      }
    }
  });
});
