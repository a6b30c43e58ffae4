// dev.kernel({ tier: 'tensorops-mx' }) with scale-plane inputs (issue #30): a quantized input
// declared `{ name, format, scalePlane: true }` reaches the kernel as ONE tensor, its codes with
// their E8M0 scale plane (`mto_scaled_tensor<F>`, a tensor_handle with a tensor_blockwise plane),
// as qlinear_tensorops_mx takes its weight. In the emulator the QuantizedTensor's two planes are
// bound as that tensor (emulator/tensor_arg.h); a kernel calling matmul2d on it is checked against
// the cpu backend's linear over the same QuantizedTensor and against float64 over the cpu
// backend's dequantize. The validation (E_FORMAT, E_SHAPE, the tier) and the Metal runner's glue
// (on the asynchronous test backend standing in for Metal: the tensor goes to the backend as one
// argument) are checked too. Nothing here ran on Metal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Device, KernelDescription, QuantizedTensor, Tensor } from '../lib/index';
import { asyncTestDevice } from './helpers/devices';
import { emulatorDevice, random, rejection, skipEmulator, skipReason } from './helpers/user-kernels';

const [M, BN] = [16, 32];

// y[M, N] = x[M, K] . w[N, K]^T: x float16, w the scale-plane input (K and N read from its
// extents: (K, N) innermost first); one SIMD-group per BN columns of y, one matmul2d over the
// whole K into a float cooperative destination, each element stored where
// get_multidimensional_index says ({column, row}).
function matmul(name: string, format: 'mxfp8' | 'mxfp8_e5m2' | 'mxfp4'): KernelDescription {
  return {
    name,
    tier: 'tensorops-mx',
    inputs: [{ name: 'x', dtype: 'float16' }, { name: 'w', format, scalePlane: true }],
    outputs: [{ name: 'y', dtype: 'float32' }],
    templates: { M, BN },
    threadgroup: [32],
    source: [
      'const int K = w.get_extent(0), N = w.get_extent(1);',
      'typedef tensor<device half, dextents<int32_t, 2>, tensor_inline> x_t;',
      'x_t tx((device half*)x, dextents<int32_t, 2>(K, M), array<int32_t, 2>{1, K});',
      'const int n0 = int(threadgroup_position_in_grid.x) * BN;',
      'auto sw = w.slice(0, n0);',
      'constexpr auto desc = matmul2d_descriptor(M, BN, static_cast<int>(dynamic_extent), false, true, false,',
      '                                          matmul2d_descriptor::mode::multiply_accumulate);',
      'matmul2d<desc, execution_simdgroup> mm;',
      'auto acc = mm.get_destination_cooperative_tensor<decltype(tx), decltype(sw), float>();',
      'for (int i = 0; i < acc.get_capacity(); ++i)',
      '  if (acc.is_valid_element(i)) acc[i] = 0.0f;',
      'mm.run(tx, sw, acc);',
      'for (int i = 0; i < acc.get_capacity(); ++i) {',
      '  if (!acc.is_valid_element(i)) continue;',
      '  const auto idx = acc.get_multidimensional_index(i);',
      '  y[ulong(idx[1]) * ulong(N) + ulong(n0 + idx[0])] = acc[i];',
      '}',
    ].join('\n'),
  };
}

/** A call's synchronous error as 'CODE: message' ('returned' when it did not throw). */
function thrown(f: () => unknown): string {
  try {
    f();
    return 'returned';
  } catch (e) {
    return `${(e as { code: string }).code}: ${(e as Error).message}`;
  }
}

