// Next-token distributions from logits, compared the way the model tests compare ours with llama.cpp
// and with the float64 reference.

/** softmax of one row of logits, in float64. */
export function softmax(row: ArrayLike<number>): Float64Array {
  let m = -Infinity;
  for (let i = 0; i < row.length; i++) m = Math.max(m, row[i]);
  const p = Float64Array.from(row, (x) => Math.exp(x - m));
  const z = p.reduce((a, b) => a + b, 0);
  return p.map((x) => x / z);
}

/** KL(p || q): p the reference distribution. */
export function kl(p: Float64Array, q: Float64Array): number {
  let s = 0;
  for (let i = 0; i < p.length; i++) if (p[i] > 0) s += p[i] * Math.log(p[i] / Math.max(q[i], 1e-300));
  return s;
}

/** The index of the largest value (the first of equal ones). */
export const argmax = (r: ArrayLike<number>) => {
  let b = 0;
  for (let i = 1; i < r.length; i++) if (r[i] > r[b]) b = i;
  return b;
};
