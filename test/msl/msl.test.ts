// The MSL kernels of shaders/, run on the CPU by the harness of test/msl (README.md there):
// every case of the driver must pass, and every planted fault must make the harness report the
// failure it plants. Builds test/msl/build/msl-driver first (incremental; a fresh build takes
// about a minute and a half on two cores).
import { execFileSync, spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { build, driverPath, faults } from './build.mjs';

interface CaseResult {
  name: string; op: string; kernel?: string; ok: boolean;
  error?: { kind: string; message: string }; detected?: string;
  worst_ratio: number; mismatches: number;
}
interface Report { variant: string; seconds: number; cases: CaseResult[]; passed: number; failed: number }
interface Fault { name: string; why: string; file: string; filter: string; expect: string }

const compiler = process.env.MSL_CXX || 'clang++-19';
const haveCompiler = (() => {
  try {
    execFileSync(compiler, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
// CI (.ci/run) installs clang-19 on Linux, where a missing compiler is a failure, not a skip.
const skip = !haveCompiler && process.platform !== 'linux';

function runDriver(args: string[]): Report {
  // A kernel stuck in a loop never reaches a rendezvous the harness could check: time out instead.
  const r = spawnSync(driverPath, args, { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 300_000 });
  if (r.error) throw r.error;
  if (r.status !== 0 && r.status !== 1) throw new Error(`msl-driver ${args.join(' ')} exited ${r.status}:\n${r.stderr}`);
  return JSON.parse(r.stdout) as Report;
}

const failures = (cases: CaseResult[]) =>
  cases.filter((c) => !c.ok).map((c) => `${c.name}: ${c.error?.kind}: ${c.error?.message}`);

describe.skipIf(skip)('MSL kernels on the CPU harness', () => {
  let report: Report;
  beforeAll(async () => {
    if (!haveCompiler) throw new Error(`${compiler} not found: install clang-19 (apt-get install -y clang-19) or set MSL_CXX`);
    await build();
    report = runDriver([]);
  }, 600_000);

  const group = (prefix: string) => report.cases.filter((c) => c.name.startsWith(prefix));

  it('the harness itself: shim features give known answers and each misuse is reported', () => {
    const cases = group('harness/');
    expect(cases.length).toBeGreaterThanOrEqual(14);
    expect(failures(cases)).toEqual([]);
    // A misuse case passes only when the harness reported exactly its kind.
    for (const c of cases.filter((x) => x.name.startsWith('harness/catches/'))) expect(c.detected, c.name).toBeTruthy();
  });

  it('shader-side format traits match the cpu format table', () => {
    expect(failures(group('table/'))).toEqual([]);
  });

  it('dispatch plans refuse what no kernel handles, with the right error code', () => {
    expect(group('plan/').length).toBeGreaterThan(0);
    expect(failures(group('plan/'))).toEqual([]);
  });

  it('quantize: every MX format from float32, float16 and bfloat16 is bit-identical to the cpu quantizer', () => {
    const cases = group('quantize/');
    expect(cases.length).toBe(8 * 3 * 3);
    expect(failures(cases)).toEqual([]);
  });

  it('linear: every format, decode and tiled kernels, edge tiles in M, N and K, within 1e-4 * (1 + |ref|)', () => {
    const cases = group('linear/');
    expect(failures(cases)).toEqual([]);
    // Coverage the suite promises: every format, M on both sides of the decode/tiled switch.
    for (const format of ['mxfp8', 'mxfp8_e5m2', 'mxfp6_e3m2', 'mxfp6_e2m3', 'mxfp4', 'mxint8', 'mxint4', 'mxint2',
      'affine4.g32', 'affine4.g64', 'affine4.g128', 'affine8.g32', 'affine8.g64', 'affine8.g128']) {
      for (const M of [1, 3, 8, 9, 33]) {
        const c = cases.find((x) => x.name.startsWith(`linear/${format}/M${M}/`));
        expect(c, `linear/${format}/M${M}`).toBeDefined();
        expect(c!.kernel).toMatch(M <= 8 ? /^qlinear_decode_/ : /^qlinear_gemm_/);
      }
    }
    expect(Math.max(...cases.map((c) => c.worst_ratio))).toBeLessThanOrEqual(1);
  });

  for (const fault of faults as Fault[]) {
    it(`planted fault '${fault.name}' is caught (${fault.expect}): ${fault.why}`, () => {
      const r = runDriver(['--variant', fault.name, '--filter', fault.filter]);
      expect(r.cases.length, `no case matches '${fault.filter}'`).toBeGreaterThan(0);
      for (const c of r.cases) {
        expect(c.ok, `${c.name} passed with the fault planted`).toBe(false);
        expect(c.error?.kind, `${c.name}: ${c.error?.message}`).toBe(fault.expect);
      }
      // The same cases pass without the fault, so the failure is the fault's.
      const clean = report.cases.filter((c) => r.cases.some((f) => f.name === c.name));
      expect(clean.length).toBe(r.cases.length);
      expect(failures(clean)).toEqual([]);
    });
  }
});
