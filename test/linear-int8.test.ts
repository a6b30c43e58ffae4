// linear's opt-in `activations: 'int8'`: x quantized per block of 32 and multiplied by the weights'
// integer codes. Checked against a float64 reference built from the documented rule
// (helpers/int8-activations.ts: y = w . x', x' the quantized x). Where the cpu backend has integer
// kernels (x86-64 with AVX2, which every x64 machine this runs on has, and arm64) the result must be
// that one and differ from the float path; elsewhere, and for the rows and formats the kernels do
// not take, it is the float path's.
import { beforeAll, describe, expect, it } from 'vitest';
import { open, type Device, type Format, type QuantizedTensor } from '../lib/index';
import { expectClose, randn } from './helpers/compare';
import { int8LinearRef } from './helpers/int8-activations';
import { linearRef } from './helpers/reference';
import { loadBinding } from '../lib/native';

let dev: Device;
beforeAll(async () => {
  dev = await open({ backend: 'cpu' });
});

const hasInt8Kernels = ['x64', 'arm64'].includes(process.arch) && process.env.METAL_TENSOROPS_CPU_ISA !== 'baseline';
// The integer GEMM for more than 8 rows, where this CPU has one (the addon's test-only report).
const gemmQ8 = (loadBinding() as unknown as { _internal: { cpuKernels(): { gemmQ8: string | null } } })._internal.cpuKernels().gemmQ8;
const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]) / (1 + Math.abs(b[i])));
  return m;
};

async function runBoth(x: Float32Array, w: QuantizedTensor, M: number, K: number) {
  const xt = dev.tensor(x, [M, K]);
  return Promise.all([dev.linear(xt, w, { activations: 'int8' }).toFloat32(), dev.linear(xt, w).toFloat32()]);
}

