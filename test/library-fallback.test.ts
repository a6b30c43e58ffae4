// Per-library fallback (native/core/library_fallback.h): a shader library that fails to compile
// on a GPU is not used again there; every op whose plan would use it is planned one tier lower
// (tensorops-mx -> tensorops -> simdgroup) or, below simdgroup, runs on the cpu backend, and
// dev.info.fallbacks names the library with Metal's message. Proven on Linux through the
// backend-neutral planning (_internal.planAvoiding) and end to end through the test-only
// asynchronous backend, which plans ops with the real dispatch plans and "compiles" each library
// on a pool thread the way the metal backend does (native/addon/async_test_backend.h), failing
// the scripted ones.
import { describe, expect, it } from 'vitest';
import { open, type Device } from '../lib/index';
import { loadBinding } from '../lib/native';
import { expectBitExact, randn } from './helpers/compare';
import { asyncTestDevice } from './helpers/devices';

interface Internal {
  planAvoiding(op: string, tier: string, unusable: string[]): { tier: string; libraries: string[] };
  asyncTestCounters(): { opsRun: number; preparedOnJsThread: number; opsByLibrary: Record<string, number> };
}
const internal = (loadBinding() as unknown as { _internal: Internal })._internal;

function thrown(fn: () => unknown): { code?: string; message: string } {
  try {
    fn();
  } catch (e) {
    return e as { code?: string; message: string };
  }
  throw new Error('expected a throw');
}

describe('planning around unusable libraries (core/library_fallback.h)', () => {
  it('with every library usable, each tier plans its own kernels', () => {
    expect(internal.planAvoiding('attention', 'tensorops-mx', [])).toEqual({ tier: 'tensorops-mx', libraries: ['attention_tensorops_mx'] });
    expect(internal.planAvoiding('attention', 'tensorops', [])).toEqual({ tier: 'tensorops', libraries: ['attention_tensorops'] });
    expect(internal.planAvoiding('linear', 'tensorops-mx', [])).toEqual({ tier: 'tensorops-mx', libraries: ['qlinear_tensorops_mx'] });
    expect(internal.planAvoiding('matmul', 'tensorops', [])).toEqual({ tier: 'tensorops', libraries: ['matmul_tensorops'] });
  });

  it('an unusable library moves the op one tier down, and only the ops that use it', () => {
    // tensorops-mx's attention (cooperative left input) failed: the tensorops kernel, P through
    // threadgroup memory.
    expect(internal.planAvoiding('attention', 'tensorops-mx', ['attention_tensorops_mx']))
      .toEqual({ tier: 'tensorops', libraries: ['attention_tensorops'] });
    // Both TensorOps attention libraries failed: simdgroup_matrix FlashAttention.
    expect(internal.planAvoiding('attention', 'tensorops-mx', ['attention_tensorops_mx', 'attention_tensorops']))
      .toEqual({ tier: 'simdgroup', libraries: ['attention'] });
    expect(internal.planAvoiding('linear', 'tensorops-mx', ['qlinear_tensorops_mx']))
      .toEqual({ tier: 'tensorops', libraries: ['qlinear_tensorops'] });
    expect(internal.planAvoiding('matmul', 'tensorops-mx', ['matmul_tensorops'])).toEqual({ tier: 'simdgroup', libraries: ['matmul'] });
    // Ops in other libraries stay where they are.
    expect(internal.planAvoiding('linear', 'tensorops-mx', ['attention_tensorops_mx', 'matmul_tensorops']))
      .toEqual({ tier: 'tensorops-mx', libraries: ['qlinear_tensorops_mx'] });
    expect(internal.planAvoiding('attention-decode', 'tensorops-mx', ['attention_tensorops_mx', 'attention_tensorops']))
      .toEqual({ tier: 'tensorops-mx', libraries: ['attention'] });
  });

  it('when every tier\'s library for the op is unusable: E_BACKEND naming them (the metal ops decline it, the cpu backend runs it)', () => {
    const e = thrown(() => internal.planAvoiding('matmul', 'tensorops', ['matmul_tensorops', 'matmul']));
    expect(e.code).toBe('E_BACKEND');
    expect(e.message).toBe('every Metal library that could run this op is unusable on this device: ' +
      'matmul_tensorops (tensorops), matmul (simdgroup)');
    // A library every tier shares (the model ops' kernels, decode): no tier avoids it.
    expect(thrown(() => internal.planAvoiding('softmax', 'tensorops-mx', ['softmax'])).message)
      .toBe('every Metal library that could run this op is unusable on this device: softmax (tensorops-mx), softmax (tensorops), softmax (simdgroup)');
    expect(thrown(() => internal.planAvoiding('linear-decode', 'simdgroup', ['qlinear'])).code).toBe('E_BACKEND');
  });
});

