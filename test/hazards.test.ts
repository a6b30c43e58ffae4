// The concurrent encoder's barrier rule (native/core/hazards.h), through binding._internal: a
// dispatch needs a barrier before it iff it reads bytes written, or writes bytes read or written,
// by a dispatch encoded since the last barrier (overlap by byte range of one buffer; a range of
// unknown extent is the whole buffer). Random sequences are checked against a brute-force
// reference; the roles the encoder gives each plan argument (read or write) are checked against
// the shaders' declarations. Nothing here runs on Metal: this is the host-side rule only.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadBinding } from '../lib/native';
import { rng } from './helpers/compare';

type Range = [buffer: number, offset: number, length: number];  // length -1: the whole buffer
type Dispatch = { reads: Range[]; writes: Range[] };
const internal = (loadBinding() as unknown as {
  _internal: {
    hazards(dispatches: (Dispatch | 'commit')[], order?: 'concurrent' | 'serial'): boolean[];
    argAccess(): Record<string, 'none' | 'read' | 'write'>;
    encoderOrder(env?: string): 'concurrent' | 'serial';
    stridedRange(dims: number[], strides: number[], offset: number, elementBytes: number): [number, number];
  };
})._internal;

const d = (reads: Range[], writes: Range[]): Dispatch => ({ reads, writes });

// Brute force: each range as its set of bytes (the random ranges lie below byte 256, so the whole
// buffer is bytes 0..255), every earlier dispatch since the last barrier compared one by one.
function bytes(r: Range): Set<string> {
  const [from, to] = r[2] < 0 ? [0, 256] : [r[1], r[1] + r[2]];
  const out = new Set<string>();
  for (let x = from; x < to; ++x) out.add(`${r[0]}:${x}`);
  return out;
}
function overlap(a: Range, b: Range): boolean {
  const bb = bytes(b);
  return [...bytes(a)].some((x) => bb.has(x));
}
function conflicts(earlier: Dispatch, next: Dispatch): boolean {
  const any = (xs: Range[], ys: Range[]) => xs.some((x) => ys.some((y) => overlap(x, y)));
  return any(next.reads, earlier.writes) || any(next.writes, earlier.writes) || any(next.writes, earlier.reads);
}
function reference(seq: Dispatch[]): boolean[] {
  const out: boolean[] = [];
  let since: Dispatch[] = [];
  for (const next of seq) {
    const barrier = since.some((e) => conflicts(e, next));
    if (barrier) since = [];
    since.push(next);
    out.push(barrier);
  }
  return out;
}

