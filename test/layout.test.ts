// Layout ops (docs/design/API.md "Layout"): transpose, slice, concat and write, for every dtype,
// against index arithmetic in JS; write as a KV cache append that attention then reads.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Device } from '../lib/index';
import { expectClose, randn } from './helpers/compare';
import { testDevices } from './helpers/devices';
import { attentionRef } from './helpers/reference';

let devices: [string, Device][];
beforeAll(async () => { devices = await testDevices(); });

const strides = (s: number[]) => s.map((_, i) => s.slice(i + 1).reduce((p, d) => p * d, 1));
const count = (s: number[]) => s.reduce((p, d) => p * d, 1);
function unravel(i: number, s: number[]): number[] {
  const out = new Array(s.length);
  for (let d = s.length - 1; d >= 0; d--) { out[d] = i % s[d]; i = Math.floor(i / s[d]); }
  return out;
}

describe('transpose, slice, concat', () => {
  it('transpose: every permutation of a rank-4 tensor, and int32 data', async () => {
    for (const [name, dev] of devices) {
      const shape = [2, 3, 4, 5];
      const x = randn(count(shape), 1);
      const xt = dev.tensor(x, shape);
      const ids = dev.tensor(Int32Array.from({ length: 120 }, (_, i) => i * 7 - 300), shape, 'int32');
      const perms = [[0, 1, 2, 3], [0, 2, 1, 3], [3, 2, 1, 0], [1, 3, 0, 2], [0, 1, 3, 2]];
      for (const perm of perms) {
        const out = perm.map((p) => shape[p]);
        const want = Float32Array.from({ length: count(out) }, (_, i) => {
          const idx = unravel(i, out);
          return x[perm.reduce((s, p, k) => s + idx[k] * strides(shape)[p], 0)];
        });
        const y = dev.transpose(xt, perm);
        expect(y.shape).toEqual(out);
        expect(await y.toFloat32()).toEqual(want);
        const yi = await dev.transpose(ids, perm).data();
        expect(yi).toBeInstanceOf(Int32Array);
        expect(Array.from(yi)).toEqual(Array.from(want, (_, i) => {
          const idx = unravel(i, out);
          return perm.reduce((s, p, k) => s + idx[k] * strides(shape)[p], 0) * 7 - 300;
        }));
      }
      expect(() => dev.transpose(xt, [0, 1, 1, 2])).toThrow(expect.objectContaining({ code: 'E_ARG', message: expect.stringContaining('twice') }));
      void name;
    }
  });

  it('slice and concat along each axis are inverse; bfloat16 bits pass unchanged', async () => {
    for (const [, dev] of devices) {
      const shape = [3, 4, 5];
      const bits = Uint16Array.from({ length: 60 }, (_, i) => 0x3f80 + i);
      const x = dev.tensor(bits, shape, 'bfloat16');
      for (let axis = 0; axis < 3; axis++) {
        const n = shape[axis];
        const parts = [dev.slice(x, { axis, start: 0, end: 1 }), dev.slice(x, { axis, start: 1, end: n - 1 }), dev.slice(x, { axis: axis - 3, start: n - 1, end: n })];
        expect(parts[1].shape[axis]).toBe(n - 2);
        const back = dev.concat(parts, axis);
        expect(back.shape).toEqual(shape);
        expect(await back.data()).toEqual(bits);
      }
      expect(() => dev.slice(x, { axis: 0, start: 2, end: 1 }))
        .toThrow(expect.objectContaining({ code: 'E_ARG', message: expect.stringContaining('need 0 <= start <= end <= 3') }));
      expect(() => dev.concat([x, dev.tensor(new Float32Array(60), shape)], 0)).toThrow(expect.objectContaining({ code: 'E_DTYPE' }));
      expect(() => dev.concat([x, dev.tensor(new Uint16Array(12), [3, 4, 1], 'bfloat16')], 0)).toThrow(expect.objectContaining({ code: 'E_SHAPE' }));
    }
  });
});

