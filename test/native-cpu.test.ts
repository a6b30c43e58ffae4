// The cpu backend's kernels built for arm64 and run under qemu-user: the NEON paths (float16
// conversion, dequantization, GEMM, fused decode and attention kernels) that no x86-64 run of the
// addon reaches; and built for 64-bit Windows by mingw-w64 and run under wine, with the code paths
// MSVC compiles for the win32-x64 prebuild (MTO_PORTABLE_ONLY: the plain-struct vectors, no ISA dispatch).
// test/native/cpu_kernels_check.cc checks linear (every format, float32 and int8 activations), matmul and attention against
// float64 references, and dumps quantize, dequantize (of quantized data and of random codes under
// every kind of scale) and the float16/bfloat16 conversions, which must be byte-identical to the
// x86-64 build (the addon's own results, oracle-tested by formats.test.ts and isa.test.ts).
// The win32-x64 prebuild's own paths (clang-cl: the AVX2 / AVX-512 kernels chosen by our CPUID
// detection) are built by clang for mingw-w64 and run under wine at every ISA cap.
// Every addon source is also compiled (not run) for Windows by clang 19, native/addon included, and
// the thread pool's checks run once more built with ThreadSanitizer.
// Needs g++-aarch64-linux-gnu, qemu-user, g++-mingw-w64-x86-64-posix, wine64 and clang-19
// (.ci/run installs them); a missing toolchain fails this suite rather than skipping it. Elsewhere
// than Linux x86-64 the suite is skipped (counted).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = resolve(__dirname, '..');
const scratch = mkdtempSync(join(tmpdir(), 'mto-native-cpu-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const runners: Record<string, string[]> = {
  native: [],
  arm64: ['qemu-aarch64', '-L', '/usr/aarch64-linux-gnu'],
  win64: ['/usr/lib/wine/wine64'],
  'win64-kernels': ['/usr/lib/wine/wine64'],
};
// wine's configuration: kept under build/ (creating it takes ~20 s); no console noise, and no
// offer to install Mono or Gecko (a console program needs neither).
const winePrefix = join(root, 'build/native-check/win64/wineprefix');
const wineEnv = { WINEPREFIX: winePrefix, WINEDEBUG: '-all', WINEDLLOVERRIDES: 'mscoree,mshtml=' };
// The program's view of a file of ours: wine maps drive Z: to the Linux root.
const isWin = (target: string) => target.startsWith('win64');
const hostPath = (target: string, file: string) => (isWin(target) ? `Z:${file}` : file);
const programs: Record<string, string> = {};

function build(target: string): string {
  const r = spawnSync(process.execPath, [join(root, 'test/native/build.mjs'), target], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) {
    throw new Error(`building the ${target} kernel check failed (needs g++-aarch64-linux-gnu, qemu-user, ` +
      `g++-mingw-w64-x86-64-posix, wine64 and clang-19: see .ci/run):\n${r.stderr}`);
  }
  return r.stdout.trim();
}

function runCheck(target: string, args: string[], env: Record<string, string> = {}) {
  const [cmd, ...pre] = [...runners[target], programs[target]];
  const targetEnv = isWin(target) ? wineEnv : {};
  const r = spawnSync(cmd, [...pre, ...args], { encoding: 'utf8', env: { ...process.env, ...targetEnv, ...env } });
  if (r.error) throw r.error;
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

describe.skipIf(process.platform !== 'linux' || process.arch !== 'x64')('cpu kernels on arm64 (qemu), win64 (wine) and x86-64', () => {
  beforeAll(() => {
    programs.native = build('native');
    programs.arm64 = build('arm64');
    programs.win64 = build('win64');
    programs['win64-kernels'] = build('win64-kernels');
  }, 900_000);

  it('arm64 (NEON): linear in every format (NEON fused decode kernels), matmul and attention match float64 references', () => {
    const { status, output } = runCheck('arm64', ['check']);
    expect(output).toMatch(/^isa: core=neon gemm=baseline dot=neon$/m);
    expect(output).toMatch(/^q8: neon-q8$/m);
    expect(output.match(/^ok /gm)?.length ?? 0, output).toBeGreaterThan(60);
    expect(output, output).not.toMatch(/^FAIL /m);
    expect(status, output).toBe(0);
  });

  it('x86-64 runs the same checks without Node, on the widest ISA here; CPUID detection agrees with __builtin_cpu_supports', () => {
    const { status, output } = runCheck('native', ['check']);
    expect(output).toMatch(/^isa: core=\S+ gemm=\S+ dot=\S+$/m);
    expect(output).toMatch(/^ok cpu features: /m);
    expect(status, output).toBe(0);
  });

  // What each cap selects on this CPU, from the native program's own report (a CPU without
  // AVX-512 selects less, on both builds alike).
  it.each(['(unset)', 'baseline', 'avx2', 'avx512'])('win64 as the clang-cl prebuild runs it (AVX2 / AVX-512 kernels, Windows x64 ABI, under wine), METAL_TENSOROPS_CPU_ISA %s: same paths as Linux, every check passes on both', (label) => {
    const cap = label === '(unset)' ? '' : label;
    const env = { METAL_TENSOROPS_CPU_ISA: cap };
    const isaLine = (out: string) => out.match(/^isa: .*$/m)?.[0];
    const native = runCheck('native', ['check'], env);
    const win = runCheck('win64-kernels', ['check'], env);
    expect(native.status, native.output).toBe(0);
    expect(isaLine(win.output), win.output).toBe(isaLine(native.output));
    // Every kernel table follows the cap: the lower of the cap and what the CPU has.
    const levels = ['baseline', 'avx2', 'avx512', 'avx512vbmi'];
    const cpu = native.output.match(/^cpu: detected=(\S+) vnni=([01])$/m);
    const detected = levels.indexOf(cpu?.[1] ?? '');
    expect(detected, native.output).toBeGreaterThanOrEqual(0);
    const level = levels[Math.min(detected, cap === '' ? 3 : levels.indexOf(cap))];
    const gemm = level === 'avx512vbmi' ? 'avx512' : level;
    expect(isaLine(native.output)).toBe(`isa: core=${level} gemm=${gemm} dot=${level === 'baseline' ? 'none' : level}`);
    // linear's int8 activations: the AVX2 integer kernels from AVX2 up, the AVX-512 VNNI ones where
    // the level allows AVX-512 and the CPU has VNNI, on both builds.
    const vnni = cpu?.[2] === '1' && levels.indexOf(level) >= 2;
    const q8 = `q8: ${level === 'baseline' ? 'none' : vnni ? 'avx512-vnni-q8' : 'avx2-q8'}`;
    expect(native.output.match(/^q8: .*$/m)?.[0]).toBe(q8);
    expect(win.output.match(/^q8: .*$/m)?.[0]).toBe(q8);
    expect(win.output).toMatch(/^ok cpu features: /m);
    expect(win.output.match(/^ok /gm)?.length ?? 0, win.output).toBeGreaterThan(60);
    expect(win.output, win.output).not.toMatch(/^FAIL /m);
    expect(win.status, win.output).toBe(0);
  });

  it('win64 (the code paths MSVC\'s own compiler builds, under wine): linear in every format, matmul and attention match float64 references', () => {
    const { status, output } = runCheck('win64', ['check']);
    expect(output).toMatch(/^isa: core=baseline gemm=baseline dot=none$/m);
    expect(output.match(/^ok /gm)?.length ?? 0, output).toBeGreaterThan(60);
    expect(output, output).not.toMatch(/^FAIL /m);
    expect(status, output).toBe(0);
  });

  it('the thread pool under ThreadSanitizer: no data race, no job used after its parallel_for returned', () => {
    const r = spawnSync(build('tsan'), [], { encoding: 'utf8' });
    const output = `${r.stdout}${r.stderr}`;
    expect(output, output).not.toMatch(/ThreadSanitizer/);
    expect(output.match(/^ok pool: /gm)?.length ?? 0, output).toBe(7);
    expect(r.status, output).toBe(0);
  }, 300_000);

  it('every addon source (native/addon with node-addon-api too) compiles for Windows with clang 19, warnings as errors', () => {
    expect(build('win64-clang')).toMatch(/win64-clang$/);
  }, 600_000);

  it.each(['arm64', 'win64', 'win64-kernels'])('%s quantize, dequantize (every format) and float16/bfloat16 conversions are byte-identical to x86-64', (other) => {
    const files = ['native', other].map((t) => {
      const file = join(scratch, `${t}.bin`);
      const { status, output } = runCheck(t, ['dump', hostPath(t, file)]);
      expect(status, output).toBe(0);
      return readFileSync(file);
    });
    expect(files[0].length).toBeGreaterThan(1_000_000);
    const first = files[0].findIndex((b, i) => b !== files[1][i]);
    expect(first, `first differing byte at ${first}`).toBe(-1);
    expect(files[1].length).toBe(files[0].length);
  });
});