describe('hazard tracker (core/hazards.h)', () => {
  it('read after write needs a barrier', () => {
    expect(internal.hazards([d([], [[0, 0, -1]]), d([[0, 0, -1]], [[1, 0, -1]])])).toEqual([false, true]);
  });

  it('write after read needs a barrier', () => {
    expect(internal.hazards([d([[0, 0, 64]], [[1, 0, 64]]), d([], [[0, 32, 64]])])).toEqual([false, true]);
  });

  it('write after write needs a barrier', () => {
    expect(internal.hazards([d([], [[2, 100, 10]]), d([], [[2, 109, 1]])])).toEqual([false, true]);
  });

  it('read after read needs none', () => {
    expect(internal.hazards([d([[0, 0, -1], [1, 0, -1]], [[2, 0, -1]]), d([[0, 0, -1], [1, 0, -1]], [[3, 0, -1]])]))
      .toEqual([false, false]);
  });

  it('disjoint ranges of one buffer need none (a KV cache slot written while earlier slots are read)', () => {
    // slot 7 of 256-byte rows written; attention reads slots 0..6 of the same buffer
    expect(internal.hazards([d([[9, 0, 64]], [[0, 7 * 256, 256]]), d([[0, 0, 7 * 256]], [[5, 0, -1]])]))
      .toEqual([false, false]);
    // touching ranges do not overlap; one shared byte does
    expect(internal.hazards([d([], [[0, 0, 256]]), d([[0, 256, 256]], [])])).toEqual([false, false]);
    expect(internal.hazards([d([], [[0, 0, 257]]), d([[0, 256, 256]], [])])).toEqual([false, true]);
  });

  it('a range of unknown extent is the whole buffer', () => {
    expect(internal.hazards([d([], [[0, 1 << 30, 4]]), d([[0, 0, -1]], [])])).toEqual([false, true]);
    expect(internal.hazards([d([], [[0, 0, -1]]), d([[0, 2 ** 40, 1]], [])])).toEqual([false, true]);
  });

  it('other buffers and empty ranges never conflict', () => {
    expect(internal.hazards([d([], [[0, 0, -1]]), d([[1, 0, -1]], [[2, 0, -1]]), d([[0, 0, 0]], [[0, 5, 0]])]))
      .toEqual([false, false, false]);
  });

  it('a barrier clears what came before it: only dispatches since then count', () => {
    // w0, barrier (conflict), then a reader of 0 needs none: the barrier already ordered it
    expect(internal.hazards([d([], [[0, 0, -1]]), d([[0, 0, -1]], [[1, 0, -1]]), d([[0, 0, -1]], [[2, 0, -1]])]))
      .toEqual([false, true, false]);
    // ...but a reader of what the dispatch after the barrier wrote needs one
    expect(internal.hazards([d([], [[0, 0, -1]]), d([[0, 0, -1]], [[1, 0, -1]]), d([[1, 0, -1]], [])]))
      .toEqual([false, true, true]);
    // a batch's end (its commit) clears it too: the queue orders the next batch after it
    expect(internal.hazards([d([], [[0, 0, -1]]), 'commit', d([[0, 0, -1]], [])])).toEqual([false, false, false]);
  });

  it('a dispatch that reads and writes one range depends on nothing of its own', () => {
    expect(internal.hazards([d([[0, 0, 64]], [[0, 0, 64]]), d([[1, 0, 64]], [[2, 0, 64]])])).toEqual([false, false]);
  });

  it('matches a brute-force reference on random sequences', () => {
    const next = rng(27);
    let barriers = 0;
    let total = 0;
    for (let trial = 0; trial < 300; ++trial) {
      const buffers = 1 + Math.floor(next() * 4);
      const range = (): Range => {
        const whole = next() < 0.15;
        const offset = Math.floor(next() * 96);
        return [Math.floor(next() * buffers), whole ? 0 : offset, whole ? -1 : Math.floor(next() * 48)];
      };
      const seq: Dispatch[] = [];
      const n = 1 + Math.floor(next() * 24);
      for (let i = 0; i < n; ++i) {
        seq.push(d(Array.from({ length: Math.floor(next() * 4) }, range), Array.from({ length: Math.floor(next() * 3) }, range)));
      }
      const want = reference(seq);
      expect(internal.hazards(seq), JSON.stringify(seq)).toEqual(want);
      barriers += want.filter(Boolean).length;
      total += n;
    }
    // the sequences exercise both answers
    expect(barriers).toBeGreaterThan(total / 10);
    expect(barriers).toBeLessThan(total * 0.9);
  });
});

describe('METAL_TENSOROPS_SERIAL_ENCODER=1 order', () => {
  it('a barrier before every dispatch but each batch\'s first, whatever they touch', () => {
    const independent = d([[0, 0, 8]], [[1, 0, 8]]);
    const other = d([[2, 0, 8]], [[3, 0, 8]]);
    expect(internal.hazards([independent, other, other, 'commit', other, independent], 'serial'))
      .toEqual([false, true, true, false, false, true]);
    // concurrent: only the second `other` (it writes what the first wrote) waits
    expect(internal.hazards([independent, other, other, 'commit', other, independent]))
      .toEqual([false, false, true, false, false, false]);
  });
});

describe('strided copy spans (core/hazards.h strided_range)', () => {
  // Brute force: every element index the copy reaches.
  function span(dims: number[], strides: number[], offset: number, bytes: number): [number, number] {
    let lo = offset;
    let hi = offset;
    dims.forEach((n, i) => { const r = (n - 1) * strides[i]; if (r < 0) lo += r; else hi += r; });
    return [lo * bytes, (hi - lo + 1) * bytes];
  }

  it('a write() into one slot of a KV cache [H, L, D] spans that slot of each head, not the rest', () => {
    // dst [2, 16, 8] float16, one position (slot 5): dims [2, 1, 8], strides [128, 8, 1], offset 40
    const [off, len] = internal.stridedRange([2, 1, 8], [128, 8, 1], 40, 2);
    expect([off, len]).toEqual([80, (128 + 8) * 2]);
    // attention reading slots 0..4 of head 0 ([0, 80) bytes) does not overlap
    expect(internal.hazards([d([], [[0, off, len]]), d([[0, 0, 80]], [])])).toEqual([false, false]);
  });

  it('matches a brute-force span, with negative strides, and is empty for a 0 dimension', () => {
    const next = rng(7);
    for (let t = 0; t < 200; ++t) {
      const rank = 1 + Math.floor(next() * 4);
      const dims = Array.from({ length: rank }, () => 1 + Math.floor(next() * 5));
      const strides = Array.from({ length: rank }, () => Math.floor(next() * 41) - 10);
      const bytes = [1, 2, 4][Math.floor(next() * 3)];
      const offset = 200 + Math.floor(next() * 50);
      expect(internal.stridedRange(dims, strides, offset, bytes), JSON.stringify({ dims, strides, offset }))
        .toEqual(span(dims, strides, offset, bytes));
    }
    expect(internal.stridedRange([3, 0], [4, 1], 0, 4)[1]).toBe(0);
    // a span reaching below the buffer's start, or mismatched ranks: the whole buffer
    expect(internal.stridedRange([4], [-2], 3, 4)).toEqual([0, -1]);
    expect(internal.stridedRange([4, 2], [1], 0, 4)).toEqual([0, -1]);
  });
});