describe.skipIf(skipEmulator)(`user kernels with scale-plane inputs (tensorops-mx) in the emulator${skipReason}`, () => {
  let dev: Device;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ dev, close } = await emulatorDevice());
  });
  afterAll(async () => close?.());

  // The weight quantized by the cpu backend; x rounded to float16 once, so the kernel, the cpu
  // linear and the float64 reference multiply the same values.
  async function check(format: 'mxfp8' | 'mxfp8_e5m2' | 'mxfp4', N: number, K: number, seed: number) {
    const k = await dev.kernel(matmul(`mx_matmul_${format}`, format));
    expect(k.runsOn).toBe('emulator');
    const elem = { mxfp8: 'metal_fp8_e4m3_format', mxfp8_e5m2: 'metal_fp8_e5m2_format', mxfp4: 'metal_fp4_e2m1_format' }[format];
    expect(k.mslSource).toContain(`mto_scaled_tensor<${elem}> w [[buffer(1)]]`);
    const x: Tensor = dev.cast(dev.tensor(random(M * K, seed), [M, K]), 'float16');
    const w: QuantizedTensor = dev.quantize(dev.tensor(random(N * K, seed + 1), [N, K]), { format });
    const got = await k(x, w, { grid: [(N / BN) * 32], shapes: { y: [M, N] } })[0].toFloat32();
    const viaLinear = await dev.linear(x, w, { outDtype: 'float32' }).toFloat32();
    const xs = await x.toFloat32(), ws = await dev.dequantize(w).toFloat32();
    let worstRef = 0, worstLinear = 0, nonzero = 0;
    for (let m = 0; m < M; m++) {
      for (let n = 0; n < N; n++) {
        let ref = 0, mag = 0;
        for (let j = 0; j < K; j++) {
          ref += xs[m * K + j] * ws[n * K + j];
          mag += Math.abs(xs[m * K + j] * ws[n * K + j]);
        }
        // float32 sums of K products in some order: within K ulps of the sum of magnitudes.
        const bound = mag * K * 2 ** -24 + 1e-30;
        worstRef = Math.max(worstRef, Math.abs(got[m * N + n] - ref) / bound);
        worstLinear = Math.max(worstLinear, Math.abs(got[m * N + n] - viaLinear[m * N + n]) / (2 * bound));
        if (got[m * N + n] !== 0) nonzero++;
      }
    }
    expect(nonzero, 'y is not all zeros').toBeGreaterThan((M * N) / 2);
    expect(worstRef, `${format}: against float64 over the cpu dequantize`).toBeLessThanOrEqual(1);
    expect(worstLinear, `${format}: against the cpu linear`).toBeLessThanOrEqual(1);
  }

  it('an mxfp8 weight as a scale-plane tensor: matmul2d equals the cpu linear and float64', async () => {
    await check('mxfp8', 64, 128, 11);
  });

  it('an mxfp4 weight as a scale-plane tensor: matmul2d equals the cpu linear and float64', async () => {
    await check('mxfp4', 64, 256, 21);
  });

  it('an mxfp8_e5m2 weight too', async () => {
    await check('mxfp8_e5m2', 32, 256, 31);
  });

  it('rejects what the scale plane cannot describe: E_FORMAT and E_SHAPE naming the input, the value and what is accepted', async () => {
    // A format with no Metal tensor element type, at dev.kernel().
    const bad = matmul('mx_bad_format', 'mxfp8');
    expect(await rejection(dev.kernel({ ...bad, inputs: [bad.inputs![0], { name: 'w', format: 'mxint8', scalePlane: true }] })))
      .toBe("E_FORMAT: description.inputs[1].format is 'mxint8', which has no Metal tensor element type: a scale-plane input takes 'mxfp8', 'mxfp8_e5m2', 'mxfp4'");
    // Scale planes need MSL 4.1.
    expect(await rejection(dev.kernel({ ...bad, tier: 'tensorops' })))
      .toBe("E_ARG: description.inputs[1] ('w') is a scale-plane input, which needs tier 'tensorops-mx' (MSL 4.1); the tier is 'tensorops'");
    expect(await rejection(dev.kernel({ ...bad, inputs: [bad.inputs![0], { name: 'w', format: 'mxfp8', scalePlane: 1 as never }] })))
      .toBe('E_ARG: description.inputs[1].scalePlane must be a boolean; got 1');

    const k = await dev.kernel(matmul('mx_checks', 'mxfp8'));
    const x = dev.cast(dev.tensor(random(M * 128, 5), [M, 128]), 'float16');
    const call = (w: unknown) => thrown(() => k(x, w as QuantizedTensor, { grid: [32], shapes: { y: [M, 32] } }));
    // Rows of 96 mxfp8 codes are 96 bytes: not a multiple of 128.
    const short = dev.quantize(dev.tensor(random(32 * 96, 6), [32, 96]), { format: 'mxfp8' });
    expect(call(short)).toBe("E_SHAPE: input 'w' (mxfp8, shape [32, 96], block 32) cannot be seen as one tensor with a scale plane: a row is 96 bytes, not a multiple of 128; a scale-plane input needs rank 1 or more, block 32 and the last dimension a multiple of 128 (rows of a multiple of 128 bytes: 128 mxfp8 codes)");
    // Another format than declared.
    const e5m2 = dev.quantize(dev.tensor(random(32 * 128, 7), [32, 128]), { format: 'mxfp8_e5m2' });
    expect(call(e5m2)).toBe("E_FORMAT: input 'w' is a scale-plane input of format 'mxfp8'; got a QuantizedTensor of format 'mxfp8_e5m2' (declare the format it has: a scale-plane input takes 'mxfp8', 'mxfp8_e5m2', 'mxfp4')");
    const int8 = dev.quantize(dev.tensor(random(32 * 128, 8), [32, 128]), { format: 'mxint8' });
    expect(call(int8)).toMatch(/^E_FORMAT: input 'w' is a scale-plane input of format 'mxfp8'; got a QuantizedTensor of format 'mxint8'/);
    expect(call(x)).toBe("E_ARG: input 'w' must be a QuantizedTensor of format 'mxfp8' (a scale-plane input); got a dense Tensor (float16)");
    // mxfp4 rows of 128 codes are 64 bytes.
    const k4 = await dev.kernel(matmul('mx_checks4', 'mxfp4'));
    const w4 = dev.quantize(dev.tensor(random(32 * 128, 9), [32, 128]), { format: 'mxfp4' });
    expect(thrown(() => k4(x, w4, { grid: [32], shapes: { y: [M, 32] } })))
      .toBe("E_SHAPE: input 'w' (mxfp4, shape [32, 128], block 32) cannot be seen as one tensor with a scale plane: a row is 64 bytes, not a multiple of 128; a scale-plane input needs rank 1 or more, block 32 and the last dimension a multiple of 256 (rows of a multiple of 128 bytes: 256 mxfp4 codes)");
  });
});

