// dev.kernel(): users' MSL kernels, built into the MSL-on-CPU emulator and run in stream order.
// Results against float64 references and against the built-in ops; the emulator's reports of a
// planted out-of-bounds write, a divergent barrier, a race and a compile error; argument errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeElements, type Device, type Format, type QuantizedTensor } from '../lib/index';
import { rmsNormResidual } from '../examples/user-kernel.mjs';
import { attentionCall, quantizedKvAttention } from '../examples/user-kernel-attention.mjs';
import { emulatorDevice, failure, random, skipEmulator, skipReason } from './helpers/user-kernels';

describe.skipIf(skipEmulator)(`user kernels in the emulator${skipReason}`, () => {
  let dev: Device;
  let close: () => Promise<void>;
  beforeAll(async () => ({ dev, close } = await emulatorDevice()));
  afterAll(async () => close?.());

  it('computes a*x + y with a bounds check, against float64', async () => {
    const k = await dev.kernel({
      name: 'axpy',
      inputs: [{ name: 'x', dtype: 'float32' }, { name: 'y', dtype: 'float32' }],
      outputs: [{ name: 'out', dtype: 'float32', init: 0 }],
      constants: [{ name: 'a', type: 'float' }, { name: 'n', type: 'uint' }],
      source: 'const uint i = thread_position_in_grid.x;\nif (i < n) out[i] = a * x[i] + y[i];',
    });
    expect(k.runsOn).toBe('emulator');
    expect(k.mslSource).toContain('[[kernel]] void axpy(');
    const n = 1000;
    const [xs, ys] = [random(n, 1), random(n, 2)];
    const [out] = k(dev.tensor(xs, [n]), dev.tensor(ys, [n]), {
      grid: [1024], threadgroup: [128], shapes: { out: [n] }, constants: { a: 0.75, n },
    });
    const got = await out.toFloat32();
    for (let i = 0; i < n; i++) expect(got[i]).toBe(Math.fround(Math.fround(0.75 * xs[i]) + ys[i]));
  });

  it('runs the fused residual + RMSNorm example: equal to add + rmsNorm, and to float64 (float32 and float16)', async () => {
    const [rows, D] = [5, 777];
    for (const dtype of ['float32', 'float16'] as const) {
      const kernel = await dev.kernel(rmsNormResidual(dtype));
      const xs = random(rows * D, 3), rs = random(rows * D, 4), gs = random(D, 5);
      const x = dev.tensor(xs, [rows, D]).astype(dtype);
      const r = dev.tensor(rs, [rows, D]).astype(dtype);
      const gamma = dev.tensor(gs, [D]).astype(dtype);
      // Queued behind the casts without a read, and the built-in ops queued behind it.
      const [h, y] = kernel(x, r, gamma, { grid: [rows * 256], shapes: { h: [rows, D], y: [rows, D] }, constants: { D, eps: 1e-5 } });
      const y2 = dev.rmsNorm(dev.add(x, r), gamma, { eps: 1e-5 });
      const [hv, yv, y2v] = [await h.toFloat32(), await y.toFloat32(), await y2.toFloat32()];
      const [xv, rv, gv] = [await x.toFloat32(), await r.toFloat32(), await gamma.toFloat32()];
      let worst = 0;
      for (let row = 0; row < rows; row++) {
        let ss = 0;
        for (let i = 0; i < D; i++) ss += (xv[row * D + i] + rv[row * D + i]) ** 2;
        const scale = 1 / Math.sqrt(ss / D + 1e-5);
        for (let i = 0; i < D; i++) {
          const j = row * D + i, hh = xv[j] + rv[j];
          const ref = hh * scale * gv[i];
          worst = Math.max(worst, Math.abs(yv[j] - ref) / (Math.abs(ref) + 1e-2));
          expect(Math.abs(hv[j] - hh)).toBeLessThanOrEqual(dtype === 'float32' ? 1e-6 * Math.abs(hh) : 2 ** -10 * Math.abs(hh) + 1e-7);
        }
      }
      expect(worst).toBeLessThan(dtype === 'float32' ? 1e-5 : 2e-3);
      let diff = 0;
      for (let i = 0; i < yv.length; i++) diff = Math.max(diff, Math.abs(yv[i] - y2v[i]) / (Math.abs(y2v[i]) + 1e-2));
      expect(diff).toBeLessThan(dtype === 'float32' ? 1e-5 : 2e-3);
    }
  });

  // The second worked example (examples/user-kernel-attention.mjs): attention over an mxfp8 KV
  // cache, against dev.attention with the same QuantizedTensors. Both decode K and V to the same
  // float32 values (bit for bit: the test above) and compute in float32, so they differ only by
  // the order of the 64-term dot products and of the online softmax's rescaling and by exp's
  // last ulp: a few float32 ulps of the output's scale, bounded here by 1e-5 * max|v|. In
  // float16 both round that float32 value to half, so they may also differ by one half step
  // where it lies at a rounding boundary (2^-10 of the value).
  it('runs the quantized-K/V attention example: equal to dev.attention with the same mxfp8 K and V (float32 and float16, GQA, causal)', async () => {
    const D = 64;
    const cases = [
      { B: 2, Hq: 4, Hkv: 2, Lq: 3, Lk: 37, causal: false },
      { B: 1, Hq: 2, Hkv: 1, Lq: 5, Lk: 3, causal: true },  // rows 0 and 1 see no key: zeros
    ];
    for (const dtype of ['float32', 'float16'] as const) {
      const kernel = await dev.kernel(quantizedKvAttention(dtype, D));
      for (const [n, c] of cases.entries()) {
        const q = dev.tensor(random(c.B * c.Hq * c.Lq * D, 20 + n), [c.B, c.Hq, c.Lq, D]).astype(dtype);
        const vs = random(c.B * c.Hkv * c.Lk * D, 40 + n);
        const k = dev.quantize(dev.tensor(random(c.B * c.Hkv * c.Lk * D, 30 + n), [c.B, c.Hkv, c.Lk, D]), { format: 'mxfp8' });
        const v = dev.quantize(dev.tensor(vs, [c.B, c.Hkv, c.Lk, D]), { format: 'mxfp8' });
        const [o] = kernel(q, k, v, attentionCall(q.shape, k.shape, c.causal));
        const want = await dev.attention(q, k, v, { causal: c.causal }).toFloat32();
        const got = await o.toFloat32();
        const vmax = vs.reduce((a, x) => Math.max(a, Math.abs(x)), 0);
        let worst = 0;
        for (let i = 0; i < want.length; i++) {
          const bound = 1e-5 * vmax + (dtype === 'float16' ? 2 ** -10 * Math.abs(want[i]) : 0);
          worst = Math.max(worst, Math.abs(got[i] - want[i]) / bound);
        }
        expect(worst, `${dtype} ${JSON.stringify(c)}: largest difference / its bound`).toBeLessThanOrEqual(1);
        if (c.causal) expect(Array.from(got.slice(0, 2 * D)).every((x) => x === 0)).toBe(true);
      }
    }
  });

  it('reports a planted out-of-bounds write, naming the buffer and the thread; unrelated work is untouched', async () => {
    const k = await dev.kernel({
      name: 'shifted', inputs: [{ name: 'x', dtype: 'float32' }], outputs: [{ name: 'o', dtype: 'float32', shape: [64] }],
      source: 'const uint i = thread_position_in_grid.x;\no[i + 1] = x[i];',
    });
    const x = dev.tensor(random(64, 6), [64]);
    const [o] = k(x, { grid: [64], threadgroup: [32] });
    const after = dev.add(o, x);  // computed from the failed output: fails with it
    const unrelated = dev.add(x, x);
    const err = await failure(o);
    expect(err.code).toBe('E_KERNEL');
    expect(err.message).toMatch(/out-of-bounds write of buffer\(1\) 'o' \(256 bytes\) at byte offset 256/);
    expect(err.message).toMatch(/thread 31/);
    expect((await failure(after)).message).toBe(err.message);
    const xs = await x.toFloat32(), twice = await unrelated.toFloat32();
    for (let i = 0; i < 64; i++) expect(twice[i]).toBe(xs[i] * 2);
  });

  it('reports a barrier only some threads reach, and a race between threads', async () => {
    const divergent = await dev.kernel({
      name: 'divergent', outputs: [{ name: 'o', dtype: 'float32', shape: [64] }],
      source: 'const uint t = thread_position_in_threadgroup.x;\nif (t < 16) threadgroup_barrier(mem_flags::mem_threadgroup);\no[thread_position_in_grid.x] = 1.0f;',
    });
    const [a] = divergent({ grid: [64], threadgroup: [64] });
    expect((await failure(a)).message).toMatch(/barrier/);
    // Thread t reads what thread t + 1 writes, with no barrier between: the result depends on the order.
    const racy = await dev.kernel({
      name: 'racy', outputs: [{ name: 'o', dtype: 'float32', shape: [64] }],
      source: [
        'threadgroup float s[64];',
        'const uint t = thread_position_in_threadgroup.x;',
        's[t] = float(t);',
        'o[t] = s[(t + 1) % 64];',
      ].join('\n'),
    });
    const [b] = racy({ grid: [64], threadgroup: [64] });
    expect((await failure(b)).message).toMatch(/nondeterministic: output 'o' differs between the two passes/);
    // The device is still usable.
    const ok = dev.add(dev.tensor([1, 2], [2]), dev.tensor([3, 4], [2]));
    expect(Array.from(await ok.toFloat32())).toEqual([4, 6]);
  });

  it('rejects a source that does not compile with the compiler message at the user\'s line', async () => {
    const err = await dev.kernel({
      name: 'typo', outputs: [{ name: 'o', dtype: 'float32', shape: [1] }],
      source: 'const uint i = thread_position_in_grid.x;\no[i] = undefined_value;',
    }).then(() => null, (e: { code: string; message: string }) => e);
    expect(err?.code).toBe('E_KERNEL');
    expect(err?.message).toMatch(/typo\.metal:2:\d+: error: use of undeclared identifier 'undefined_value'/);
  });

  // A kernel that writes every element of each quantized input through mto_quantized_at: bit for
  // bit the library's own dequantize (the cpu backend's decode, an independent implementation in
  // native/core/formats.cc), on shapes of an odd number of rows and of blocks per row.
  it('binds quantized inputs (every format): a dequantizing kernel equals dev.dequantize bit for bit', async () => {
    const groups: { format: Format; shape: number[]; blockSize?: number }[][] = [
      [{ format: 'mxfp8', shape: [3, 5, 96] }, { format: 'mxfp4', shape: [7, 160] }, { format: 'mxint8', shape: [5, 32] }, { format: 'mxint4', shape: [3, 224] }],
      [{ format: 'mxint2', shape: [9, 96] }, { format: 'mxfp8_e5m2', shape: [1, 3, 160] }, { format: 'mxfp6_e3m2', shape: [5, 96] }, { format: 'mxfp6_e2m3', shape: [3, 32] }],
      [{ format: 'affine4', shape: [5, 3, 192], blockSize: 64 }, { format: 'affine8', shape: [7, 96], blockSize: 32 }, { format: 'affine4', shape: [3, 384], blockSize: 128 }],
    ];
    for (const [g, group] of groups.entries()) {
      const names = group.map((_, i) => `q${i}`);
      const k = await dev.kernel({
        name: `dequant${g}`,
        inputs: group.map((q, i) => ({ name: names[i], format: q.format })),
        outputs: group.map((_, i) => ({ name: `o${i}`, dtype: 'float32' as const })),
        source: [
          'const uint i = thread_position_in_grid.x;',
          ...group.map((q, i) => {
            const n = names[i];
            const planes = q.format.startsWith('affine') ? `${n}, ${n}_scales, ${n}_biases` : `${n}, ${n}_scales`;
            return `if (i < ${n}_shape.rows * ${n}_shape.cols) o${i}[i] = mto_quantized_at<${n}_format>(${planes}, ${n}_shape, i / ${n}_shape.cols, i % ${n}_shape.cols);`;
          }),
        ].join('\n'),
      });
      const qs: QuantizedTensor[] = group.map((q, i) => {
        const n = q.shape.reduce((a, b) => a * b, 1);
        const xs = random(n, 10 * g + i).map((v, j) => (j % 97 === 5 ? v * 1e3 : v));  // some blocks with a large value
        xs.fill(0, 32, 64);  // an all-zero block (scale byte 0 for MX)
        return dev.quantize(dev.tensor(xs, q.shape), { format: q.format, blockSize: q.blockSize });
      });
      const count = (q: QuantizedTensor) => q.shape.reduce((a, b) => a * b, 1);
      const most = Math.max(...qs.map(count));
      const outs = k(...qs, { grid: [Math.ceil(most / 64) * 64], threadgroup: [64], shapes: Object.fromEntries(qs.map((q, i) => [`o${i}`, [count(q)]])) });
      for (const [i, q] of qs.entries()) {
        const got = new Uint32Array((await outs[i].toFloat32()).buffer);
        const want = new Uint32Array((await q.dequantize('float32').toFloat32()).buffer);
        expect(got.length).toBe(want.length);
        let differ = 0;
        for (let j = 0; j < want.length; j++) if (got[j] !== want[j]) differ++;
        expect(differ, `${group[i].format} ${JSON.stringify(group[i].shape)}: elements differing from dequantize`).toBe(0);
      }
    }
  });

  // The same headers by #include, as our shaders include them, in a kernel with no quantized
  // input: every code of each element decoder against decodeElements (the library's codec).
  it('gives a header that includes mx_formats.h the element decoders: every code equals decodeElements', async () => {
    const decoders = [['e8m0', 'mto_decode_e8m0'], ['fp8_e4m3', 'mto_decode_fp8_e4m3'], ['fp8_e5m2', 'mto_decode_fp8_e5m2'],
      ['fp4_e2m1', 'mto_decode_fp4_e2m1'], ['int8', 'mto_decode_int8'], ['int2', 'mto_decode_int2']] as const;
    const k = await dev.kernel({
      name: 'decoders',
      header: '// our decoders\n#include "mx_formats.h"\ninline float twice(float v) { return 2.0f * v; }',
      inputs: [{ name: 'codes', dtype: 'int32' }],
      outputs: decoders.map(([e]) => ({ name: `o_${e}`, dtype: 'float32' as const, shape: [256] })),
      source: ['const uint i = thread_position_in_grid.x;', ...decoders.map(([e, f]) => `o_${e}[i] = ${f}(uint(codes[i]));`),
        'o_int8[i] = twice(o_int8[i]) * 0.5f;'].join('\n'),
    });
    const codes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const outs = k(dev.tensor(Int32Array.from(codes), [256], 'int32'), { grid: [256], threadgroup: [64] });
    for (const [i, [element]] of decoders.entries()) {
      const width = element === 'fp4_e2m1' ? 16 : element === 'int2' ? 4 : 256;  // the codec reads the low bits
      const want = new Uint32Array(decodeElements(element, codes.map((c) => c % width)).buffer);
      const got = new Uint32Array((await outs[i].toFloat32()).buffer);
      for (let c = 0; c < 256; c++) if (got[c] !== want[c]) expect(`${element} code ${c}: ${got[c].toString(16)}`).toBe(want[c].toString(16));
    }
    // A header error still names the header's own line: the include kept its line.
    const err = await dev.kernel({ name: 'badheader', header: '#include "mx_formats.h"\nconstant int broken = no_such_value;', outputs: [{ name: 'o', dtype: 'float32', shape: [1] }], source: 'o[0] = 0.0f;' })
      .then(() => null, (e: { code: string; message: string }) => e);
    expect(err?.message).toMatch(/badheader\.header\.metal:2:\d+: error: use of undeclared identifier .no_such_value./);
  });

  it('checks quantized inputs: the format at the call, dtype and format together, bad formats, too many buffers', async () => {
    const code = (p: Promise<unknown>) => p.then(() => 'resolved', (e: { code: string; message: string }) => `${e.code}: ${e.message}`);
    const base = { name: 'qcheck', outputs: [{ name: 'o', dtype: 'float32' as const, shape: [1] }], source: 'o[0] = float(k_shape.cols);' };
    expect(await code(dev.kernel({ ...base, inputs: [{ name: 'k', format: 'mxfp9' as never }] }))).toMatch(/^E_FORMAT: description.inputs\[0\].format must be one of .*'mxfp8'.*; got 'mxfp9'/);
    expect(await code(dev.kernel({ ...base, inputs: [{ name: 'k', format: 'mxfp8', dtype: 'float32' } as never] }))).toMatch(/^E_ARG: description.inputs\[0\] has a dtype \('float32'\) and a format \('mxfp8'\)/);
    expect(await code(dev.kernel({ ...base, inputs: [{ name: 'k', format: 'mxfp8' }, { name: 'k_scales', dtype: 'float32' }] }))).toMatch(/^E_ARG: .*'k_scales' names two things/);
    const many = Array.from({ length: 8 }, (_, i) => ({ name: `m${i}`, format: 'affine8' as const }));
    expect(await code(dev.kernel({ ...base, inputs: many }))).toMatch(/^E_ARG: qcheck binds 33 buffers .*; at most 31/);
    const k = await dev.kernel({ ...base, inputs: [{ name: 'k', format: 'mxfp8' }] });
    const x = dev.tensor(random(64, 9), [2, 32]);
    const opts = { grid: [1], threadgroup: [1] };
    expect(() => k(dev.quantize(x, { format: 'mxfp4' }), opts)).toThrow(/^input 'k' must be a QuantizedTensor of format 'mxfp8'; got one of format 'mxfp4'$/);
    expect(() => k(x, opts)).toThrow(/input 'k' must be a QuantizedTensor of format 'mxfp8'; got a dense Tensor \(float32\)$/);
    const [o] = k(dev.quantize(x, { format: 'mxfp8' }), opts);
    expect(Array.from(await o.toFloat32())).toEqual([32]);
  });

  it('checks descriptions and calls with TensorOpsError codes naming the argument', async () => {
    const base = { name: 'copy', inputs: [{ name: 'x', dtype: 'float32' as const }], outputs: [{ name: 'o', dtype: 'float32' as const }], source: 'o[0] = x[0];' };
    const code = (p: Promise<unknown>) => p.then(() => 'resolved', (e: { code: string; message: string }) => `${e.code}: ${e.message}`);
    expect(await code(dev.kernel({ ...base, name: '9lives' }))).toMatch(/^E_ARG: description.name must be an identifier/);
    expect(await code(dev.kernel({ ...base, outputs: [{ name: 'x', dtype: 'float32' }] }))).toMatch(/^E_ARG: .*'x' names two things/);
    expect(await code(dev.kernel({ ...base, inputs: [{ name: 'x', dtype: 'float64' as never }] }))).toMatch(/^E_DTYPE: description.inputs\[0\].dtype/);
    expect(await code(dev.kernel({ ...base, source: '  ' }))).toMatch(/^E_ARG: description.source/);
    expect(await code(dev.kernel({ ...base, extra: 1 } as never))).toMatch(/^E_ARG: description.extra is not an option/);
    const k = await dev.kernel(base);
    const x = dev.tensor([1, 2], [2]);
    expect(() => k({ grid: [1], threadgroup: [1], shapes: { o: [1] } })).toThrow(/copy takes 1 input tensor\(s\) \(x\); got 0/);
    expect(() => k(dev.tensor([1], [1], 'int32'), { grid: [1], threadgroup: [1], shapes: { o: [1] } })).toThrow(/input 'x' must be float32; got int32/);
    expect(() => k(x, { grid: [3], threadgroup: [2], shapes: { o: [1] } })).toThrow(/grid\[0\] = 3 must be a multiple of threadgroup\[0\] = 2/);
    expect(() => k(x, { grid: [2048], threadgroup: [2048], shapes: { o: [1] } })).toThrow(/at most 1024/);
    expect(() => k(x, { grid: [1], threadgroup: [1] })).toThrow(/output 'o' has no shape/);
    const [o] = k(x, { grid: [1], threadgroup: [1], shapes: { o: [1] } });
    expect(Array.from(await o.toFloat32())).toEqual([1]);
  });
});
