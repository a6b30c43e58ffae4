// Deterministic inputs and the error measures the checks use.

/** Uniform values in [-scale, scale), from a xorshift32 stream (same data every run). */
export function randomFloats(n, seed, scale = 1) {
  const a = new Float32Array(n);
  let s = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    a[i] = ((s / 4294967296) * 2 - 1) * scale;
  }
  return a;
}

/** max |a - b|. */
export function maxAbsDiff(a, b) {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = d;  // NaN propagates
  }
  return m;
}

/** ||a - ref|| / ||ref|| (root mean square error relative to the reference's RMS). */
export function relRms(a, ref) {
  if (a.length !== ref.length) throw new Error(`length ${a.length} vs ${ref.length}`);
  let num = 0, den = 0;
  for (let i = 0; i < a.length; i++) {
    const d = a[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return den > 0 ? Math.sqrt(num / den) : Math.sqrt(num);
}