describe('a library that fails to compile, end to end (the asynchronous test backend)', () => {
  const K = 64;
  const x0 = randn(4 * 80 * 64, 31);
  const attentionInputs = (dev: Device) => [
    dev.tensor(x0.subarray(0, 2 * 80 * K), [1, 2, 80, K], 'float32'),
    dev.tensor(x0.subarray(2 * 80 * K, 3 * 80 * K), [1, 1, 80, K], 'float32'),
    dev.tensor(x0.subarray(3 * 80 * K, 4 * 80 * K), [1, 1, 80, K], 'float32'),
  ] as const;

  it('the ops run on the next tier\'s library, give the cpu device\'s bits, and dev.info.fallbacks names the failed library with its message', async () => {
    const cpu = await open({ backend: 'cpu', threads: 2 });
    const dev = asyncTestDevice({ tier: 'tensorops-mx', failLibraries: ['attention_tensorops_mx'], compileUs: 1000 });
    expect(dev.info.fallbacks).toBeUndefined();  // nothing has needed a library yet
    const before = internal.asyncTestCounters();
    const [q, k, v] = attentionInputs(dev);
    const o = dev.attention(q, k, v, { causal: true });
    const [cq, ck, cv] = attentionInputs(cpu);
    expectBitExact(await o.toFloat32(), await cpu.attention(cq, ck, cv, { causal: true }).toFloat32(), 'attention');
    const after = internal.asyncTestCounters();
    const ran = (library: string) => (after.opsByLibrary[library] ?? 0) - (before.opsByLibrary[library] ?? 0);
    expect(ran('attention_tensorops')).toBe(1);     // planned again, one tier down
    expect(ran('attention_tensorops_mx')).toBe(0);
    expect(after.preparedOnJsThread).toBe(before.preparedOnJsThread);  // compiles stay off the JS thread
    expect(dev.info.fallbacks).toEqual([{
      library: 'attention_tensorops_mx',
      reason: 'compiling the Metal library shaders/attention_tensorops_mx.metal failed: scripted compiler error',
    }]);
    // The same info object until the list grows.
    expect(dev.info).toBe(dev.info);
    // Later ops go straight to the usable library: no second compile attempt, no error.
    const o2 = dev.attention(q, k, v);
    expectBitExact(await o2.toFloat32(), await cpu.attention(cq, ck, cv).toFloat32(), 'attention again');
    expect(internal.asyncTestCounters().opsByLibrary.attention_tensorops - (before.opsByLibrary.attention_tensorops ?? 0)).toBe(2);
    expect(dev.info.fallbacks).toHaveLength(1);
    await dev.close();
    await cpu.close();
  });

  it('every tier\'s library failing leaves the op to the cpu backend, and the list names each', async () => {
    const cpu = await open({ backend: 'cpu', threads: 2 });
    const dev = asyncTestDevice({ tier: 'tensorops', failLibraries: ['matmul_tensorops', 'matmul'] });
    const before = internal.asyncTestCounters();
    const a = randn(9 * K, 41), b = randn(K * 16, 42);
    const y = dev.matmul(dev.tensor(a, [9, K]), dev.tensor(b, [K, 16]));
    expectBitExact(await y.toFloat32(), await cpu.matmul(cpu.tensor(a, [9, K]), cpu.tensor(b, [K, 16])).toFloat32(), 'matmul');
    const after = internal.asyncTestCounters();
    expect(after.opsRun).toBe(before.opsRun);  // declined: nothing ran on the "GPU"
    expect(dev.info.fallbacks?.map((f) => f.library)).toEqual(['matmul_tensorops', 'matmul']);
    await dev.close();
    await cpu.close();
  });

  it('without scripted failures nothing falls back and the tier\'s own libraries run', async () => {
    const dev = asyncTestDevice({ tier: 'tensorops-mx' });
    const before = internal.asyncTestCounters();
    const [q, k, v] = attentionInputs(dev);
    await dev.attention(q, k, v).toFloat32();
    const after = internal.asyncTestCounters();
    expect((after.opsByLibrary.attention_tensorops_mx ?? 0) - (before.opsByLibrary.attention_tensorops_mx ?? 0)).toBe(1);
    expect(dev.info.fallbacks).toBeUndefined();
    await dev.close();
  });
});