describe('empty dimensions', () => {
  it('transpose, slice (start == end), concat and reshape of empty tensors; concat skips empty parts', async () => {
    for (const [name, dev] of devices) {
      const e = dev.tensor(new Int32Array(0), [2, 0, 3], 'int32');
      const t = dev.transpose(e, [2, 0, 1]);
      expect(t.shape).toEqual([3, 2, 0]);
      expect(await t.data()).toEqual(new Int32Array(0));
      const x = dev.tensor(Float32Array.from({ length: 12 }, (_, i) => i), [3, 4]);
      for (const [axis, start, shape] of [[0, 0, [0, 4]], [0, 3, [0, 4]], [1, 2, [3, 0]], [-1, 4, [3, 0]]] as const) {
        const s = dev.slice(x, { axis, start, end: start });
        expect(s.shape, `${name} slice ${axis} ${start}`).toEqual(shape);
        expect(await s.toFloat32()).toEqual(new Float32Array(0));
      }
      expect(dev.slice(e, { axis: 1, start: 0, end: 0 }).shape).toEqual([2, 0, 3]);
      // concat: empty tensors add nothing along the axis; all empty gives an empty tensor.
      const c = dev.concat([dev.tensor(new Float32Array(0), [0, 4]), x, dev.slice(x, { axis: 0, start: 1, end: 1 }), x], 0);
      expect(c.shape).toEqual([6, 4]);
      expect(Array.from(await c.toFloat32())).toEqual([...Array(12).keys(), ...Array(12).keys()]);
      const c1 = dev.concat([x, dev.tensor(new Float32Array(0), [3, 0]), x], 1);
      expect(Array.from(await c1.toFloat32())).toEqual([0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7, 8, 9, 10, 11, 8, 9, 10, 11]);
      const none = dev.concat([dev.tensor(new Float32Array(0), [0, 4]), dev.tensor(new Float32Array(0), [0, 4])], 0);
      expect(none.shape).toEqual([0, 4]);
      expect(await none.toFloat32()).toEqual(new Float32Array(0));
      expect(() => dev.concat([x, dev.tensor(new Float32Array(0), [0, 5])], 0)).toThrow(expect.objectContaining({ code: 'E_SHAPE' }));
      // reshape: a view; a -1 beside a 0 cannot be worked out (PyTorch's rule).
      expect(e.reshape([0, 6]).shape).toEqual([0, 6]);
      expect(e.reshape([3, -1, 2]).shape).toEqual([3, 0, 2]);
      expect(() => e.reshape([0, -1])).toThrow(expect.objectContaining({ code: 'E_SHAPE', message: expect.stringContaining('cannot be worked out') }));
      expect(() => e.reshape([1])).toThrow(expect.objectContaining({ code: 'E_SHAPE' }));
    }
  });

  it('write: an empty src writes nothing (offset up to the axis length); an empty dst takes only an empty src', async () => {
    for (const [name, dev] of devices) {
      const dst = dev.tensor([1, 2, 3, 4, 5, 6], [2, 3]);
      dev.write(dst, dev.tensor(new Float32Array(0), [0, 3]), { axis: 0, offset: 2 });
      dev.write(dst, dev.tensor(new Float32Array(0), [2, 0]), { axis: 1, offset: 1 });
      expect(Array.from(await dst.toFloat32()), name).toEqual([1, 2, 3, 4, 5, 6]);
      expect(() => dev.write(dst, dev.tensor(new Float32Array(0), [0, 3]), { axis: 0, offset: 3 }))
        .toThrow(expect.objectContaining({ code: 'E_ARG', message: expect.stringContaining('offset must be in [0, 2]') }));
      const empty = dev.tensor(new Float32Array(0), [0, 3]);
      dev.write(empty, dev.tensor(new Float32Array(0), [0, 3]), { axis: 0, offset: 0 });
      expect(() => dev.write(empty, dev.tensor([1, 2, 3], [1, 3]), { axis: 0, offset: 0 })).toThrow(expect.objectContaining({ code: 'E_ARG' }));
      // A quantized (mxfp8) cache: an empty append, dense or quantized, along any axis.
      const cache = dev.quantize(dev.tensor(randn(2 * 4 * 32, 3), [2, 4, 32]), { format: 'mxfp8' });
      const before = await dev.dequantize(cache).toFloat32();
      dev.write(cache, dev.tensor(new Float32Array(0), [2, 0, 32]), { axis: 1, offset: 4 });
      dev.write(cache, dev.quantize(dev.tensor(new Float32Array(0), [2, 4, 0]), { format: 'mxfp8' }), { axis: 2, offset: 32 });
      expect(await dev.dequantize(cache).toFloat32()).toEqual(before);
    }
  });
});

