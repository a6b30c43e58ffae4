// dev.kernel({ tier: 'tensorops' }): users' kernels that use TensorOps (matmul2d and cooperative
// tensors), run in the emulator, whose cooperative-tensor layouts are scrambled by a seed and
// which runs every tensorops call under two layouts. A matmul tile written through the API's
// element access equals float64 under several seeds; the same tile written as if a thread's
// elements were row-major is reported as a layout dependence; the tier is validated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Device, KernelDescription } from '../lib/index';
import { emulatorDevice, failure, random, rejection, skipEmulator, skipReason } from './helpers/user-kernels';

const [M, N, K] = [16, 32, 48];

// c (M x N) = a (M x K) . b (K x N), row-major, by one SIMD-group: one matmul2d into a float
// cooperative destination, zeroed first, then each valid element stored where
// get_multidimensional_index says it belongs ({column, row}). `store` replaces that loop.
const STORE = [
  'for (int i = 0; i < acc.get_capacity(); ++i) {',
  '  if (!acc.is_valid_element(i)) continue;',
  '  const auto idx = acc.get_multidimensional_index(i);',
  '  c[idx[1] * N + idx[0]] = acc[i];',
  '}',
];
function tile(name: string, store = STORE): KernelDescription {
  return {
    name,
    tier: 'tensorops',
    inputs: [{ name: 'a', dtype: 'float32' }, { name: 'b', dtype: 'float32' }],
    outputs: [{ name: 'c', dtype: 'float32', shape: [M, N], init: 0 }],
    templates: { M, N, K },
    grid: [32],
    threadgroup: [32],
    source: [
      'typedef tensor<device float, dextents<int32_t, 2>, tensor_inline> view_t;',
      'view_t ta((device float*)a, dextents<int32_t, 2>(K, M), array<int32_t, 2>{1, K});',
      'view_t tb((device float*)b, dextents<int32_t, 2>(N, K), array<int32_t, 2>{1, N});',
      'constexpr auto desc = matmul2d_descriptor(M, N, static_cast<int>(dynamic_extent), false, false, false,',
      '                                          matmul2d_descriptor::mode::multiply_accumulate);',
      'matmul2d<desc, execution_simdgroup> mm;',
      'auto acc = mm.get_destination_cooperative_tensor<view_t, view_t, float>();',
      'for (int i = 0; i < acc.get_capacity(); ++i)',
      '  if (acc.is_valid_element(i)) acc[i] = 0.0f;',
      'mm.run(ta, tb, acc);',
      ...store,
    ].join('\n'),
  };
}

describe.skipIf(skipEmulator)(`user kernels with TensorOps in the emulator${skipReason}`, () => {
  let dev: Device;
  let close: () => Promise<void>;
  const savedSeed = process.env.MTOH_COOP_SEED;
  const setSeed = (value: string | undefined) => {
    if (value === undefined) delete process.env.MTOH_COOP_SEED;
    else process.env.MTOH_COOP_SEED = value;
  };
  beforeAll(async () => {
    setSeed(undefined);  // the shim's default layout first, whatever this shell set
    ({ dev, close } = await emulatorDevice());
  });
  afterAll(async () => {
    await close?.();
    setSeed(savedSeed);
  });

  it('runs a matmul2d tile written through get_multidimensional_index: float64 under several layout seeds', async () => {
    const k = await dev.kernel(tile('tile_matmul'));
    expect(k.mslSource).toContain('#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>');
    const [as, bs] = [random(M * K, 1), random(K * N, 2)];
    const a = dev.tensor(as, [M, K]), b = dev.tensor(bs, [K, N]);
    // Each run is itself made under two layouts (the seed given and one derived from it).
    for (const seed of [undefined, '1', '0xC0FFEE']) {
      setSeed(seed);
      const got = await k(a, b)[0].toFloat32();
      let worst = 0;
      for (let m = 0; m < M; m++) {
        for (let n = 0; n < N; n++) {
          let ref = 0, mag = 0;
          for (let j = 0; j < K; j++) {
            ref += as[m * K + j] * bs[j * N + n];
            mag += Math.abs(as[m * K + j] * bs[j * N + n]);
          }
          // float32 accumulation of K products: within K ulps of the sum of magnitudes.
          worst = Math.max(worst, Math.abs(got[m * N + n] - ref) / (mag * K * 2 ** -24));
        }
      }
      expect(worst, `MTOH_COOP_SEED=${seed}`).toBeLessThanOrEqual(1);
    }
    setSeed(undefined);
  });

  it('reports a kernel that assumes the cooperative layout (row-major by lane) with E_KERNEL saying what to check', async () => {
    // Valid elements only, but placed as if lane l held row-major elements l * capacity + i.
    const k = await dev.kernel(tile('tile_rowmajor', [
      'for (int i = 0; i < acc.get_capacity(); ++i) {',
      '  if (!acc.is_valid_element(i)) continue;',
      '  const int e = int(thread_index_in_simdgroup) * acc.get_capacity() + i;',
      '  if (e < M * N) c[e] = acc[i];',
      '}',
    ]));
    const [a, b] = [dev.tensor(random(M * K, 3), [M, K]), dev.tensor(random(K * N, 4), [K, N])];
    const err = await failure(k(a, b)[0]);
    expect(err.code).toBe('E_KERNEL');
    expect(err.message).toMatch(/cooperative_layout: output 'c' differs between two cooperative-tensor layouts \(MTOH_COOP_SEED 0x5eedc0de and 0x[0-9a-f]+\) from byte \d+: the kernel depends on how a cooperative tensor's elements are spread over the threads.*get_multidimensional_index/);
    // The environment's seed is the first layout (so the seeds of the test above reach the runs).
    setSeed('0x1234');
    expect((await failure(k(a, b)[0])).message).toMatch(/\(MTOH_COOP_SEED 0x1234 and 0x[0-9a-f]+\)/);
    setSeed(undefined);
    // Reading a slot that holds no element is caught in the run itself.
    const invalid = await dev.kernel(tile('tile_invalid', ['for (int i = 0; i < acc.get_capacity(); ++i) c[i] = acc[i];']));
    expect((await failure(invalid(dev.tensor(random(M * K, 3), [M, K]), dev.tensor(random(K * N, 4), [K, N]))[0])).message)
      .toMatch(/tensorops_invalid_element: cooperative tensor element \d+ of thread \d+ is not valid/);
  });

  it('checks the tier: E_ARG naming the value and the tiers, and TensorOps outside the tensorops tier does not compile', async () => {
    const good = tile('tier_check');
    expect(await rejection(dev.kernel({ ...good, tier: 'tensorop' as never }))).toBe("E_ARG: description.tier must be one of 'simdgroup', 'tensorops', 'tensorops-mx'; got 'tensorop'");
    expect(await rejection(dev.kernel({ ...good, tier: 4 as never }))).toBe("E_ARG: description.tier must be one of 'simdgroup', 'tensorops', 'tensorops-mx'; got 4");
    expect(await rejection(dev.kernel({ ...good, tier: 'simdgroup' }))).toMatch(/^E_KERNEL: kernel 'tier_check' does not compile:\n.*tier_check\.metal:1:\d+: error: use of undeclared identifier 'dextents'/);
  });
});
