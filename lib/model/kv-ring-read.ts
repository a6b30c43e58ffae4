// One sliding-window layer's forward over its ring (kv-ring.ts says which slot holds which
// position): the writes of the new keys and values, and what attention reads. Key order does not
// matter to attention (a softmax over a set), so the ring is read as it lies, with a mask of what
// each query sees; only the float summation order differs from reading the positions in order.
//
// A decode step writes its position first and reads the ring itself: its window is in the ring.
// A chunk of several positions cannot: writing position at + j overwrites at + j - slots, which a
// query of the same chunk before it may still see. So a chunk reads the ring as it was before the
// forward (a copy, queued before the writes) joined with the chunk's own keys, and then writes its
// last positions; a chunk at position 0 reads its own keys alone (a band mask when it is longer
// than the window), as the full cache does.
import type { Device } from '../device';
import type { QuantizedTensor, Tensor } from '../tensor';
import type { AttentionInputs, CacheDtype, Stored } from './kv-cache';
import type { RingPlan, SlidingRing } from './kv-ring';

export interface RingContext {
  dev: Device;
  dtype: CacheDtype;
  ring: SlidingRing;
  plan: RingPlan;
  /** The forward's mask of this kind, made once by `make` and shared by the sliding layers. */
  mask(key: string, make: () => Tensor): Tensor;
}

/** Writes layer's new keys and values (float32 [1, L, Hkv, D], after RoPE) and says what attention reads. */
export function ringAppend(c: RingContext, keys: Stored, values: Stored, k: Tensor, v: Tensor): AttentionInputs {
  const { dev, dtype, ring, plan } = c;
  const { at, L } = plan;
  const made: Tensor[] = [];
  // [1, L, Hkv, D] -> [1, Hkv, L, D]: float16 for a float16 ring (what it stores, so attention
  // reads the values a full cache would hold), float32 for mxfp8 (write quantizes on the way).
  const heads = (t: Tensor): Tensor => {
    const h = dtype === 'float16' ? dev.cast(t, 'float16') : t;
    if (h !== t) made.push(h);
    const r = L === 1 ? h.reshape([1, t.shape[2], 1, t.shape[3]]) : dev.transpose(h, [0, 2, 1, 3]);
    made.push(r);
    return r;
  };
  const kh = heads(k);
  const vh = heads(v);
  const write = () => {
    for (const w of plan.writes) {
      for (const [dst, src] of [[keys, kh], [values, vh]] as const) {
        const part = w.from === 0 && w.to === L ? src : dev.slice(src, { axis: 2, start: w.from, end: w.to });
        dev.write(dst, part, { axis: 2, offset: w.slot });
        if (part !== src) part.dispose();
      }
    }
  };
  const bool = (m: Uint8Array, n: number) => dev.tensor(m, [1, 1, L, n], 'bool');
  const chunk = Array.from({ length: L }, (_, i) => at + i);
  try {
    if (L === 1) {
      write();
      const seen = ring.visible(plan.after, at, 1);
      if (seen.every((x) => x === 1)) return { keys, values, copies: false };
      return { keys, values, copies: false, mask: c.mask('decode', () => bool(seen, ring.slots)) };
    }
    const columns = [...plan.before, ...chunk];
    const seen = ring.visible(columns, at, L);
    const oldSeen = seen.some((x, i) => x === 1 && i % columns.length < ring.slots);
    let out: AttentionInputs;
    if (!oldSeen) {
      // Nothing from before the chunk: its own keys, causal, or a band once longer than the window.
      const own = (h: Tensor): Stored => {
        if (dtype === 'mxfp8') return dev.quantize(h, { format: 'mxfp8' });
        made.splice(made.indexOf(h), 1);  // the caller's now (copies: true)
        return h;
      };
      const band = L > ring.window ? { mask: c.mask('chunk-alone', () => bool(ring.visible(chunk, at, L), L)) } : {};
      out = { keys: own(kh), values: own(vh), copies: true, ...band };
    } else {
      // An mxfp8 ring has no concat: both halves in float32, the chunk's through the same
      // quantization its write applies, so attention sees exactly the values the ring holds.
      const joined = (ringT: Stored, h: Tensor) => {
        const parts = dtype === 'mxfp8' ? [dev.dequantize(ringT as QuantizedTensor), roundTrip(dev, h)] : [ringT as Tensor, h];
        const t = dev.concat(parts, 2);
        if (dtype === 'mxfp8') for (const p of parts) p.dispose();
        return t;
      };
      out = { keys: joined(keys, kh), values: joined(values, vh), copies: true, mask: c.mask('chunk', () => bool(seen, columns.length)) };
    }
    write();  // after the reads above are queued: they see the ring as it was
    return out;
  } finally {
    for (const t of made) if (!t.disposed) t.dispose();
  }
}

/** x through mxfp8 and back (float32): the values an mxfp8 write of x stores. */
function roundTrip(dev: Device, x: Tensor): Tensor {
  const q = dev.quantize(x, { format: 'mxfp8' });
  const d = dev.dequantize(q, 'float32');
  q.dispose();
  return d;
}
