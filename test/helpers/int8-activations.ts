// Float64 reference for linear's `activations: 'int8'`: x quantized per block of 32 by the rule
// docs/design/API.md states (d = max|x| / 127, q = x * (127 / max|x|) rounded half to even, in
// float32), then exact sums. Written from the rule, not from the kernels.
import { rint } from './mlx-quant';

export interface QuantizedX {
  q: Int8Array;
  d: Float64Array;  // one per block of 32
}

export function quantizeX(x: ArrayLike<number>): QuantizedX {
  const blocks = x.length / 32;
  const q = new Int8Array(x.length), d = new Float64Array(blocks);
  for (let b = 0; b < blocks; b++) {
    let amax = 0;
    for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(x[b * 32 + i]));
    d[b] = Math.fround(amax / 127);
    const id = amax > 0 ? Math.fround(127 / amax) : 0;
    for (let i = 0; i < 32; i++) {
      const v = Number.isFinite(id) ? Math.fround(x[b * 32 + i] * id) : (x[b * 32 + i] * 127) / amax;
      q[b * 32 + i] = Math.max(-127, Math.min(127, rint(v)));
    }
  }
  return { q, d };
}

/** y[M, N] = x' @ w^T in float64, x' the quantized x (d * q), w the weights' values (dequantized: exact). */
export function int8LinearRef(x: ArrayLike<number>, w: ArrayLike<number>, M: number, N: number, K: number): Float64Array {
  const y = new Float64Array(M * N);
  for (let m = 0; m < M; m++) {
    const { q, d } = quantizeX(Array.prototype.slice.call(x, m * K, (m + 1) * K));
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let b = 0; b < K / 32; b++) {
        let part = 0;
        for (let i = 0; i < 32; i++) part += w[n * K + b * 32 + i] * q[b * 32 + i];
        s += d[b] * part;
      }
      y[m * N + n] = s;
    }
  }
  return y;
}