describe('plan argument roles (core/dispatch_plan.h arg_access)', () => {
  const root = resolve(__dirname, '..');
  const access = internal.argAccess();

  it('outputs are written, inputs read, params and unused slots touch nothing', () => {
    for (const a of ['y', 'o', 'codes', 'scales', 'dst', 'status', 'partial.o', 'partial.ml', 'rows', 'scratch']) {
      expect(access[a], a).toBe('write');
    }
    // an output of one op and an input of another: written
    for (const a of ['ids', 'positions', 'group_sizes', 'group_slots']) expect(access[a], a).toBe('write');
    for (const a of ['x', 'a', 'b', 'q', 'k', 'v', 'w.codes', 'w.scales', 'mask', 'src', 'weight', 'freqs', 'sinks']) {
      expect(access[a], a).toBe('read');
    }
    expect(access.params).toBe('none');
    expect(access.unused).toBe('none');
  });

  it('every argument bound to a buffer a shader declares writable (device, not const) is a write', () => {
    // Arg identifiers to their names, from arg_name's switch.
    const planSrc = readFileSync(join(root, 'native/core/dispatch_plan.cc'), 'utf8');
    const names = new Map([...planSrc.matchAll(/case Arg::(\w+): return "([^"]+)";/g)].map((m) => [m[1], m[2]]));
    // Buffer index macros a kernel writes through.
    const writable = new Set<string>();
    for (const f of readdirSync(join(root, 'shaders')).filter((f) => f.endsWith('.metal') || f.endsWith('.h'))) {
      const text = readFileSync(join(root, 'shaders', f), 'utf8');
      for (const m of text.matchAll(/^\s*(.*?)\[\[buffer\((\w+)\)\]\]/gm)) {
        if (/^device\b/.test(m[1]) && !/\bconst\b/.test(m[1])) writable.add(m[2]);
      }
    }
    expect(writable.size).toBeGreaterThan(10);
    // The plans' bindings: { MACRO, Arg::Name }.
    const planFiles = ['native/core/dispatch_plan.cc', ...readdirSync(join(root, 'native/core/plan'))
      .filter((f) => f.endsWith('.cc')).map((f) => `native/core/plan/${f}`)];
    let checked = 0;
    for (const f of planFiles) {
      for (const m of readFileSync(join(root, f), 'utf8').matchAll(/\{(\w+),\s*Arg::(\w+)\}/g)) {
        if (!writable.has(m[1])) continue;
        const name = names.get(m[2]);
        expect(name, m[2]).toBeDefined();
        expect(access[name!], `${f}: ${m[1]} is written by its kernel, bound as ${m[2]}`).toBe('write');
        ++checked;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });
});

describe('METAL_TENSOROPS_SERIAL_ENCODER', () => {
  it('unset, empty or 0: concurrent; 1: serial; anything else is refused', () => {
    expect(internal.encoderOrder()).toBe('concurrent');
    expect(internal.encoderOrder('')).toBe('concurrent');
    expect(internal.encoderOrder('0')).toBe('concurrent');
    expect(internal.encoderOrder('1')).toBe('serial');
    let error: unknown;
    try { internal.encoderOrder('yes'); } catch (e) { error = e; }
    expect(error).toMatchObject({ code: 'E_ARG', message: "METAL_TENSOROPS_SERIAL_ENCODER must be 0 or 1; got 'yes'" });
  });
});
