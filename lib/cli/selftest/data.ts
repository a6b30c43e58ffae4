// Deterministic inputs for the self-test: the same numbers on every machine, so a failure
// reproduces anywhere.

/** A generator of uniform numbers in [0, 1) (mulberry32). */
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

/** n values, roughly normal (a sum of four uniforms), times `scale`. */
export function randn(n: number, seed: number, scale = 1): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => (r() + r() + r() + r() - 2) * scale);
}

/** n values uniform in [lo, hi). */
export function uniform(n: number, seed: number, lo = -1, hi = 1): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => lo + (hi - lo) * r());
}
