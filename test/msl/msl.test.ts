// The MSL kernels of shaders/, run on the CPU by the harness of test/msl (README.md there):
// every case of the driver must pass, and every planted fault must make the harness report the
// failure it plants. Builds test/msl/build/msl-driver first (incremental; a fresh build takes
// about 6 minutes of two idle cores, 9-10 on a loaded machine: the hook allows 30).
import { spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { canRun, fullSuite } from '../helpers/suite';
import { build, driverPath, faults, root } from './build.mjs';
import { main as runMutants } from './mutants.mjs';

interface CaseResult {
  name: string; op: string; kernel?: string; threads?: number[]; ok: boolean;
  error?: { kind: string; message: string }; detected?: string;
  worst_ratio: number; mismatches: number;
}
interface Report { variant: string; seconds: number; cases: CaseResult[]; passed: number; failed: number }
interface Fault { name: string; why: string; file: string; filter: string; expect: string; env?: Record<string, string> }

const compiler = process.env.MSL_CXX || 'clang++-19';
const haveCompiler = canRun(compiler);
// The full suite (CI: .ci/run installs clang-19) fails on Linux without the compiler; the quick
// one skips. The quick suite runs every case once; the full one adds other cooperative-layout
// seeds, the fallback branches and every planted fault.
const skip = !haveCompiler && (!fullSuite || process.platform !== 'linux');
const variants = it.runIf(fullSuite);

function runDriver(args: string[], env: Record<string, string> = {}): Report {
  // A kernel stuck in a loop never reaches a rendezvous the harness could check: time out instead.
  const r = spawnSync(driverPath, args, {
    encoding: 'utf8', maxBuffer: 64 << 20, timeout: 300_000, env: { ...process.env, ...env },
  });
  if (r.error) throw r.error;
  if (r.status !== 0 && r.status !== 1) throw new Error(`msl-driver ${args.join(' ')} exited ${r.status}:\n${r.stderr}`);
  return JSON.parse(r.stdout) as Report;
}

const failures = (cases: CaseResult[]) =>
  cases.filter((c) => !c.ok).map((c) => `${c.name}: ${c.error?.kind}: ${c.error?.message}`);

const linearFormats = ['mxfp8', 'mxfp8_e5m2', 'mxfp6_e3m2', 'mxfp6_e2m3', 'mxfp4', 'mxint8', 'mxint4', 'mxint2',
  'affine4.g32', 'affine4.g64', 'affine4.g128', 'affine8.g32', 'affine8.g64', 'affine8.g128'];

// The linear cases whose y is float16 or bfloat16 (written by the kernel in that dtype): y of x's
// dtype for every format through both kernels, and each 16-bit y beside another x dtype for a few
// formats. `gemm` is the tier's tiled kernel; host names end in the x dtype, then _of16 / _obf16.
function expectLinearOutputs(cases: CaseResult[], prefix: string, gemm: string) {
  const kernelFor = (M: number, x: string, y: string) =>
    new RegExp(`^${M <= 8 ? 'qlinear_decode_' : gemm}.*_${x}_${y}$`);
  for (const format of linearFormats) {
    for (const [x, y, Ms] of [['f16', 'of16', [3, 33]], ['bf16', 'obf16', [8, 9]]] as const) {
      for (const M of Ms) {
        const c = cases.find((k) => k.name.startsWith(`${prefix}${format}/${x}/${y}/M${M}/`));
        expect(c, `${prefix}${format}/${x}/${y}/M${M}`).toBeDefined();
        expect(c!.kernel).toMatch(kernelFor(M, x, y));
      }
    }
  }
  for (const format of ['mxfp4', 'mxint8', 'affine4.g64']) {
    for (const [x, y] of [['f32', 'of16'], ['f32', 'obf16'], ['f16', 'obf16'], ['bf16', 'of16']]) {
      for (const M of [1, 40]) {
        const name = `${prefix}${format}/${x === 'f32' ? '' : `${x}/`}${y}/M${M}/`;
        const c = cases.find((k) => k.name.startsWith(name));
        expect(c, name).toBeDefined();
        expect(c!.kernel).toMatch(kernelFor(M, x, y));
      }
    }
  }
}

describe.skipIf(skip)(`MSL kernels on the CPU harness${haveCompiler ? '' : ` (skipped: ${compiler} not found)`}`, () => {
  let report: Report;
  beforeAll(async () => {
    if (!haveCompiler) throw new Error(`${compiler} not found: install clang-19 (apt-get install -y clang-19) or set MSL_CXX`);
    await build();
    report = runDriver([]);
  }, 1_800_000);

  const group = (prefix: string) => report.cases.filter((c) => c.name.startsWith(prefix));

  it('the harness itself: shim features give known answers and each misuse is reported', () => {
    const cases = group('harness/');
    expect(cases.length).toBeGreaterThanOrEqual(14);
    expect(failures(cases)).toEqual([]);
    // A misuse case passes only when the harness reported exactly its kind.
    for (const c of cases.filter((x) => x.name.startsWith('harness/catches/'))) expect(c.detected, c.name).toBeTruthy();
  });

  it('host-bound tensor arguments: a scale-plane tensor handle reads what an inline view over its planes reads, and each binding that does not match the kernel is reported', () => {
    expect(failures(group('harness/tensor_handle/'))).toEqual([]);
    expect(group('harness/tensor_handle/matmul_scale_plane')).toHaveLength(1);
    const catches = group('harness/catches/binding/th_');
    expect(catches.map((c) => c.name.split('/').pop()).sort()).toEqual(['blocks_along_rows', 'buffer_for_tensor',
      'e5m2_bound_for_e4m3', 'no_scale_plane', 'short_data_plane', 'short_scale_plane', 'tensor_for_pointer']);
    expect(failures(catches)).toEqual([]);
    for (const c of catches) expect(c.detected, c.name).toBeTruthy();
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
    expect(cases.length).toBe(8 * 3 * 3 + 8 * 2);  // and blocks at 2^-126 from float32 and bfloat16
    expect(failures(cases)).toEqual([]);
  });

  it('linear: every format, decode and tiled kernels, float32/float16/bfloat16 x and y, edge tiles in M, N and K, within 1e-4 * (1 + |ref|) (+1 ulp for 16-bit y)', () => {
    const cases = group('linear/');
    expect(failures(cases)).toEqual([]);
    // Coverage the suite promises: every format, M on both sides of the decode/tiled switch.
    for (const format of linearFormats) {
      for (const M of [1, 3, 8, 9, 33]) {
        const c = cases.find((x) => x.name.startsWith(`linear/${format}/M${M}/`));
        expect(c, `linear/${format}/M${M}`).toBeDefined();
        expect(c!.kernel).toMatch(M <= 8 ? /^qlinear_decode_.*_f32$/ : /^qlinear_gemm_.*_f32$/);
        for (const dtype of ['f16', 'bf16']) {
          const h = cases.find((x) => x.name.startsWith(`linear/${format}/${dtype}/M${M}/`));
          expect(h, `linear/${format}/${dtype}/M${M}`).toBeDefined();
          expect(h!.kernel).toMatch(new RegExp(`^${M <= 8 ? 'qlinear_decode_' : 'qlinear_gemm_'}.*_${dtype}$`));
        }
      }
    }
    expectLinearOutputs(cases, 'linear/', 'qlinear_gemm_');
    expect(Math.max(...cases.map((c) => c.worst_ratio))).toBeLessThanOrEqual(1);
  });

  it('attention: decode (one pass and split + merge) and prefill, every head dim, masks, GQA, float16/bfloat16 q, mxfp8 K/V, against the cpu backend', () => {
    const cases = group('attention/');
    expect(failures(cases)).toEqual([]);
    expect(failures(group('plan/attention'))).toEqual([]);
    for (const D of [64, 80, 96, 128, 256]) {
      expect(cases.some((c) => c.name.startsWith('attention/decode/') && c.name.includes(`/d${D}/`)), `decode d${D}`).toBe(true);
      expect(cases.some((c) => c.name.startsWith('attention/prefill/') && c.name.includes(`/d${D}/`)), `prefill d${D}`).toBe(true);
    }
    for (const c of cases) expect(c.kernel, c.name).toMatch(c.name.startsWith('attention/decode/') ? /^attention_decode_/ : /^attention_prefill_/);
    expect(cases.some((c) => /\+attention_merge_f32$/.test(c.kernel ?? '')), 'a split decode with its merge pass').toBe(true);
    // '/splits': forced key splits (one key each, more splits than keys) with their merge.
    for (const tag of ['/f16/', '/bf16/', '/mxfp8/', '/mxfp8_e5m2/', '/causal', '/mask_bool', '/mask_add', '.Hkv1/', '/splits']) {
      expect(cases.some((c) => c.name.includes(tag)), tag).toBe(true);
    }
    expect(Math.max(...cases.map((c) => c.worst_ratio))).toBeLessThanOrEqual(1);
  });

  it('attention NaN rule (native/core/ops.h): NaN in q, K, V and the additive mask, NaN exactly where the cpu has it, in decode, split decode + merge and prefill on every tier', () => {
    const nan = [...group('attention/'), ...group('attention-tensorops/'), ...group('attention-tensorops-mx/')]
      .filter((c) => c.name.includes('/nan_'));
    expect(failures(nan)).toEqual([]);
    const has = (pred: (c: CaseResult) => boolean, what: string) => expect(nan.some(pred), what).toBe(true);
    has((c) => c.name.startsWith('attention/decode/') && !c.kernel?.includes('+'), 'one-pass decode');
    has((c) => c.name.startsWith('attention/decode/') && /\+attention_merge_/.test(c.kernel ?? ''), 'split decode');
    has((c) => c.name.startsWith('attention/prefill/'), 'simdgroup prefill');
    has((c) => c.name.startsWith('attention-tensorops/prefill/'), 'tensorops prefill');
    has((c) => c.name.startsWith('attention-tensorops-mx/prefill/'), 'tensorops-mx prefill');
    for (const tag of ['/nan_qkv', 'm', '_vinf', '/mask_bool', '/mask_add', '/mxfp8/', '/mxfp8_e5m2/', '/causal']) {
      has((c) => tag === 'm' ? /\/nan_[qkv]*m(_|$)/.test(c.name) : c.name.includes(tag), tag);
    }
  });

  it('attention sinks (gpt-oss): one logit per head joined once where o is normalised, in one-pass decode, split decode + merge (not per split), simdgroup and tensorops prefill; NaN/-inf/+inf sinks; rows that see no key stay zeros', () => {
    const sinks = [...group('attention/'), ...group('attention-tensorops/')].filter((c) => /\/sinks(_nonfinite)?$/.test(c.name));
    expect(failures(sinks)).toEqual([]);
    const has = (pred: (c: CaseResult) => boolean, what: string) => expect(sinks.some(pred), what).toBe(true);
    has((c) => c.name.startsWith('attention/decode/') && !c.kernel?.includes('+'), 'one-pass decode');
    has((c) => /^attention(-tensorops)?\/decode\//.test(c.name) && /\+attention_merge_/.test(c.kernel ?? ''), 'split decode');
    has((c) => c.name.startsWith('attention/prefill/'), 'simdgroup prefill');
    has((c) => c.name.startsWith('attention-tensorops/prefill/'), 'tensorops prefill');
    has((c) => c.name.endsWith('/sinks_nonfinite') && c.name.startsWith('attention/prefill/'), 'non-finite sinks, simdgroup prefill');
    has((c) => c.name.endsWith('/sinks_nonfinite') && /\+attention_merge_/.test(c.kernel ?? ''), 'non-finite sinks, split decode');
    expect(Math.max(...sinks.map((c) => c.worst_ratio))).toBeLessThanOrEqual(1);
  });

  it('attention outputs in float16 and bfloat16 (q\'s dtype, rounded once by the kernel that stores o): one-pass decode, split decode + merge, prefill, on both tiers', () => {
    const cases = [...group('attention/'), ...group('attention-tensorops/')];
    for (const dtype of ['f16', 'bf16']) {
      for (const tier of ['attention/', 'attention-tensorops/']) {
        const mine = cases.filter((c) => c.name.startsWith(`${tier}`) && c.name.includes(`/${dtype}/`));
        expect(failures(mine)).toEqual([]);
        const decode = mine.filter((c) => c.name.startsWith(`${tier}decode/`));
        expect(decode.some((c) => c.kernel?.startsWith(`attention_decode_${dtype}_`) && !c.kernel.includes('+')),
          `${tier} one-pass decode ${dtype}`).toBe(true);
        expect(decode.some((c) => c.kernel?.startsWith(`attention_decode_${dtype}_`) &&
          c.kernel.endsWith(`+attention_merge_${dtype}`)), `${tier} split decode ${dtype}`).toBe(true);
        const prefill = tier === 'attention/' ? 'attention_prefill_' : 'attention_tensorops_prefill_';
        expect(mine.some((c) => c.name.startsWith(`${tier}prefill/`) && c.kernel?.startsWith(`${prefill}${dtype}_`)),
          `${tier} prefill ${dtype}`).toBe(true);
      }
    }
  });

  it('tensorops linear: every format through matmul2d (M > 8) and decode (M <= 8), float32/float16/bfloat16 x and y, edge tiles in M, N and K, within 1e-4 * (1 + |ref|) (+1 ulp for 16-bit y)', () => {
    const cases = group('linear-tensorops/');
    expect(failures(cases)).toEqual([]);
    for (const format of linearFormats) {
      for (const M of [1, 3, 8, 9, 33]) {
        const c = cases.find((x) => x.name.startsWith(`linear-tensorops/${format}/M${M}/`));
        expect(c, `linear-tensorops/${format}/M${M}`).toBeDefined();
        expect(c!.kernel).toMatch(M <= 8 ? /^qlinear_decode_.*_f32$/ : /^qlinear_tensorops_gemm_.*_f32$/);
        for (const dtype of ['f16', 'bf16']) {
          const h = cases.find((x) => x.name.startsWith(`linear-tensorops/${format}/${dtype}/M${M}/`));
          expect(h, `linear-tensorops/${format}/${dtype}/M${M}`).toBeDefined();
          expect(h!.kernel).toMatch(new RegExp(`^${M <= 8 ? 'qlinear_decode_' : 'qlinear_tensorops_gemm_'}.*_${dtype}$`));
        }
      }
    }
    expectLinearOutputs(cases, 'linear-tensorops/', 'qlinear_tensorops_gemm_');
    expect(Math.max(...cases.map((c) => c.worst_ratio))).toBeLessThanOrEqual(1);
  });

  it('matmul: dense float32/float16/bfloat16 (y of that dtype) through simdgroup_matrix tiles and matmul2d, edge tiles in M, N and K, batches, within 1e-4 * (1 + |ref|) (+1 ulp for 16-bit y)', () => {
    for (const [prefix, kernel] of [['matmul/', 'matmul_gemm_'], ['matmul-tensorops/', 'matmul_tensorops_gemm_']]) {
      const cases = group(prefix);
      expect(failures(cases)).toEqual([]);
      for (const dtype of ['f32', 'f16', 'bf16']) {
        for (const M of [1, 3, 8, 9, 33]) {
          const c = cases.find((x) => x.name.startsWith(`${prefix}${dtype}/B1/M${M}/`));
          expect(c, `${prefix}${dtype}/M${M}`).toBeDefined();
          expect(c!.kernel).toBe(kernel + dtype);
        }
        expect(cases.some((c) => c.name.startsWith(`${prefix}${dtype}/B3.bb/`)), `${prefix}${dtype} batched b`).toBe(true);
      }
      expect(Math.max(...cases.map((c) => c.worst_ratio))).toBeLessThanOrEqual(1);
    }
  });

  it('tensorops-mx linear: mxfp8/mxfp8_e5m2/mxfp4 with float16 x through scale-plane matmul2d, every other format through the fallback, against the cpu backend', () => {
    const cases = group('linear-tensorops-mx/');
    expect(failures(cases)).toEqual([]);
    for (const format of ['mxfp8', 'mxfp8_e5m2', 'mxfp4']) {
      for (const M of [9, 33, 40]) {
        const c = cases.find((x) => x.name.startsWith(`linear-tensorops-mx/${format}/f16/M${M}/`));
        expect(c, `linear-tensorops-mx/${format}/f16/M${M}`).toBeDefined();
        expect(c!.kernel).toBe(`qlinear_tensorops_mx_gemm_${format}_f16`);
      }
      // y in float16 (x's dtype) and bfloat16 from the scale-plane kernel, and the decode kernel's.
      for (const [y, M] of [['of16', 9], ['of16', 40], ['obf16', 33], ['of16', 8]] as const) {
        const c = cases.find((x) => x.name.startsWith(`linear-tensorops-mx/${format}/f16/${y}/M${M}/`));
        expect(c, `linear-tensorops-mx/${format}/f16/${y}/M${M}`).toBeDefined();
        expect(c!.kernel).toBe(`${M <= 8 ? 'qlinear_decode_' : 'qlinear_tensorops_mx_gemm_'}${format}_f16_${y}`);
      }
    }
    // Each docs/design/API.md format runs on this tier (dequantizing if Metal has no element type).
    for (const format of ['mxfp8', 'mxfp8_e5m2', 'mxfp6_e3m2', 'mxfp6_e2m3', 'mxfp4', 'mxint8', 'mxint4', 'mxint2', 'affine4', 'affine8']) {
      expect(cases.some((c) => c.name.startsWith(`linear-tensorops-mx/${format}`) && /_gemm_/.test(c.kernel ?? '')), format).toBe(true);
    }
    expect(failures(group('plan/linear-mx'))).toEqual([]);
    expect(Math.max(...cases.map((c) => c.worst_ratio))).toBeLessThanOrEqual(1);
  });

  const dtypes = ['f32', 'f16', 'bf16'];
  const worst = (cases: CaseResult[]) => Math.max(...cases.map((c) => c.worst_ratio));

  it('elementwise: silu, gelu, gelu_tanh of every dtype; add, mul, swiglu, swiglu_oai (alpha 1.702, limit 7) of every dtype pair (float32 out for mixed), contiguous, repeated and strided broadcasts, data with 0, -0, +-1e30, +-inf, NaN: add and mul bit-exact, the others within 1e-6 (1 + |ref|) (+1 ulp for 16-bit outputs)', () => {
    const cases = group('elementwise/');
    expect(failures(cases)).toEqual([]);
    expect(failures(group('plan/elementwise'))).toEqual([]);
    for (const op of ['silu', 'gelu', 'gelu_tanh']) {
      for (const dt of dtypes) {
        const mine = cases.filter((c) => c.name.startsWith(`elementwise/unary/${op}/${dt}/`));
        expect(mine.map((c) => c.name.split('/').pop()), `${op} ${dt}`).toEqual(['n1', 'n7', 'n33', 'n1000', 'n4099']);
        for (const c of mine) expect(c.kernel).toBe(`elementwise_unary_${dt}`);
      }
    }
    for (const op of ['add', 'mul', 'swiglu', 'swiglu_oai']) {
      for (const a of dtypes) {
        for (const b of dtypes) {
          const mine = cases.filter((c) => c.name.startsWith(`elementwise/binary/${op}/${a}.${b}/`));
          expect(mine.some((c) => c.kernel === `elementwise_binary_${a}_${b}`), `${op} ${a}.${b} contiguous`).toBe(true);
          expect(mine.some((c) => c.kernel === `elementwise_binary_strided_${a}_${b}`), `${op} ${a}.${b} strided`).toBe(true);
        }
      }
      for (const shape of ['300.257x257', '3.1.7x1.5.1', '5.1.3.1x1.4.1.2', '1x4099', '1000x1']) {
        expect(cases.some((c) => c.name === `elementwise/binary/${op}/f32.f32/${shape}`), `${op} ${shape}`).toBe(true);
      }
    }
    // add and mul round once on both sides: no error at all.
    expect(worst(cases.filter((c) => /^elementwise\/binary\/(add|mul)\//.test(c.name)))).toBe(0);
    expect(worst(cases)).toBeLessThanOrEqual(1);
  });

  it('norm: rmsNorm and layerNorm, rows of 1 to 4099 (one SIMD-group to 1024 threads), every x dtype, weight and bias absent or of other dtypes, rows of 1e30 and 1e-30, eps = 0, zeros, inf and NaN, within 1e-5 (1 + |ref|) (+1 ulp for 16-bit y)', () => {
    const cases = group('norm/');
    expect(failures(cases)).toEqual([]);
    expect(failures(group('plan/norm'))).toEqual([]);
    for (const kind of ['rms', 'layer']) {
      for (const dt of dtypes) {
        const mine = cases.filter((c) => c.name.startsWith(`norm/${kind}/${dt}/`));
        for (const c of mine) expect(c.kernel).toBe(`norm_rows_${dt}`);
        for (const size of ['R1.C1', 'R3.C7', 'R37.C33', 'R37.C1000', 'R3.C4099']) {
          expect(mine.some((c) => c.name.includes(`/${size}`)), `${kind} ${dt} ${size}`).toBe(true);
        }
        for (const tag of ['/edges', '/edges/eps0', '/R3.C1000']) expect(mine.some((c) => c.name.includes(tag)), `${kind} ${dt} ${tag}`).toBe(true);
        // weight (and layerNorm's bias) of a dtype other than x's
        expect(mine.some((c) => /\/w\.(f32|f16|bf16)/.test(c.name) && !c.name.includes(`/w.${dt}`)), `${kind} ${dt} mixed`).toBe(true);
      }
      // Plans made for a pipeline that allows fewer threads than 1024 run within that limit.
      for (const [limit, threads] of [['790', 768], ['96', 96]] as const) {
        expect(cases.some((c) => c.name.startsWith(`norm/${kind}/`) && c.name.endsWith(`/limit${limit}`) &&
          JSON.stringify(c.threads) === JSON.stringify([threads, 1, 1])), `${kind} limit ${limit}`).toBe(true);
      }
    }
    expect(worst(cases)).toBeLessThanOrEqual(1);
  });

  it('rope: neox and interleaved, bhld and blhd, every dtype, partial dims, positions from offsets up to 2^31 - 40 and int32 tensors over the whole int32 range, base and explicit freqs, within 5e-6 (1 + |ref|) (+1 ulp for 16-bit y)', () => {
    const cases = group('rope/');
    expect(failures(cases)).toEqual([]);
    expect(failures(group('plan/rope'))).toEqual([]);
    for (const style of ['neox', 'interleaved']) {
      for (const layout of ['bhld', 'blhd']) {
        for (const dt of dtypes) {
          const mine = cases.filter((c) => c.name.startsWith(`rope/${style}/${layout}/${dt}/`));
          expect(mine.length, `${style} ${layout} ${dt}`).toBeGreaterThan(0);
          for (const c of mine) expect(c.kernel).toBe(`rope_rows_${dt}`);
        }
      }
      for (const tag of ['/off4059', '/off2147483607', '/pos4096', '/posint32', '/posint32/freqs', '/d32/', '/edges']) {
        expect(cases.some((c) => c.name.startsWith(`rope/${style}/`) && c.name.includes(tag)), `${style} ${tag}`).toBe(true);
      }
    }
    expect(worst(cases)).toBeLessThanOrEqual(1);
  });

  it('softmax: rows of 1 to 4099 and of 128256, every dtype, -inf, all -inf, +inf, NaN, +-1e30 and zero rows, within 1e-5 (1 + |ref|) (+1 ulp for 16-bit y)', () => {
    const cases = group('softmax/');
    expect(failures(cases)).toEqual([]);
    expect(failures(group('plan/softmax'))).toEqual([]);
    for (const dt of dtypes) {
      const mine = cases.filter((c) => c.name.startsWith(`softmax/${dt}/`));
      for (const c of mine) expect(c.kernel).toBe(`softmax_rows_${dt}`);
      for (const tag of ['R1.C1', 'R3.C7', 'R37.C33', 'R37.C1000', 'R3.C4099', 'R8.C1000/edges']) {
        expect(mine.some((c) => c.name.endsWith(tag)), `${dt} ${tag}`).toBe(true);
      }
    }
    expect(cases.some((c) => c.name.endsWith('.C128256')), 'a vocabulary row').toBe(true);
    // Plans made for a pipeline that allows fewer threads than 1024 run within that limit.
    for (const [limit, threads] of [['790', 768], ['96', 96]] as const) {
      expect(cases.some((c) => c.name.endsWith(`/limit${limit}`) && JSON.stringify(c.threads) === JSON.stringify([threads, 1, 1])),
        `limit ${limit}`).toBe(true);
    }
    expect(worst(cases)).toBeLessThanOrEqual(1);
  });

  it('layout: transpose (ranks 2 to 6), slice, concat (a pass per input) and write (in place) of every dtype, bit for bit', () => {
    const cases = group('layout/');
    expect(failures(cases)).toEqual([]);
    expect(failures(group('plan/copy'))).toEqual([]);
    for (const [dt, bits] of [['f32', 32], ['f16', 16], ['bf16', 16], ['i32', 32], ['bool', 8]] as const) {
      for (const op of ['transpose', 'slice', 'concat', 'write']) {
        const mine = cases.filter((c) => c.name.startsWith(`layout/${op}/`) && c.name.endsWith(`/${dt}`));
        expect(mine.length, `${op} ${dt}`).toBeGreaterThan(0);
        for (const c of mine) expect(c.kernel).toMatch(new RegExp(`^copy_strided_b${bits}(\\+copy_strided_b${bits})*$`));
      }
    }
    expect(cases.some((c) => (c.kernel ?? '').split('+').length === 3), 'a concat of three').toBe(true);
    expect(worst(cases)).toBe(0);
  });

  // The cooperative-tensor element-to-thread order is scrambled by a seed: correct kernels pass
  // under any seed, and is_compatible_as_left_input may answer either way.
  variants('tensorops: the scrambled cooperative-tensor layout under two other seeds, and left-input reuse both ways', () => {
    const filter = ['--filter', 'linear-tensorops/,harness/tensorops/,matmul-tensorops/,linear-tensorops-mx/'];
    for (const seed of ['1', '0x9e3779b9']) {
      const r = runDriver(filter, { MTOH_COOP_SEED: seed });
      expect(r.cases.filter((c) => c.name.startsWith('linear-tensorops/')).length).toBeGreaterThanOrEqual(70);
      expect(failures(r.cases), `MTOH_COOP_SEED=${seed}`).toEqual([]);
    }
    const r = runDriver(['--filter', 'harness/tensorops/,linear-tensorops/mxint4/'], { MTOH_COOP_LEFT_COMPATIBLE: '0' });
    expect(r.cases.some((c) => c.name === 'harness/tensorops/left_input_reuse')).toBe(true);
    expect(failures(r.cases), 'MTOH_COOP_LEFT_COMPATIBLE=0').toEqual([]);
  });

  // Apple's header says both "C = A*B + C" and mode::multiply: each kernel zeroes its cooperative
  // destination and accumulates, so it is right under either reading of mode::multiply.
  variants('tensorops: every matmul2d kernel is right when mode::multiply adds to its destination too (MTOH_MULTIPLY_ACCUMULATES=1)', () => {
    const r = runDriver(['--filter', 'linear-tensorops/mxfp4/,linear-tensorops/affine4,matmul-tensorops/,linear-tensorops-mx/,' +
      'attention-tensorops/prefill/f32/dense/d80/,attention-tensorops/prefill/f16/mxfp8/'], { MTOH_MULTIPLY_ACCUMULATES: '1' });
    for (const prefix of ['linear-tensorops/', 'matmul-tensorops/', 'linear-tensorops-mx/', 'attention-tensorops/prefill/']) {
      expect(r.cases.filter((c) => c.name.startsWith(prefix)).length, prefix).toBeGreaterThan(4);
    }
    expect(failures(r.cases), 'MTOH_MULTIPLY_ACCUMULATES=1').toEqual([]);
    // The kernel as it was (mode::multiply into a destination never zeroed) passed only under the
    // other reading; its planted fault fails under this one.
    const old = (faults as Fault[]).find((f) => f.name === 'matmul_tops_multiply_unzeroed')!;
    const before = runDriver(['--variant', old.name, '--filter', old.filter]);
    expect(before.cases.length).toBeGreaterThan(0);
    expect(failures(before.cases)).toEqual([]);
  });

  it('tensorops attention: prefill through matmul2d (every head dim, every Lq > 8 and Lk of the edge set), decode through the vector kernel, every option, against the cpu backend', () => {
    const cases = group('attention-tensorops/');
    expect(failures(cases)).toEqual([]);
    for (const c of cases) {
      expect(c.kernel, c.name).toMatch(c.name.startsWith('attention-tensorops/decode/') ? /^attention_decode_/ : /^attention_tensorops_prefill_/);
    }
    // The main configuration covers every prefill edge shape for every head dim.
    for (const D of [64, 80, 96, 128, 256]) {
      for (const Lq of [33, 129, 300]) {
        for (const Lk of [1, 7, 33, 129, 300]) {
          const tag = `attention-tensorops/prefill/f32/dense/d${D}/`;
          expect(cases.some((c) => c.name.startsWith(tag) && c.name.includes(`/Lq${Lq}.Lk${Lk}`)), `${tag} Lq${Lq}.Lk${Lk}`).toBe(true);
        }
      }
    }
    for (const tag of ['/f16/', '/bf16/', '/mxfp8/', '/mxfp8_e5m2/', '/causal', '/mask_bool/', '/mask_add/', '/mask_add_f16',
      '/mask_add_bf16', '/mask_bool_heads', '/scale', '.Hq4.Hkv1/', '.Hq8.Hkv1/', 'attention-tensorops/decode/']) {
      expect(cases.some((c) => c.name.includes(tag) || c.name.endsWith(tag.replace(/\/$/, ''))), tag).toBe(true);
    }
    expect(Math.max(...cases.map((c) => c.worst_ratio))).toBeLessThanOrEqual(1);
  });

  it('tensorops-mx attention: prefill with P as the P V product\'s cooperative left input (attention_tensorops_mx, MSL 4.1), every head dim, each q dtype, mxfp8 K/V, masks, NaN, against the cpu backend', () => {
    const cases = group('attention-tensorops-mx/');
    expect(failures(cases)).toEqual([]);
    for (const c of cases) {
      expect(c.kernel, c.name).toMatch(c.name.startsWith('attention-tensorops-mx/decode/') ? /^attention_decode_/ : /^attention_tensorops_prefill_/);
    }
    for (const D of [64, 80, 96, 128, 256]) expect(cases.some((c) => c.name.includes(`/prefill/f32/dense/d${D}/`)), `d${D}`).toBe(true);
    for (const tag of ['/f16/', '/bf16/', '/mxfp8/', '/mxfp8_e5m2/', '/causal', '/mask_bool', '/mask_add', '/nan_', '_vinf']) {
      expect(cases.some((c) => c.name.includes(tag)), tag).toBe(true);
    }
    expect(Math.max(...cases.map((c) => c.worst_ratio))).toBeLessThanOrEqual(1);
  });

  // Both ways of feeding P into the second matmul2d on tensorops-mx (is_compatible_as_left_input
  // answering no there takes the threadgroup-memory branch, which tensorops always takes), and
  // layouts that differ from the default seed: a sample with every head dim, dtype and K/V format.
  variants('tensorops attention: tensorops-mx\'s threadgroup-memory branch when is_compatible_as_left_input says no, and other layout seeds', () => {
    const all = runDriver(['--filter', 'attention-tensorops-mx/'], { MTOH_COOP_LEFT_COMPATIBLE: '0' });
    expect(all.cases.length).toBe(group('attention-tensorops-mx/').length);
    expect(failures(all.cases), 'MTOH_COOP_LEFT_COMPATIBLE=0').toEqual([]);
    const sample = ['attention-tensorops/prefill/f16/', 'attention-tensorops/prefill/bf16/', 'attention-tensorops/prefill/f32/mxfp8',
      'attention-tensorops/prefill/f32/dense/d80/', 'attention-tensorops-mx/prefill/'];
    for (const seed of ['1', '0x9e3779b9']) {
      const r = runDriver(['--filter', sample.join(',')], { MTOH_COOP_SEED: seed });
      expect(r.cases.length).toBeGreaterThanOrEqual(40);
      for (const D of [64, 80, 96, 128, 256]) expect(r.cases.some((c) => c.name.includes(`/d${D}/`)), `d${D}`).toBe(true);
      expect(failures(r.cases), `MTOH_COOP_SEED=${seed}`).toEqual([]);
    }
  });

  variants('tensorops-mx attention: by default the scores go directly into the second matmul2d (a fault in its threadgroup-memory branch goes unnoticed there)', () => {
    const fault = (faults as Fault[]).find((f) => f.name === 'tensorops_mx_attn_fallback_no_barrier')!;
    const r = runDriver(['--variant', fault.name, '--filter', fault.filter]);
    expect(r.cases.length).toBeGreaterThan(0);
    expect(failures(r.cases)).toEqual([]);
  });

  it('tier probes (native/metal/probe_sources.h): each builds against the shim at its MSL version and runs without a report', () => {
    const cases = group('probe/');
    expect(cases.map((c) => c.name).sort()).toEqual(['probe/probe_simdgroup', 'probe/probe_tensorops', 'probe/probe_tensorops_mx']);
    expect(failures(cases)).toEqual([]);
  });

  variants('tensorops: the layout-assuming kernel fails under other seeds too', () => {
    for (const seed of ['1', '0x9e3779b9']) {
      const r = runDriver(['--variant', 'coop_layout', '--filter', 'linear-tensorops/mxfp4/M33/'], { MTOH_COOP_SEED: seed });
      expect(r.cases.length).toBeGreaterThan(0);
      for (const c of r.cases) expect(c.error?.kind, `${c.name} with MTOH_COOP_SEED=${seed}`).toBe('mismatch');
    }
  });

  // The model ops' pick, gather and grouped kernels (argmax, topK, sample, embedding, groupedLinear).
  it('argmax, topK and sample: every float dtype, ties, signed zeros, NaN, +-inf, a 128256-wide row, topK\'s exact path and its bisection, sample\'s modes, k and candidates past 256 (the wide kernels), plans within a pipeline limit: ids equal to the cpu backend\'s, bit for bit', () => {
    const cases = group('pick/');
    expect(failures(cases)).toEqual([]);
    expect(failures(group('plan/pick'))).toEqual([]);
    for (const dtype of ['f32', 'f16', 'bf16']) {
      for (const op of ['argmax', 'topk', 'sample']) {
        expect(cases.some((c) => c.name.startsWith(`pick/${op}/${dtype}/`) && c.kernel === `pick_${op}_${dtype}`), `${op} ${dtype}`).toBe(true);
      }
      // k and candidates past PICK_MAX_K: the wide kernels.
      for (const op of ['topk', 'sample']) {
        expect(cases.some((c) => c.name.startsWith(`pick/${op}/${dtype}/`) && c.kernel === `pick_${op}_wide_${dtype}`), `${op} wide ${dtype}`).toBe(true);
      }
    }
    for (const tag of ['/special', '/constant', '/ascending', '/stride', '/bisect', '/1x128256', '/k256', '/t0', '/k40.p0.8', '/p0.9',
      '/t0.05', '/posinf', '/neginf', '/k257', '/k1000', '/k1001', '/1x128256/p0.9', '/k700.p0.3', '/p1e-12', '/limit63', '/limit96']) {
      expect(cases.some((c) => c.name.includes(tag)), tag).toBe(true);
    }
  });

  it('embedding: dense tables copied bit for bit, every quantized format decoded, ids out of range fail with the cpu backend\'s E_ARG', () => {
    const cases = group('embedding/');
    expect(failures(cases)).toEqual([]);
    for (const name of ['f32', 'f16', 'bf16', ...linearFormats]) {
      expect(cases.some((c) => c.name.startsWith(`embedding/${name}/`)), name).toBe(true);
    }
    expect(cases.filter((c) => c.name.endsWith('/out_of_range')).length).toBeGreaterThanOrEqual(4);
  });

  it('groupedLinear: every format through the decode and the tiled pass, dense w of every float dtype, x and y dtypes, empty experts, one expert with every row, many experts, sizes that fail with the cpu backend\'s E_ARG', () => {
    const cases = group('grouped-linear/');
    expect(failures(cases)).toEqual([]);
    expect(failures(group('plan/grouped-linear'))).toEqual([]);
    for (const format of linearFormats) {
      expect(cases.some((c) => c.name.startsWith(`grouped-linear/${format}/`) && c.kernel?.startsWith('qlinear_grouped_route+qlinear_grouped_decode_')), format).toBe(true);
      expect(cases.some((c) => c.name.startsWith(`grouped-linear/${format}/`) && c.name.endsWith('/tiled') &&
        c.kernel?.startsWith('qlinear_grouped_route+qlinear_grouped_gemm_')), `${format} tiled`).toBe(true);
    }
    for (const w of ['f32', 'f16', 'bf16']) {
      for (const x of ['f32', 'f16', 'bf16']) {
        expect(cases.some((c) => c.kernel === `qlinear_grouped_route+qlinear_grouped_gemm_dense_${w}_${x}${x === 'f32' ? '' : `_o${x}`}`), `dense ${w} x ${x}`).toBe(true);
      }
    }
    for (const tag of ['/decode', '/one_expert', '/many_experts', '/max_rows', '/negative', '/short_sum', '/long_sum', '/huge_sum',
      '/tiled_dtypes', '/tiled_one_expert', '/tiled_many_experts', '/tiled_negative', '/tiled_short_sum', '/dense_tiled', '/dense_long_sum']) {
      expect(cases.some((c) => c.name.endsWith(tag)), tag).toBe(true);
    }
    expect(Math.max(...cases.map((c) => c.worst_ratio))).toBeLessThanOrEqual(1);
  });

  it('groupRows: the count, scan and scatter passes sort ids as the cpu backend does, bit for bit; ids out of range fail with its E_ARG', () => {
    const cases = group('group-rows/');
    expect(failures(cases)).toEqual([]);
    expect(failures(group('plan/group-rows'))).toEqual([]);
    for (const c of cases) expect(c.kernel, c.name).toBe('group_rows_count+group_rows_scan+group_rows_scatter');
    for (const tag of ['/G128/', '/G1000/', '/G1/', '/skewed', '/one_group', 'T1000.k3/']) {
      expect(cases.some((c) => c.name.includes(tag)), tag).toBe(true);
    }
    expect(cases.filter((c) => c.name.endsWith('/out_of_range')).length).toBeGreaterThanOrEqual(4);
  });

  // What Metal refuses to compile, the shim refuses too.
  const compileSnippet = (body: string, version = 400) => spawnSync(compiler, ['-std=c++20', '-fsyntax-only', `-D__METAL_VERSION__=${version}`,
    '-Wno-unknown-attributes', '-Iemulator/shim', '-Iemulator/runtime', '-Ishaders', '-x', 'c++', '-'], {
    cwd: root, encoding: 'utf8', input: ['#include "launch.h"', '#include <metal_stdlib>', '#include <metal_tensor>',
      '#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>', 'using namespace metal;',
      'using namespace mpp::tensor_ops;', 'typedef tensor<device float, dextents<int32_t, 2>, tensor_inline> t_t;',
      `void f() { ${body} }`, ''].join('\n'),
  });
  it.each([
    ['a matmul2d descriptor with neither M nor N a multiple of 16', 'matmul2d<matmul2d_descriptor(8, 8), execution_simdgroup> mm; (void)mm;',
      'At least one of M or N must be a multiple of 16'],
    ['reduce_rows without its identity', 'matmul2d<matmul2d_descriptor(16, 16), execution_simdgroup> mm; ' +
      'auto c = mm.get_destination_cooperative_tensor<t_t, t_t, float>(); ' +
      'auto r = mm.get_row_reduction_destination_cooperative_tensor<t_t, t_t, float>(); reduce_rows(c, r, reduction_operation::max);',
      'pass the identity explicitly'],
  ])('tensorops shim: %s does not compile', (_what, body, message) => {
    const bad = compileSnippet(body);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain(message);
    // The control: the nearest valid code compiles.
    const good = compileSnippet(body.replace('(8, 8)', '(16, 8)').replace('reduction_operation::max)', 'reduction_operation::max, -INFINITY)'));
    expect(good.stderr).toBe('');
    expect(good.status).toBe(0);
  });

  it('tensorops shim: cooperative left inputs exist at MSL 4.1 only (absent from the macOS 26 headers), so an MSL 4.0 library cannot use them', () => {
    const body = 'typedef tensor<threadgroup float, dextents<int32_t, 2>, tensor_inline> tg_t; ' +
      'matmul2d<matmul2d_descriptor(16, 32, static_cast<int>(dynamic_extent)), execution_simdgroup> qk; ' +
      'matmul2d<matmul2d_descriptor(16, 32, 32), execution_simdgroup> pv; ' +
      'auto s = qk.get_destination_cooperative_tensor<tg_t, tg_t, float>(); ' +
      'if (pv.is_compatible_as_left_input<float, float, float>(s)) { auto p = pv.get_left_input_cooperative_tensor<float, float, float>(s); (void)p; }';
    const at40 = compileSnippet(body);
    expect(at40.status).not.toBe(0);
    expect(at40.stderr).toContain('cooperative left inputs are not in the macOS 26 MetalPerformancePrimitives headers');
    const at41 = compileSnippet(body, 410);
    expect(at41.stderr).toBe('');
    expect(at41.status).toBe(0);
  });

  it('tensorops shim: scale-plane operand rules (MSL 4.1) are compile errors, as in Apple\'s headers', () => {
    const decl = 'typedef tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1> s_t; ' +
      'typedef tensor<device metal_fp4_e2m1_format, dextents<int32_t, 2>, tensor_inline, s_t> w_t; ';
    const body = (left: string, transposeRight: boolean) => decl +
      `typedef tensor<device ${left}, dextents<int32_t, 2>, tensor_inline> x_t; ` +
      `matmul2d<matmul2d_descriptor(16, 16, static_cast<int>(dynamic_extent), false, ${transposeRight}), execution_simdgroups<4>> mm; ` +
      'x_t x; w_t w; auto c = mm.get_destination_cooperative_tensor<x_t, w_t, float>(); mm.run(x, w, c);';
    for (const [left, tr, message] of [['half', false, 'a scaled right operand must be transposed'],
      ['float', true, 'a fp8/fp4 operand pairs with half or with the same format']] as const) {
      const bad = compileSnippet(body(left, tr));
      expect(bad.status).not.toBe(0);
      expect(bad.stderr).toContain(message);
    }
    const good = compileSnippet(body('half', true));
    expect(good.stderr).toBe('');
    expect(good.status).toBe(0);
  });

  it('tensorops shim: a fp8 left operand against a half right operand is a compile error (Apple\'s table has half x fp8 only)', () => {
    // The product attention's P V would need with V as a scaled operand on the left (O^T = V^T P^T).
    const decl = 'typedef tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1> s_t; ' +
      'typedef tensor<device metal_fp8_e4m3_format, dextents<int32_t, 2>, tensor_inline, s_t> f8_t; ' +
      'typedef tensor<device half, dextents<int32_t, 2>, tensor_inline> h_t; ';
    const body = (left: string, right: string, transposeRight: boolean) => decl +
      `matmul2d<matmul2d_descriptor(16, 16, static_cast<int>(dynamic_extent), false, ${transposeRight}), execution_simdgroups<4>> mm; ` +
      `${left} a; ${right} b; auto c = mm.get_destination_cooperative_tensor<${left}, ${right}, float>(); mm.run(a, b, c);`;
    const bad = compileSnippet(body('f8_t', 'h_t', false), 410);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('a fp8/fp4 left operand pairs with the same format on the right, never half');
    // The controls: half x fp8 (the scaled right operand transposed), and fp8 x fp8 of one format.
    for (const [left, right] of [['h_t', 'f8_t'], ['f8_t', 'f8_t']]) {
      const good = compileSnippet(body(left, right, true), 410);
      expect(good.stderr, `${left} x ${right}`).toBe('');
      expect(good.status).toBe(0);
    }
  });

  it.each([
    ['operator[]', 'w[0]', 'no operator[] on a fp8/fp4 tensor'],
    ['operator()', 'w(0, 0)', 'no operator() on a fp8/fp4 tensor'],
    ['get', 'w.get(0, 0)', 'no get on a fp8/fp4 tensor'],
  ])('tensorops shim: reading an element of a scale-plane tensor (%s) is a compile error: only matmul2d reads them', (_what, read, message) => {
    const decl = 'typedef tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1> s_t; ' +
      'typedef tensor<device metal_fp8_e4m3_format, dextents<int32_t, 2>, tensor_inline, s_t> w_t; ' +
      'typedef tensor<device half, dextents<int32_t, 2>, tensor_inline> x_t; ' +
      'matmul2d<matmul2d_descriptor(16, 16, static_cast<int>(dynamic_extent), false, true), execution_simdgroups<4>> mm; ' +
      'x_t x; w_t w; auto c = mm.get_destination_cooperative_tensor<x_t, w_t, float>(); mm.run(x, w, c); ';
    const bad = compileSnippet(`${decl}float e = ${read}; (void)e;`, 410);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain(message);
    const good = compileSnippet(decl, 410);  // the control: the same tensor through matmul2d
    expect(good.stderr).toBe('');
    expect(good.status).toBe(0);
  });

  it('tensorops shim: a tensor_handle comes from the host, never from a pointer (a compile error)', () => {
    const decl = 'typedef tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1> s_t; ' +
      'device uchar* p = nullptr; ';
    const view = (desc: string) => decl +
      `typedef tensor<device metal_fp8_e4m3_format, dextents<int32_t, 2>, ${desc}, s_t> w_t; ` +
      'w_t w((device metal_fp8_e4m3_format*)p, dextents<int32_t, 2>(128, 4), array<int32_t, 2>{1, 128}, ' +
      's_t((device metal_fp8_ue8m0_format*)p)); (void)w;';
    const bad = compileSnippet(view('tensor_handle'));
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('a tensor_handle tensor comes from the host');
    const good = compileSnippet(view('tensor_inline'));
    expect(good.stderr).toBe('');
    expect(good.status).toBe(0);
  });

  // Mutation testing (mutants.mjs): a seeded sample against the committed report (mutants.json).
  variants('a sampled set of shader mutants: none survives that test/msl/mutants.json has killed', async () => {
    const log: string[] = [];
    const args = ['--sample', '8', '--seed', '20261202', '--budget', '900', '--check', '--jobs', '2'];
    expect(await runMutants(args, (s: string) => log.push(s), { baseReport: report }), log.join('\n')).toBe(0);
  }, 1_800_000);

  for (const fault of faults as Fault[]) {
    const under = fault.env ? ` under ${Object.entries(fault.env).map(([k, v]) => `${k}=${v}`).join(' ')}` : '';
    variants(`planted fault '${fault.name}' is caught (${fault.expect})${under}: ${fault.why}`, () => {
      const r = runDriver(['--variant', fault.name, '--filter', fault.filter], fault.env);
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