describe('write (the KV cache append)', () => {
  it('appending one position per step over many steps, attention over the cache equals attention over the concatenated keys', async () => {
    for (const [name, dev] of devices) {
      const [Hkv, Hq, D, steps] = [2, 4, 64, 12];
      const kc = dev.tensor(new Float32Array(Hkv * steps * D), [1, Hkv, steps, D]);
      const vc = dev.tensor(new Float32Array(Hkv * steps * D), [1, Hkv, steps, D]);
      const ks: Float32Array[] = [], vs: Float32Array[] = [];
      const outs = [];
      for (let t = 0; t < steps; t++) {
        const k = randn(Hkv * D, 100 + t), v = randn(Hkv * D, 200 + t), q = randn(Hq * D, 300 + t);
        ks.push(k); vs.push(v);
        dev.write(kc, dev.tensor(k, [1, Hkv, 1, D]), { axis: 2, offset: t });
        dev.write(vc, dev.tensor(v, [1, Hkv, 1, D]), { axis: 2, offset: t });
        const kView = dev.slice(kc, { axis: 2, start: 0, end: t + 1 }), vView = dev.slice(vc, { axis: 2, start: 0, end: t + 1 });
        outs.push([q, dev.attention(dev.tensor(q, [1, Hq, 1, D]), kView, vView)] as const);
      }
      for (let t = 0; t < steps; t++) {
        // [1, Hkv, t + 1, D] from the per-step rows
        const k = new Float32Array(Hkv * (t + 1) * D), v = new Float32Array(Hkv * (t + 1) * D);
        for (let h = 0; h < Hkv; h++) for (let j = 0; j <= t; j++) {
          k.set(ks[j].subarray(h * D, (h + 1) * D), (h * (t + 1) + j) * D);
          v.set(vs[j].subarray(h * D, (h + 1) * D), (h * (t + 1) + j) * D);
        }
        const want = attentionRef(outs[t][0], k, v, { B: 1, Hq, Hkv, Lq: 1, Lk: t + 1, D });
        expectClose(await outs[t][1].toFloat32(), want, 2e-5, `${name} step ${t}`);
      }
    }
  });

  it('orders reads: one queued before the write sees the old values, views and later ops the new', async () => {
    for (const [, dev] of devices) {
      const cache = dev.tensor(new Float32Array(8).fill(1), [2, 4]);
      const view = cache.reshape([8]);
      const before = dev.add(cache, cache);
      dev.write(cache, dev.tensor([5, 6], [2, 1]), { axis: 1, offset: 3 });
      const after = dev.add(view, view);
      expect(Array.from(await before.toFloat32())).toEqual([2, 2, 2, 2, 2, 2, 2, 2]);
      expect(Array.from(await after.toFloat32())).toEqual([2, 2, 2, 10, 2, 2, 2, 12]);
      expect(Array.from(await view.toFloat32())).toEqual([1, 1, 1, 5, 1, 1, 1, 6]);
    }
  });

  it('a read called before a write sees the old values, one called after it the new, small or large (copied off the JS thread)', async () => {
    for (const [name, dev] of devices) {
      for (const n of [8, 1 << 19]) {  // 32 bytes, and 2 MiB (copied on libuv's pool)
        const t = dev.add(dev.tensor(new Float32Array(n).fill(1), [2, n / 2]), dev.tensor([1], [1]));  // queued: 2
        const before = t.toFloat32();
        dev.write(t, dev.tensor(new Float32Array(n / 2).fill(7), [1, n / 2]), { axis: 0, offset: 1 });
        const after = t.toFloat32();
        // Ops queued past the backpressure limit while the write waits for `before`: no deadlock.
        let y = dev.tensor([0], [1]);
        for (let i = 0; i < 1500; i++) y = dev.add(y, dev.tensor([1], [1]));
        const b = await before, a = await after;
        expect(b.every((v) => v === 2), `${name} ${n} before`).toBe(true);
        expect(a.subarray(0, n / 2).every((v) => v === 2) && a.subarray(n / 2).every((v) => v === 7), `${name} ${n} after`).toBe(true);
        expect(Array.from(await y.toFloat32())).toEqual([1500]);
      }
    }
  });

  it('a src that is a view of dst itself (the only overlap a write can have) leaves it as it was', async () => {
    for (const [name, dev] of devices) {
      const t = dev.tensor(Float32Array.from({ length: 12 }, (_, i) => i), [2, 6]);
      dev.write(t.reshape([4, 3]), t.reshape([4, 3]), { axis: 0, offset: 0 });
      expect(Array.from(await t.toFloat32()), name).toEqual(Array.from({ length: 12 }, (_, i) => i));
    }
  });

  it('validates dtype, shape and offset', () => {
    const [, dev] = devices[0];
    const dst = dev.tensor(new Float32Array(8), [2, 4]);
    expect(() => dev.write(dst, dev.tensor([1, 2], [2, 1], 'float16'), { axis: 1, offset: 0 })).toThrow(expect.objectContaining({ code: 'E_DTYPE' }));
    expect(() => dev.write(dst, dev.tensor([1, 2, 3], [3, 1]), { axis: 1, offset: 0 })).toThrow(expect.objectContaining({ code: 'E_SHAPE' }));
    expect(() => dev.write(dst, dev.tensor([1, 2], [2, 1]), { axis: 1, offset: 4 }))
      .toThrow(expect.objectContaining({ code: 'E_ARG', message: expect.stringContaining('offset must be in [0, 3]') }));
  });
});