describe("linear with activations: 'int8'", () => {
  const Ms = [1, 2, 3, 4, 5, 8];
  const N = 43;  // not a multiple of the kernels' row groups

  // K of 19 blocks of 32 where the groups allow (an odd number of blocks: the 4-bit kernels' last
  // step holds one), 22 and 20 for groups of 64 and 128.
  const cases: [Format, number, number][] = [['affine4', 32, 608], ['affine4', 64, 704], ['affine4', 128, 640],
    ['affine8', 32, 608], ['affine8', 64, 704], ['affine8', 128, 640], ['mxfp4', 32, 608], ['mxint4', 32, 608], ['mxint8', 32, 608]];
  for (const [format, blockSize, K] of cases) {
    it(`${format} block ${blockSize}, K ${K}: x quantized by the rule, times w, for M = ${Ms.join(', ')}`, async () => {
      const w = await dev.quantize(dev.tensor(randn(N * K, K + blockSize), [N, K]), { format, blockSize });
      const wd = await w.dequantize().toFloat32();
      for (const M of Ms) {
        const x = randn(M * K, M + 7);
        const [y, yFloat] = await runBoth(x, w, M, K);
        if (!hasInt8Kernels) { expectClose(y, yFloat, 0, `${format} M=${M}`); continue; }
        expectClose(y, int8LinearRef(x, wd, M, N, K), 1e-5, `${format} block ${blockSize} M=${M}`);
        expect(maxDiff(y, yFloat), `${format} M=${M}: the integer path ran`).toBeGreaterThan(1e-5);
      }
    });
  }

  it('its error against float32 activations is that of 8-bit x: relative RMS below 1%', async () => {
    const K = 2048, M = 1;
    const w = await dev.quantize(dev.tensor(randn(N * K, 9), [N, K]), { format: 'mxfp4' });
    const wd = await w.dequantize().toFloat32();
    const x = randn(K, 10);
    const y = await dev.linear(dev.tensor(x, [M, K]), w, { activations: 'int8' }).toFloat32();
    const exact = linearRef(x, wd, M, N, K);
    let num = 0, den = 0;
    for (let i = 0; i < N; i++) { num += (y[i] - exact[i]) ** 2; den += exact[i] ** 2; }
    expect(Math.sqrt(num / den)).toBeLessThan(0.01);
  });

  it('zero rows, rows below 1e-37 and the bias follow the rule; NaN, infinite or huge rows take the float path', async () => {
    const K = 96, M = 5, N2 = 6;
    const w = await dev.quantize(dev.tensor(randn(N2 * K, 3), [N2, K]), { format: 'mxint8' });
    const wd = await w.dequantize().toFloat32();
    const x = randn(M * K, 4);
    x.fill(0, 0, K);                                          // row 0: zeros (d = 0)
    for (let k = 0; k < K; k++) x[K + k] = x[K + k] * 1e-38;  // row 1: 127 / max|x| overflows float32
    const bias = randn(N2, 8);
    const y = await dev.linear(dev.tensor(x, [M, K]), w, { activations: 'int8', bias: dev.tensor(bias, [N2]) }).toFloat32();
    const want = int8LinearRef(x, wd, M, N2, K).map((v, i) => v + bias[i % N2]);
    if (hasInt8Kernels) {
      expectClose(y, want, 2e-6, 'int8 rows');
      // Row 1's products are ~1e-38: compare them scaled up, where the tolerance means something.
      const scaled = (a: ArrayLike<number>) => Array.from({ length: N2 }, (_, n) => (a[N2 + n] - bias[n]) * 1e38);
      expectClose(scaled(y), scaled(want), 2e-6, 'tiny row');
    }
    // Rows the integer kernels do not take: the whole call runs in float, as without the option.
    for (const [what, v] of [['NaN', NaN], ['infinity', Infinity], ['2^110', 2 ** 110]] as const) {
      const xs = x.slice();
      xs[2 * K + 7] = v;
      const [yi, yf] = await runBoth(xs, w, M, K);
      expectClose(yi, yf, 0, what);
    }
  });

  // More than 8 rows (prefill): the integer GEMM where the CPU has one (AVX-512 VNNI), else float32
  // as without the option. Every format and group, M past its 4-row tiles and 64-row slices, N
  // past its 8-row panels, odd block counts, a bias.
  describe(`more than 8 rows of x (prefill): ${gemmQ8 ?? 'float32, as without the option (no integer GEMM here)'}`, () => {
    for (const [format, blockSize, K] of cases) {
      it(`${format} block ${blockSize}, K ${K}, M = 9, 70, 133`, async () => {
        const N2 = 21;
        const w = await dev.quantize(dev.tensor(randn(N2 * K, K + 3), [N2, K]), { format, blockSize });
        const wd = await w.dequantize().toFloat32();
        const bias = randn(N2, 5);
        for (const M of [9, 70, 133]) {
          const x = randn(M * K, M);
          const xt = dev.tensor(x, [M, K]);
          const [y, yFloat] = await Promise.all([
            dev.linear(xt, w, { activations: 'int8', bias: dev.tensor(bias, [N2]) }).toFloat32(),
            dev.linear(xt, w, { bias: dev.tensor(bias, [N2]) }).toFloat32(),
          ]);
          if (!gemmQ8) { expectClose(y, yFloat, 0, `M=${M}`); continue; }
          // 2793 outputs at M = 133 against the decode tests' 344: the worst float32 rounding of the
          // scale/bias split (s sum(q x') + b sum(x')) reaches 1.2e-5 of 1 + |y| for affine8.
          const want = int8LinearRef(x, wd, M, N2, K).map((v, i) => v + bias[i % N2]);
          expectClose(y, want, 2e-5, `${format} block ${blockSize} M=${M}`);
          expect(maxDiff(y, yFloat), `${format} M=${M}: the integer path ran`).toBeGreaterThan(1e-5);
          if (M !== 9) continue;
          // Row by row, the decode kernels (one row of x a call) compute the same rule.
          for (let m = 0; m < M; m++) {
            const r = await dev.linear(dev.tensor(x.slice(m * K, (m + 1) * K), [1, K]), w, { activations: 'int8', bias: dev.tensor(bias, [N2]) }).toFloat32();
            expectClose(y.slice(m * N2, (m + 1) * N2), r, 1e-5, `${format} row ${m} against the decode kernels`);
          }
        }
      });
    }
    it('a NaN or huge x row sends the whole call to the float path', async () => {
      const K = 128, M = 12;
      const w = await dev.quantize(dev.tensor(randn(N * K, 12), [N, K]), { format: 'affine4' });
      for (const v of [NaN, 2 ** 110]) {
        const x = randn(M * K, 13);
        x[5 * K + 3] = v;
        const [y, yFloat] = await runBoth(x, w, M, K);
        expectClose(y, yFloat, 0, String(v));
      }
    });
  });

  it('a NaN block scale makes exactly its row of y NaN', async () => {
    const K = 96, N2 = 6;
    const wf = randn(N2 * K, 4);
    wf[2 * K + 70] = NaN;
    const w = await dev.quantize(dev.tensor(wf, [N2, K]), { format: 'mxfp4' });
    const y = await dev.linear(dev.tensor(randn(K, 5), [1, K]), w, { activations: 'int8' }).toFloat32();
    expect(Array.from(y, Number.isNaN)).toEqual([false, false, true, false, false, false]);
  });

  it('groupedLinear takes the option: each group equals linear with it', async () => {
    const E = 3, K = 128, T = 6;
    const wAll = await dev.quantize(dev.tensor(randn(E * N * K, 20), [E, N, K]), { format: 'mxfp4' });
    const x = randn(T * K, 21);
    const sizes = [2, 0, 4];
    const y = await dev.groupedLinear(dev.tensor(x, [T, K]), wAll, dev.tensor(Int32Array.from(sizes), [E], 'int32'), { activations: 'int8' }).toFloat32();
    let row = 0;
    for (let e = 0; e < E; e++) {
      if (sizes[e] === 0) continue;
      const we = await dev.quantize(dev.tensor((await wAll.dequantize().toFloat32()).slice(e * N * K, (e + 1) * N * K), [N, K]), { format: 'mxfp4' });
      const ye = await dev.linear(dev.tensor(x.slice(row * K, (row + sizes[e]) * K), [sizes[e], K]), we, { activations: 'int8' }).toFloat32();
      expectClose(y.slice(row * N, (row + sizes[e]) * N), ye, 0, `expert ${e}`);
      row += sizes[e];
    }
  });

  it('a bad value is E_ARG naming the option and the choices', () => {
    const x = dev.tensor(new Float32Array(32), [1, 32]), w = dev.tensor(new Float32Array(64), [2, 32]);
    expect(() => dev.linear(x, w, { activations: 'int4' as 'int8' })).toThrow(/options\.activations must be one of 'float32', 'int8'; got 'int4'/);
    expect(() => dev.groupedLinear(x, dev.tensor(new Float32Array(64), [1, 2, 32]), dev.tensor(Int32Array.of(1), [1], 'int32'), { activations: 8 as unknown as 'int8' }))
      .toThrow(/options\.activations must be one of/);
  });
});
