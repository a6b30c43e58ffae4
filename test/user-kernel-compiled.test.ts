// dev.kernel() on a backend that compiles MSL (metal), short of Metal itself: the asynchronous test
// backend (native/addon/async_test_kernel.h) stands in for the compiler and the GPU, recording what
// each run was given. What this proves: the compile is awaited off the JS thread and its failure is
// E_KERNEL at the user's line; every [[buffer(n)]] of the generated signature is bound in order
// (tensors, a quantized tensor's planes, its shape and the constants as bytes, the outputs); output
// init values are filled; the pipeline's thread limit is checked at the call. What it cannot prove:
// that Metal compiles and runs the source (type-checked only: npm run check:metal).
import { afterAll, describe, expect, it } from 'vitest';
import type { Device } from '../lib/index';
import { loadBinding, type NativeDeviceHandle } from '../lib/native';
import { asyncTestDevice } from './helpers/devices';

describe('user kernels on a backend that compiles them (the async test backend standing in for Metal)', () => {
  const dev: Device = asyncTestDevice();
  afterAll(() => dev.close());

  it('binds every buffer of the signature in order, fills init values, and runs in the stream', async () => {
    const k = await dev.kernel({
      name: 'bound',
      inputs: [{ name: 'x', dtype: 'float32' }, { name: 'w', format: 'affine4' }],
      outputs: [{ name: 'a', dtype: 'float16', init: 1.5 }, { name: 'record', dtype: 'int32', shape: [64] }],
      constants: [{ name: 'n', type: 'uint' }, { name: 'f', type: 'float' }, { name: 'flag', type: 'bool' }],
      source: 'record[0] = 0;',
    });
    expect(k.runsOn).toBe('metal');
    expect(k.mslSource).toMatch(/device const float\* x \[\[buffer\(0\)\]\], device const uchar\* w \[\[buffer\(1\)\]\], device const half\* w_scales \[\[buffer\(2\)\]\], device const half\* w_biases \[\[buffer\(3\)\]\], constant mto_quantized_shape& w_shape \[\[buffer\(4\)\]\], device half\* a \[\[buffer\(5\)\]\], device int\* record \[\[buffer\(6\)\]\], constant uint& n \[\[buffer\(7\)\]\], constant float& f \[\[buffer\(8\)\]\], constant bool& flag \[\[buffer\(9\)\]\]/);
    const x = dev.tensor(new Float32Array([7, 8, 9]), [3]);
    const w = dev.quantize(dev.tensor(new Float32Array(3 * 128).fill(0.25), [3, 128]), { format: 'affine4', blockSize: 64 });
    // Queued behind x + x, which it reads: the run waits in the stream.
    const [a, record] = k(dev.add(x, x), w, { grid: [64, 2], threadgroup: [32, 1], shapes: { a: [5] }, constants: { n: 4000000000, f: -2.5, flag: true } });
    const r = Array.from(await record.data() as Int32Array);
    expect(r.slice(0, 7)).toEqual([2, 2, 1, 32, 1, 1, 10]);
    // In [[buffer(n)]] order (the addon lists the outputs after the other arguments).
    const args = Array.from({ length: 10 }, (_, i) => r.slice(7 + 4 * i, 11 + 4 * i)).sort((p, q) => p[0] - q[0]);
    const f32 = (v: number) => new Int32Array(new Float32Array([v]).buffer)[0];
    expect(args.map(([index, bytes]) => [index, bytes])).toEqual([[0, 0], [1, 0], [2, 0], [3, 0], [4, 1], [5, 0], [6, 0], [7, 1], [8, 1], [9, 1]]);
    expect(args[0].slice(2)).toEqual([12, f32(14)]);            // x + x, not x: the run came after the add
    expect(args[1][2]).toBe(3 * 64);                             // codes: 3 rows of 128 4-bit codes
    expect(args[2][2]).toBe(3 * 2 * 2);                          // scales: 2 groups a row, float16
    expect(args[3][2]).toBe(3 * 2 * 2);                          // biases
    expect(args[4].slice(2)).toEqual([16, 3]);                   // w_shape: rows, cols, row_bytes, block
    expect(args[5][2]).toBe(10);                                 // a: 5 float16
    expect(args[7].slice(2)).toEqual([4, 4000000000 | 0]);       // a uint's bits
    expect(args[8].slice(2)).toEqual([4, f32(-2.5)]);
    expect(args[9].slice(2)).toEqual([1, 1]);
    expect(Array.from(await a.toFloat32())).toEqual([1.5, 1.5, 1.5, 1.5, 1.5]);
  });

  // lib/ always passes what compileKernel gave; the addon still refuses anything else, naming it.
  it('the addon refuses a program it did not make and bad geometry with E_ARG, and answers null on the cpu backend', () => {
    const Native = loadBinding().NativeDevice as unknown as new (threads: number, backend: string, tier: string, test: Record<string, unknown>) => NativeDeviceHandle;
    const native = new Native(1, 'cpu', '', { asyncTestBackend: true });
    const code = (f: () => unknown) => { try { f(); return 'returned'; } catch (e) { return `${(e as { code: string }).code}: ${(e as Error).message}`; } };
    expect(code(() => native.runKernel({} as never, [1, 1, 1, 1, 1, 1], [], []))).toMatch(/^E_ARG: program must be what compileKernel resolved with; got/);
    expect(code(() => native.runKernel(42 as never, [1, 1, 1, 1, 1, 1], [], []))).toMatch(/^E_ARG: program must be/);
    const cpu = new Native(1, 'cpu', '', {});
    expect(cpu.compileKernel('k', 'kernel void k() {}', 'simdgroup')).toBeNull();
    expect(code(() => native.compileKernel('k', 'kernel void k() {}', 'tensorop' as never))).toBe("E_ARG: tier must be 'simdgroup', 'tensorops' or 'tensorops-mx'; got 'tensorop'");
    native.close();
    cpu.close();
  });

  // The tier reaches the backend (the metal backend compiles a tensorops kernel at MSL 4.0 and
  // refuses it, E_BACKEND, on a device below the tier: type-checked only), and the source has TensorOps.
  it('compiles a tensorops kernel with the TensorOps headers included and mpp::tensor_ops opened', async () => {
    const k = await dev.kernel({ name: 'tops', tier: 'tensorops', outputs: [{ name: 'o', dtype: 'float32', shape: [1] }], source: 'o[0] = 1.0f;' });
    expect(k.runsOn).toBe('metal');
    expect(k.mslSource).toMatch(/^#include <metal_stdlib>\n#include <metal_tensor>\n#include <MetalPerformancePrimitives\/MetalPerformancePrimitives.h>\nusing namespace metal;\nusing namespace mpp::tensor_ops;\n/);
    const plain = await dev.kernel({ name: 'plain', outputs: [{ name: 'o', dtype: 'float32', shape: [1] }], source: 'o[0] = 1.0f;' });
    expect(plain.mslSource).not.toMatch(/metal_tensor|mpp/);
  });

  // What the metal backend gives setThreadgroupMemoryLength:atIndex: (encoders type-checked only):
  // each entry's bytes rounded up to 16, at its [[threadgroup(i)]] index, sized by the call.
  it('hands threadgroup memory to the backend: index and bytes rounded up to 16, per call', async () => {
    const k = await dev.kernel({
      name: 'tgmem', outputs: [{ name: 'record', dtype: 'int32', shape: [64] }], source: 'record[0] = 0;',
      threadgroupMemory: [{ name: 's', dtype: 'float16', length: 5 }, { name: 't', dtype: 'float32' }],
    });
    expect(k.mslSource).toContain('threadgroup half* s [[threadgroup(0)]], threadgroup float* t [[threadgroup(1)]]');
    const [record] = k({ grid: [32], threadgroup: [32], threadgroupMemory: { t: 9 } });
    const r = Array.from(await record.data() as Int32Array);
    // 6 geometry values, the argument count (1), its 4 values, then (index, bytes) pairs.
    expect(r.slice(11, 15)).toEqual([0, 16, 1, 48]);
  });

  it("rejects a source the compiler refuses with E_KERNEL at the user's line; checks the pipeline's thread limit", async () => {
    const err = await dev.kernel({
      name: 'broken', outputs: [{ name: 'o', dtype: 'float32', shape: [1] }], source: 'o[0] = 1.0f;\n#error no',
    }).then(() => null, (e: { code: string; message: string }) => e);
    expect(err?.code).toBe('E_KERNEL');
    expect(err?.message).toMatch(/^kernel 'broken' does not compile:\nbroken\.metal:2:3: error/);
    const k = await dev.kernel({ name: 'wide', outputs: [{ name: 'o', dtype: 'float32', shape: [1024] }], source: 'o[0] = 1.0f;' });
    expect(() => k({ grid: [512], threadgroup: [512] })).toThrow(/threadgroup \[512, 1, 1\] has 512 threads; wide's pipeline allows at most 256 on this GPU/);
  });
});
