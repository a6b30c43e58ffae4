// Float64 references computed independently of the addon.

/** y[M, N] = x[M, K] @ w[N, K]^T (+ bias) in float64. */
export function linearRef(x: ArrayLike<number>, w: ArrayLike<number>, M: number, N: number, K: number,
  bias?: ArrayLike<number>): Float64Array {
  const y = new Float64Array(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let s = bias ? bias[n] : 0;
      for (let k = 0; k < K; k++) s += x[m * K + k] * w[n * K + k];
      y[m * N + n] = s;
    }
  }
  return y;
}

export interface AttentionDims {
  B: number; Hq: number; Hkv: number; Lq: number; Lk: number; D: number;
}

/**
 * Reference SDPA in float64. allowed(b, h, i, j) says whether query i may see key j; bias(b, h, i, j)
 * is added to the score. The NaN rule of check_attention (native/core/ops.h): a key hidden by
 * causal, the bool mask or an additive -Infinity (any score of -Infinity) is never read; over the
 * keys a row sees, plain float arithmetic: the max propagates NaN, and every seen key multiplies its
 * V even when its weight is 0 (0 * NaN = NaN). A row that sees no key is zeros. sinks[h] (attention
 * sinks): a logit of head h in every row's softmax denominator with no value; it joins the max
 * (NaN propagates, +Infinity gives NaN through e^(inf - inf)); a row that sees no key stays zeros.
 */
export function attentionRef(q: ArrayLike<number>, k: ArrayLike<number>, v: ArrayLike<number>,
  d: AttentionDims, opts: {
    scale?: number; causal?: boolean;
    allowed?: (b: number, h: number, i: number, j: number) => boolean;
    bias?: (b: number, h: number, i: number, j: number) => number;
    sinks?: ArrayLike<number>;
  } = {}): Float64Array {
  const { B, Hq, Hkv, Lq, Lk, D } = d;
  const scale = opts.scale ?? 1 / Math.sqrt(D);
  const group = Hq / Hkv;
  const o = new Float64Array(B * Hq * Lq * D);
  const s = new Float64Array(Lk);
  for (let b = 0; b < B; b++) for (let h = 0; h < Hq; h++) {
    const hk = Math.floor(h / group);
    for (let i = 0; i < Lq; i++) {
      const qo = ((b * Hq + h) * Lq + i) * D;
      let max = -Infinity;
      for (let j = 0; j < Lk; j++) {
        const ok = (!opts.causal || j <= i + Lk - Lq) && (!opts.allowed || opts.allowed(b, h, i, j));
        const bias = opts.bias ? opts.bias(b, h, i, j) : 0;
        if (!ok || bias === -Infinity) { s[j] = -Infinity; continue; }
        const ko = ((b * Hkv + hk) * Lk + j) * D;
        let dot = 0;
        for (let c = 0; c < D; c++) dot += q[qo + c] * k[ko + c];
        s[j] = dot * scale + bias;
        if (s[j] > max || Number.isNaN(s[j])) max = s[j];
      }
      if (max === -Infinity) continue;  // sees no key: zeros
      const sink = opts.sinks ? opts.sinks[h] : -Infinity;
      if (sink > max || Number.isNaN(sink)) max = sink;
      let sum = opts.sinks ? Math.exp(sink - max) : 0;
      for (let j = 0; j < Lk; j++) { if (s[j] !== -Infinity) { s[j] = Math.exp(s[j] - max); sum += s[j]; } }
      for (let j = 0; j < Lk; j++) {
        if (s[j] === -Infinity) continue;  // hidden: never read
        const p = s[j] / sum;
        const vo = ((b * Hkv + hk) * Lk + j) * D;
        for (let c = 0; c < D; c++) o[qo + c] += p * v[vo + c];
      }
    }
  }
  return o;
}

/** float32 -> float16 -> float32 (RNE), independent of the addon, for float16 input tests. */
export function roundToHalf(x: Float32Array): Float32Array {
  const out = new Float32Array(x.length);
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  for (let i = 0; i < x.length; i++) {
    f[0] = x[i];
    const bits = u[0];
    const exp = (bits >>> 23) & 0xff;
    if (exp === 0xff) { out[i] = x[i]; continue; }
    // Quantum of float16 at this magnitude: 2^(e-10) for normals, 2^-24 below 2^-14.
    const e = Math.max(exp - 127, -14);
    const q = 2 ** (e - 10);
    const r = x[i] / q;
    let n = Math.round(r);
    if (Math.abs(r - Math.trunc(r)) === 0.5) n = 2 * Math.round(r / 2);  // ties to even
    out[i] = Math.abs(n * q) > 65504 ? Math.sign(x[i]) * Infinity : n * q;
  }
  return out;
}