describe('scale-plane inputs on a backend that compiles kernels (the async test backend standing in for Metal)', () => {
  const dev: Device = asyncTestDevice();
  afterAll(() => dev.close());

  it('binds the quantized tensor as ONE tensor argument at its [[buffer(n)]], between the other arguments', async () => {
    const k = await dev.kernel({
      name: 'scaled_bound',
      tier: 'tensorops-mx',
      inputs: [{ name: 'x', dtype: 'float32' }, { name: 'w', format: 'mxfp4', scalePlane: true }],
      outputs: [{ name: 'record', dtype: 'int32', shape: [64] }],
      constants: [{ name: 'n', type: 'int' }],
      source: 'record[0] = 0;',
    });
    expect(k.runsOn).toBe('metal');
    expect(k.mslSource).toContain('using mto_scaled_tensor = tensor<device F, dextents<int32_t, 2>, tensor_handle,');
    expect(k.mslSource).toMatch(/device const float\* x \[\[buffer\(0\)\]\], mto_scaled_tensor<metal_fp4_e2m1_format> w \[\[buffer\(1\)\]\], device int\* record \[\[buffer\(2\)\]\], constant int& n \[\[buffer\(3\)\]\]/);
    const w = dev.quantize(dev.tensor(random(3 * 256, 1), [3, 256]), { format: 'mxfp4' });
    const [record] = k(dev.tensor(new Float32Array([1, 2]), [2]), w, { grid: [32], threadgroup: [32], constants: { n: 7 } });
    const r = Array.from(await record.data() as Int32Array);
    expect(r.slice(0, 7)).toEqual([1, 1, 1, 32, 1, 1, 4]);
    const args = Array.from({ length: 4 }, (_, i) => r.slice(7 + 4 * i, 11 + 4 * i)).sort((p, q) => p[0] - q[0]);
    // [index, kind (0 buffer, 1 bytes, 2 scale-plane tensor), bytes, ...]: the tensor's codes
    // (3 rows of 256 4-bit codes) and its scale plane (8 E8M0 bytes a row).
    expect(args[1]).toEqual([1, 2, 3 * 128, 3 * 8]);
    expect(args.map(([index, kind]) => [index, kind])).toEqual([[0, 0], [1, 2], [2, 0], [3, 1]]);
  });
});