describe("attention's 'blhd' layout", () => {
  it('equals attention over [B, H, L, D] operands, for prefill (causal) and decode', async () => {
    for (const [name, dev] of devices) {
      const [B, Hq, Hkv, D] = [2, 4, 2, 64];
      for (const [Lq, Lk, causal] of [[5, 5, true], [1, 9, false]] as const) {
        const q = randn(B * Lq * Hq * D, 1), k = randn(B * Lk * Hkv * D, 2), v = randn(B * Lk * Hkv * D, 3);
        // [B, L, H, D] -> [B, H, L, D] in JS, for the reference.
        const heads = (x: Float32Array, L: number, H: number) => {
          const out = new Float32Array(x.length);
          for (let b = 0; b < B; b++) for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) {
            out.set(x.subarray(((b * L + l) * H + h) * D, ((b * L + l) * H + h + 1) * D), ((b * H + h) * L + l) * D);
          }
          return out;
        };
        const o = dev.attention(dev.tensor(q, [B, Lq, Hq, D]), dev.tensor(k, [B, Lk, Hkv, D]), dev.tensor(v, [B, Lk, Hkv, D]),
          { causal, layout: 'blhd' });
        expect(o.shape).toEqual([B, Lq, Hq, D]);
        const want = attentionRef(heads(q, Lq, Hq), heads(k, Lk, Hkv), heads(v, Lk, Hkv), { B, Hq, Hkv, Lq, Lk, D }, { causal });
        // The reference is [B, Hq, Lq, D]: compare through the same swap.
        const got = heads(await o.toFloat32(), Lq, Hq);
        expectClose(got, want, 2e-5, `${name} Lq ${Lq}`);
      }
      const kq = dev.quantize(dev.tensor(randn(64, 4), [1, 1, 1, 64]), { format: 'mxfp8' });
      expect(() => dev.attention(dev.tensor(randn(64, 5), [1, 1, 1, 64]), kq, kq, { layout: 'blhd' }))
        .toThrow(expect.objectContaining({ code: 'E_ARG' }));
    }
  });
});

describe('write into a quantized (mxfp8) cache', () => {
  it('appends one position per step, quantized on the way; the cache decodes to the steps\' own quantization and attention reads it', async () => {
    for (const [name, dev] of devices) {
      const [Hkv, ctx, D, Hq] = [2, 6, 64, 4];
      const cache = dev.quantize(dev.tensor(new Float32Array(Hkv * ctx * D), [1, Hkv, ctx, D]), { format: 'mxfp8' });
      const want = new Float32Array(Hkv * ctx * D);
      for (let t = 0; t < ctx; t++) {
        const k = randn(Hkv * D, 40 + t, 3);
        dev.write(cache, dev.tensor(k, [1, Hkv, 1, D]), { axis: 2, offset: t });
        const own = await dev.dequantize(dev.quantize(dev.tensor(k, [1, Hkv, 1, D]), { format: 'mxfp8' })).toFloat32();
        for (let h = 0; h < Hkv; h++) want.set(own.subarray(h * D, (h + 1) * D), (h * ctx + t) * D);
      }
      const dense = dev.dequantize(cache);
      expect(Array.from(await dense.toFloat32()), name).toEqual(Array.from(want));
      const q = dev.tensor(randn(Hq * D, 9), [1, Hq, 1, D]);
      expectClose(await dev.attention(q, cache, cache).toFloat32(), await dev.attention(q, dense, dense).toFloat32(), 1e-5, `${name} attention`);
      // An already-quantized src of the same format goes in as it is; along the last axis, whole blocks.
      const row = dev.quantize(dev.tensor(randn(Hkv * D, 99), [1, Hkv, 1, D]), { format: 'mxfp8' });
      dev.write(cache, row, { axis: 2, offset: 0 });
      const head = await dev.dequantize(row).toFloat32();
      const all = await dev.dequantize(cache).toFloat32();
      expect(Array.from(all.subarray(0, D))).toEqual(Array.from(head.subarray(0, D)));
      const half = dev.tensor(randn(Hkv * ctx * 32, 5), [1, Hkv, ctx, 32]);
      dev.write(cache, half, { axis: 3, offset: 32 });
      expect(() => dev.write(cache, half, { axis: 3, offset: 16 })).toThrow(expect.objectContaining({ code: 'E_ARG', message: expect.stringContaining('multiples of its block size 32') }));
      expect(() => dev.write(cache, dev.quantize(dev.tensor(randn(Hkv * D, 1), [1, Hkv, 1, D]), { format: 'mxfp4' }), { axis: 2, offset: 0 }))
        .toThrow(expect.objectContaining({ code: 'E_FORMAT' }));
    }
  });
});
