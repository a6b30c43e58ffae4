// The `metal-tensorops` command as users run it: the built bin (dist/cjs/cli/cli.js) in a child
// process. Its answers are checked against package.json, open() in this process, the addon's
// measureRoofline, and, for the self-test's own reference, golden data from ml_dtypes
// (test/oracle) and values worked out by hand.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { open } from '../lib/index';
import { loadBinding } from '../lib/native';
import { decodeElement, elementMax, encodeElement, fromHalfBits, toBfloat16Bits, toHalfBits } from '../lib/cli/reference/elements';
import { affineQuantize, mxQuantize, unpackCodes } from '../lib/cli/reference/quantize';
import { attentionRef, gamma, linearRef } from '../lib/cli/reference/ops';
import type { Element, Format } from '../lib/types';
import { f32, oracleCases, u8 } from './helpers/oracle';

const root = resolve(__dirname, '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };
const bin = join(root, pkg.bin['metal-tensorops']);

function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [bin, ...args], {
    encoding: 'utf8', timeout: 100_000, env: { ...process.env, ...env }, maxBuffer: 16 << 20,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('metal-tensorops (the bin)', () => {
  it('is package.json bin, built for CommonJS with a shebang', () => {
    expect(pkg.bin['metal-tensorops']).toBe('./dist/cjs/cli/cli.js');
    expect(readFileSync(bin, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });

  it('--version and -v print package.json version alone', () => {
    for (const flag of ['--version', '-v']) {
      const r = cli([flag]);
      expect(r.status, flag).toBe(0);
      expect(r.stdout, flag).toBe(`${pkg.version}\n`);
    }
  });

  it('--help, -h and help list every command; help <command> gives its options', () => {
    for (const args of [['--help'], ['-h'], ['help']]) {
      const r = cli(args);
      expect(r.status, args.join(' ')).toBe(0);
      for (const name of ['info', 'selftest', 'bench', '--version']) expect(r.stdout, args.join(' ')).toContain(name);
    }
    const r = cli(['help', 'selftest']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^usage: metal-tensorops selftest \[--backend auto\|metal\|cpu\]/);
    expect(cli(['info', '--help']).stdout).toMatch(/^usage: metal-tensorops info \[--json\]/);
  });

  it('an unknown command or flag: usage on stderr, nothing on stdout, exit 2', () => {
    const cases: [string[], RegExp, RegExp][] = [
      [['foo'], /^metal-tensorops: unknown command 'foo'\n/, /^usage: metal-tensorops \[command\]/m],
      [['bench2', '--json'], /^metal-tensorops: unknown command 'bench2'\n/, /^commands:/m],
      [['info', '--foo'], /^metal-tensorops: info: Unknown option '--foo'/, /^usage: metal-tensorops info /m],
      [['--foo'], /^metal-tensorops: info: Unknown option '--foo'/, /^usage: metal-tensorops info /m],
      [['selftest', '--json'], /^metal-tensorops: selftest: Unknown option '--json'/, /^usage: metal-tensorops selftest /m],
      [['info', 'extra'], /^metal-tensorops: info: .*'extra'/, /^usage: metal-tensorops info /m],
      [['help', 'nope'], /^metal-tensorops: help takes one command name \(info, selftest, bench, run, logits\); got 'nope'/, /^commands:/m],
      [['--version', 'x'], /^metal-tensorops: --version takes no arguments; got 'x'/, /^commands:/m],
    ];
    for (const [args, message, usage] of cases) {
      const r = cli(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stdout, args.join(' ')).toBe('');
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr, args.join(' ')).toMatch(usage);
    }
  });

  it('a bad option value names the option and what it accepts, exit 2', () => {
    const cases: [string[], string][] = [
      [['info', '--backend', 'gpu'], "info: --backend must be auto, metal or cpu; got 'gpu'"],
      [['selftest', '--backend=vulkan'], "selftest: --backend must be auto, metal or cpu; got 'vulkan'"],
      [['info', '--threads', '0'], "info: --threads must be an integer from 1 to 1024; got '0'"],
      [['selftest', '--threads', '2.5'], "selftest: --threads must be an integer from 1 to 1024; got '2.5'"],
    ];
    for (const [args, message] of cases) {
      const r = cli(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toContain(`metal-tensorops: ${message}`);
    }
    const missing = cli(['info', '--backend']);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/'--backend <value>' argument missing/);
  });
});

describe('metal-tensorops info', () => {
  it('--json: the fields of open()\'s device.info here, the package version and the kernels measureRoofline reports', async () => {
    const r = cli(['info', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as Record<string, unknown>;
    const dev = await open();  // this process has the child's environment
    expect(report).toEqual({
      ...dev.info,
      version: pkg.version,
      cpuKernels: loadBinding().measureRoofline(1, { seconds: 0.01, readBytes: 1 << 20 }).kernels,
      node: process.version,
    });
  });

  it('follows --backend, --threads and METAL_TENSOROPS_CPU_ISA as open() does', async () => {
    const r = cli(['info', '--json', '--backend', 'cpu', '--threads', '1'], { METAL_TENSOROPS_CPU_ISA: 'baseline' });
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    const dev = await open({ backend: 'cpu', threads: 1 });
    expect(report).toMatchObject({ ...dev.info, threads: 1, cpuKernels: 'baseline/none' });
    if (process.platform !== 'darwin') {
      const metal = cli(['info', '--backend', 'metal']);
      expect(metal.status).toBe(1);
      expect(metal.stderr).toMatch(/^TensorOpsError: backend 'metal' was asked for/);
    }
  });

  it('is the default command, and prints the same fields as text', () => {
    const json = JSON.parse(cli(['--json']).stdout) as Record<string, unknown>;
    const text = cli([]).stdout;
    expect(text).toBe(cli(['info']).stdout);
    const row = (label: string) => text.match(new RegExp(`^${label} +(.*)$`, 'm'))?.[1];
    expect(row('version')).toBe(json.version);
    expect(row('backend')).toBe(json.backend);
    expect(row('tier')).toBe(json.tier);
    expect(row('device')).toBe(json.name);
    expect(row('cpu kernels')).toBe(json.cpuKernels);
    expect(row('threads')).toBe(json.threads === undefined ? undefined : String(json.threads));
    expect(row('fallback reason')).toBe(json.fallbackReason);
  });
});

describe('metal-tensorops selftest', () => {
  const LINE = /^\[(\d+)\/(\d+)\] (.+?) \.\.\. (ok|FAIL) \((.+)\)$/;

  function lines(stdout: string) {
    return stdout.split('\n').filter((l) => LINE.test(l)).map((l) => {
      const [, i, n, name, verdict, detail] = l.match(LINE)!;
      return { i: Number(i), n: Number(n), name, verdict, detail };
    });
  }

  it('runs every op here, one line per check off a terminal, passes, exit 0', () => {
    const r = cli(['selftest']);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const checks = lines(r.stdout);
    expect(checks.length).toBeGreaterThanOrEqual(40);
    checks.forEach((c, k) => {
      expect(c.i, c.name).toBe(k + 1);
      expect(c.n, c.name).toBe(checks.length);
      expect(c.verdict, `${c.name}: ${c.detail}`).toBe('ok');
    });
    const names = checks.map((c) => c.name);
    const formats: Format[] = ['mxfp8', 'mxfp8_e5m2', 'mxfp6_e3m2', 'mxfp6_e2m3', 'mxfp4', 'mxint8', 'mxint4', 'mxint2', 'affine4', 'affine8'];
    for (const f of formats) {
      for (const op of ['quantize', 'dequantize', 'linear']) expect(names, `${op} ${f}`).toContain(`${op} ${f}`);
    }
    for (const dtypes of [['float32', 'float16'], ['float32', 'bfloat16'], ['float16', 'bfloat16']]) {
      expect(names).toContain(`cast ${dtypes[0]} -> ${dtypes[1]}`);
      expect(names).toContain(`cast ${dtypes[1]} -> ${dtypes[0]}`);
    }
    for (const n of ['linear float32 + bias', 'linear float16', 'linear mxfp8 x, mxfp4 w', 'matmul (batched a, shared b)',
      'attention', 'attention causal', 'attention GQA', 'attention bool mask', 'attention mxfp8 K/V (decode)']) {
      expect(names).toContain(n);
    }
    // Exact rules bit for bit; the rest within a bound they do not reach.
    for (const c of checks) {
      if (/^(quantize|dequantize|cast) /.test(c.name)) expect(c.detail, c.name).toBe('bit-exact');
      else expect(c.detail, c.name).toMatch(/^worst error [\d.e+-]+% of its bound$/);
    }
    expect(r.stdout).toMatch(new RegExp(`^selftest: all ${checks.length} checks passed in [\\d.]+ s$`, 'm'));
  }, 110_000);

  it('fails, exit 1, when one value of one result is off (METAL_TENSOROPS_SELFTEST_FAULT)', () => {
    for (const faulty of ['linear mxfp4', 'quantize mxint4', 'attention GQA']) {
      const r = cli(['selftest', '--threads', '1'], { METAL_TENSOROPS_SELFTEST_FAULT: faulty });
      expect(r.status, faulty).toBe(1);
      const checks = lines(r.stdout);
      expect(checks.filter((c) => c.verdict === 'FAIL').map((c) => c.name), faulty).toEqual([faulty]);
      expect(checks.find((c) => c.name === faulty)!.detail, faulty)
        .toMatch(faulty.startsWith('quantize') ? /^codes\[0\] is 1, want 0$/ : /is .*, want .* \+- .* \(error [\d.]+x the bound\)$/);
      expect(r.stdout).toMatch(new RegExp(`^selftest: 1 of ${checks.length} checks FAILED in [\\d.]+ s: ${faulty}$`, 'm'));
    }
    const unknown = cli(['selftest'], { METAL_TENSOROPS_SELFTEST_FAULT: 'no such check' });
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain("METAL_TENSOROPS_SELFTEST_FAULT names no check: 'no such check'");
  }, 110_000);
});

describe('the self-test reference (lib/cli/reference) against known values', () => {
  const formatOf: Record<string, Format> = {
    mxfp8_e4m3: 'mxfp8', mxfp8_e5m2: 'mxfp8_e5m2', mxfp6_e3m2: 'mxfp6_e3m2', mxfp6_e2m3: 'mxfp6_e2m3',
    mxfp4_e2m1: 'mxfp4', mxint8: 'mxint8',
  };

  it('decodes every code as ml_dtypes does', () => {
    for (const c of oracleCases('decode_table')) {
      const codes = u8(c.codes), values = f32(c.values);
      codes.forEach((code, i) => {
        const got = decodeElement(c.format as Element, code);
        if (Number.isNaN(values[i])) expect(got, `${c.format} ${code}`).toBeNaN();
        else expect(got, `${c.format} ${code}`).toBe(values[i]);
      });
    }
  });

  it('encodes as ml_dtypes rounds (to nearest even) wherever neither overflows', () => {
    for (const c of oracleCases('cast')) {
      const element = c.format as Exclude<Element, 'e8m0'>;
      const input = f32(c.input), codes = u8(c.codes);
      let compared = 0;
      input.forEach((x, i) => {
        if (Number.isNaN(x) || !(Math.abs(decodeElement(element, codes[i])) <= elementMax(element))) return;
        expect(encodeElement(element, x), `${element} ${x}`).toBe(codes[i]);
        compared++;
      });
      expect(compared, element).toBeGreaterThan(input.length / 2);
    }
  });

  it('MX-quantizes as the golden data: codes, scales and dequantized values', () => {
    const cases = oracleCases('mx_quantize');
    expect(cases.length).toBe(11);
    for (const c of cases) {
      const format = formatOf[c.format as string];
      const input = f32(c.input);
      const cols = (c.input as { shape: number[] }).shape[1];
      const ref = mxQuantize(format, input, cols);
      const bits = format === 'mxfp4' ? 4 : format.startsWith('mxfp6') ? 6 : 8;
      expect(unpackCodes(ref.codes, bits, input.length), format).toEqual(Array.from(u8(c.codes)));
      expect(Array.from(ref.scales), format).toEqual(Array.from(u8(c.scale_codes)));
      expect(Array.from(ref.values, Math.fround), format).toEqual(Array.from(f32(c.dequantized)));
    }
  });

  it('float16 and bfloat16 bits of values worked out by hand', () => {
    const half: [number, number][] = [[1, 0x3c00], [-2, 0xc000], [65504, 0x7bff], [65519, 0x7bff], [65520, 0x7c00],
      [2 ** -24, 0x0001], [2 ** -25, 0x0000], [3 * 2 ** -25, 0x0002], [2 ** -14, 0x0400], [0.1, 0x2e66], [-0, 0x8000],
      [1 + 2 ** -11, 0x3c00], [1 + 3 * 2 ** -11, 0x3c02], [2048 + 1, 0x6800], [Infinity, 0x7c00]];
    for (const [x, h] of half) {
      expect(toHalfBits(Math.fround(x)), String(x)).toBe(h);
      if (h !== 0x7c00 && x === fromHalfBits(h)) expect(fromHalfBits(h)).toBe(x);
    }
    const bf: [number, number][] = [[1, 0x3f80], [1 + 2 ** -8, 0x3f80], [1 + 3 * 2 ** -8, 0x3f82], [-3, 0xc040], [1 / 3, 0x3eab]];
    for (const [x, b] of bf) expect(toBfloat16Bits(x), String(x)).toBe(b);
  });

  it('affine-quantizes a group of k/15 to codes 15 - k, scale -1/15 and bias 1 (the edge kept exact)', () => {
    const x = Float32Array.from({ length: 32 }, (_, i) => (i % 16) / 15);
    const ref = affineQuantize('affine4', x, 32, 32);
    expect(unpackCodes(ref.codes, 4, 32)).toEqual(Array.from({ length: 32 }, (_, i) => 15 - (i % 16)));
    expect(Array.from(ref.scales)).toEqual([0xac44]);  // -1/15 in float16: -(1 + 68/1024) 2^-4
    expect(Array.from(ref.biases!)).toEqual([0x3c00]);
    // s q + b with s off by at most 2^-11 relative (float16), q <= 15; one float32 rounding.
    ref.values.forEach((v, i) => expect(Math.abs(v - x[i])).toBeLessThanOrEqual(15 * (1 / 15) * 2 ** -11 + 2 ** -23));
  });

  it('linear and attention: exact on small integers; the linear bound holds for a float32 sum in order', () => {
    const y = linearRef([1, 2, 3], [4, 5, 6, -1, 0, 1], 1, 2, 3, { bias: [10, 20] });
    expect(Array.from(y.value)).toEqual([42, 22]);
    expect(y.bound[0]).toBeCloseTo(gamma(7) * (32 + 10), 20);
    // One key: the output is its value row, whatever the scores; no key seen: zeros, bound 0.
    const a = attentionRef([1, 2], [3, 4, 5, 6], [7, 8, 9, 10], { B: 1, Hq: 1, Hkv: 1, Lq: 1, Lk: 2, D: 2 }, { mask: [1, 0] });
    expect(Array.from(a.value)).toEqual([7, 8]);
    const none = attentionRef([1, 2], [3, 4], [7, 8], { B: 1, Hq: 1, Hkv: 1, Lq: 1, Lk: 1, D: 2 }, { mask: [0] });
    expect(Array.from(none.value)).toEqual([0, 0]);
    expect(Array.from(none.bound)).toEqual([0, 0]);
    // A float32 dot product summed left to right (every product and sum rounded): within the
    // bound, which is still far below the values' own size.
    const K = 4096;
    const xs = Float32Array.from({ length: K }, (_, i) => Math.sin(i) * 3), ws = Float32Array.from({ length: K }, (_, i) => Math.cos(i * 1.7));
    let sum = 0;
    for (let k = 0; k < K; k++) sum = Math.fround(sum + Math.fround(xs[k] * ws[k]));
    const ref = linearRef(xs, ws, 1, 1, K);
    expect(Math.abs(sum - ref.value[0])).toBeLessThanOrEqual(ref.bound[0]);
    expect(ref.bound[0]).toBeLessThan(1e-3 * xs.reduce((a, v, k) => a + Math.abs(v * ws[k]), 0));
  });
});

describe('metal-tensorops bench', () => {
  it('passes its arguments to bench/run.mjs: its usage, its usage errors (exit 2)', () => {
    const help = cli(['bench', '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: npm run bench -- \[--json\].*--peer/);
    const bad = cli(['bench', '--bogus']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/unknown option --bogus/);
  });

  it('ships in the package (its scripts and the peers\' pinned manifest, not their node_modules or results)', () => {
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const files = (JSON.parse(out) as { files: { path: string }[] }[])[0].files.map((f) => f.path);
    for (const f of ['bench/run.mjs', 'bench/peers.mjs', 'bench/peers/package.json', 'bench/peers/package-lock.json', 'dist/cjs/cli/cli.js']) {
      expect(files, f).toContain(f);
    }
    expect(files.filter((f) => f.startsWith('bench/results/') || f.startsWith('bench/peers/node_modules/'))).toEqual([]);
  });

  it('says so when the bench is not in the installation, exit 1', () => {
    // An installed package without bench/: dist/ next to package.json and binding.gyp.
    const dir = mkdtempSync(join(tmpdir(), 'mto-no-bench-'));
    cpSync(join(root, 'dist'), join(dir, 'dist'), { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'metal-tensorops', version: '9.9.9' }));
    writeFileSync(join(dir, 'binding.gyp'), '{}');
    const run = (args: string[]) => spawnSync(process.execPath, [join(dir, pkg.bin['metal-tensorops']), ...args], { encoding: 'utf8' });
    expect(run(['--version']).stdout).toBe('9.9.9\n');
    const r = run(['bench', '--smoke']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`metal-tensorops bench: the benchmark is not in this installation (no ${join(dir, 'bench', 'run.mjs')})`);
  });
});
