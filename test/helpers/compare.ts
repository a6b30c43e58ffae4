// Numeric comparisons used by the suites.
import { expect } from 'vitest';

/** Asserts max |got - want| <= tol * (1 + |want|) elementwise; NaN must match NaN, an infinity itself. */
export function expectClose(got: ArrayLike<number>, want: ArrayLike<number>, tol: number, what = ''): void {
  expect(got.length, `${what} length`).toBe(want.length);
  let worst = 0;
  let worstAt = -1;
  for (let i = 0; i < want.length; i++) {
    const g = got[i], w = want[i];
    if (Number.isNaN(w) || Number.isNaN(g)) {
      expect(Number.isNaN(g), `${what}[${i}]: got ${g}, want ${w}`).toBe(Number.isNaN(w));
      continue;
    }
    if (g === w) continue;  // also equal infinities (inf - inf is NaN)
    const excess = Math.abs(g - w) / (1 + Math.abs(w));
    if (!(excess <= worst)) {
      worst = excess;
      worstAt = i;
    }
  }
  expect(worst, `${what} worst relative error at ${worstAt}: got ${got[worstAt]}, want ${want[worstAt]}`)
    .toBeLessThanOrEqual(tol);
}

/** Asserts two arrays are bit-identical as float32 (so -0 != +0 and NaN payloads are ignored). */
export function expectBitExact(got: Float32Array, want: Float32Array, what = ''): void {
  expect(got.length, `${what} length`).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    if (Number.isNaN(want[i])) {
      expect(Number.isNaN(got[i]), `${what}[${i}]`).toBe(true);
    } else if (!Object.is(got[i], want[i])) {
      expect.fail(`${what}[${i}]: got ${got[i]}, want ${want[i]}`);
    }
  }
}

export function expectBytes(got: Uint8Array, want: Uint8Array, what = ''): void {
  expect(got.length, `${what} length`).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i]) expect.fail(`${what}[${i}]: got ${got[i]}, want ${want[i]}`);
  }
}

/** A deterministic generator (mulberry32) so failures reproduce. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Normal-ish values (sum of uniforms), scaled. */
export function randn(n: number, seed: number, scale = 1): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (r() + r() + r() + r() - 2) * scale;
  return out;
}
