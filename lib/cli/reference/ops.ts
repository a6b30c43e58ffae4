// linear, matmul and attention for the self-test's reference: each result in float64 with, per
// output element, a bound on the error of a float32 computation of it (API.md: ops accumulate in
// float32). The bounds are the standard worst-case ones (Higham, Accuracy and Stability of
// Numerical Algorithms, ch. 3: a sum of n float32 products is off by at most gamma(n) times the sum
// of their magnitudes, in any order), so a correct kernel cannot exceed them, and a wrong element,
// index or scale exceeds them by orders of magnitude.

/** The float32 unit roundoff. */
export const U = 2 ** -24;

/** gamma(n) = n u / (1 - n u): the relative error bound of n float32 operations in a row. */
export function gamma(n: number): number {
  return (n * U) / (1 - n * U);
}

export interface Result {
  value: Float64Array;
  bound: Float64Array;
}

/**
 * y[M, N] = x[M, K] @ w[N, K]^T (+ bias). Bound: gamma(K + 4) times sum_k |x_k| m_k + |bias|, where
 * m_k is |w_k|, or for affine weights |s q_k| + |b| (kernels may sum s * sum(q x) + b * sum(x) per
 * group); the 4 covers the per-block scale products, the group sums' combination and the bias add.
 */
export function linearRef(
  x: ArrayLike<number>, w: ArrayLike<number>, M: number, N: number, K: number,
  options: { bias?: ArrayLike<number>; wMagnitude?: ArrayLike<number> } = {},
): Result {
  const mag = options.wMagnitude ?? Float64Array.from(w as ArrayLike<number>, Math.abs);
  const value = new Float64Array(M * N);
  const bound = new Float64Array(M * N);
  const g = gamma(K + 4);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      const b = options.bias ? options.bias[n] : 0;
      let s = b, a = Math.abs(b);
      for (let k = 0; k < K; k++) {
        s += x[m * K + k] * w[n * K + k];
        a += Math.abs(x[m * K + k]) * mag[n * K + k];
      }
      value[m * N + n] = s;
      bound[m * N + n] = g * a;
    }
  }
  return { value, bound };
}

/** c[batch, M, N] = a[batch, M, K] @ b[K, N]. Bound: gamma(K + 2) times sum_k |a_k b_k|. */
export function matmulRef(a: ArrayLike<number>, b: ArrayLike<number>, batch: number, M: number, K: number, N: number): Result {
  const value = new Float64Array(batch * M * N);
  const bound = new Float64Array(batch * M * N);
  const g = gamma(K + 2);
  for (let t = 0; t < batch; t++) {
    for (let m = 0; m < M; m++) {
      for (let n = 0; n < N; n++) {
        let s = 0, mag = 0;
        for (let k = 0; k < K; k++) {
          const p = a[(t * M + m) * K + k] * b[k * N + n];
          s += p;
          mag += Math.abs(p);
        }
        value[(t * M + m) * N + n] = s;
        bound[(t * M + m) * N + n] = g * mag;
      }
    }
  }
  return { value, bound };
}

/** A float32 result stored as float16: one more rounding (half an ulp, 2^-25 below 2^-14). */
export function storedAsHalf(r: Result): Result {
  const bound = r.bound.map((e, i) => e + 2 ** -11 * (Math.abs(r.value[i]) + e) + 2 ** -25);
  return { value: r.value, bound };
}

export interface AttentionDims {
  B: number; Hq: number; Hkv: number; Lq: number; Lk: number; D: number;
}

/**
 * Scaled dot-product attention, [B, H, L, D] layout; query head h reads kv head
 * floor(h / (Hq / Hkv)); causal is bottom-right aligned (query i sees keys j <= i + Lk - Lq);
 * mask [Lq, Lk], nonzero = attend; a row that sees no key is zeros.
 *
 * Bound, per output element o_c of a row with softmax weights p_j (first order in u):
 * - each score s_j, a float32 dot product of D terms (q pre-multiplied by scale and log2(e)), is
 *   off by at most delta = gamma(D + 2) * scale * max_j sum_c |q_c k_jc|; the row's max by as much;
 * - each weight exp(s_j - max) is then off by the relative rho_j = 2 delta (in natural-log units)
 *   + (4 + 3 |t_j|) u, t_j = (s_j - max) log2(e): the float32 subtraction (u |t_j|) and the exp2
 *   (the cpu kernel's polynomial, ~3.4 u; Metal's fast-math exp2, 3 + 2 |t_j| ulp);
 * - o = sum p_j v_j / sum p_j moves by at most sum_j p_j rho_j (|v_jc| + |o_c|);
 * - the float32 sums of Lk terms in numerator and denominator, one rescale per tile of keys and
 *   the final division add gamma(Lk + 8 ceil(Lk / 64) + 8) relative to sum_j p_j |v_jc| each;
 * - weights below 2^-126 of the row's largest may be flushed to zero: Lk 2^-126 max |v|.
 */
export function attentionRef(
  q: ArrayLike<number>, k: ArrayLike<number>, v: ArrayLike<number>, d: AttentionDims,
  options: { scale?: number; causal?: boolean; mask?: ArrayLike<number> } = {},
): Result {
  const { B, Hq, Hkv, Lq, Lk, D } = d;
  const scale = options.scale ?? 1 / Math.sqrt(D);
  const group = Hq / Hkv;
  const value = new Float64Array(B * Hq * Lq * D);
  const bound = new Float64Array(B * Hq * Lq * D);
  const s = new Float64Array(Lk);
  const seen = new Uint8Array(Lk);
  const accumulation = gamma(Lk + 8 * Math.ceil(Lk / 64) + 8);
  for (let b = 0; b < B; b++) for (let h = 0; h < Hq; h++) {
    const kvBase = (b * Hkv + Math.floor(h / group)) * Lk * D;
    for (let i = 0; i < Lq; i++) {
      const qo = ((b * Hq + h) * Lq + i) * D;
      let max = -Infinity, scoreMagnitude = 0;
      for (let j = 0; j < Lk; j++) {
        seen[j] = Number((!options.causal || j <= i + Lk - Lq) && (!options.mask || options.mask[i * Lk + j] !== 0));
        if (!seen[j]) continue;
        let dot = 0, mag = 0;
        for (let c = 0; c < D; c++) {
          dot += q[qo + c] * k[kvBase + j * D + c];
          mag += Math.abs(q[qo + c] * k[kvBase + j * D + c]);
        }
        s[j] = dot * scale;
        max = Math.max(max, s[j]);
        scoreMagnitude = Math.max(scoreMagnitude, mag * scale);
      }
      if (max === -Infinity) continue;  // sees no key: zeros
      const delta = gamma(D + 2) * scoreMagnitude;
      let sum = 0;
      for (let j = 0; j < Lk; j++) if (seen[j]) sum += Math.exp(s[j] - max);
      let vmax = 0;
      const rho = new Float64Array(Lk);
      for (let j = 0; j < Lk; j++) {
        if (!seen[j]) continue;
        const p = Math.exp(s[j] - max) / sum;
        rho[j] = 2 * delta + (4 + 3 * Math.abs((s[j] - max) * Math.LOG2E)) * U;
        for (let c = 0; c < D; c++) {
          const vjc = v[kvBase + j * D + c];
          value[qo + c] += p * vjc;
          vmax = Math.max(vmax, Math.abs(vjc));
        }
      }
      for (let c = 0; c < D; c++) {
        let e = 0, mag = 0;
        for (let j = 0; j < Lk; j++) {
          if (!seen[j]) continue;
          const p = Math.exp(s[j] - max) / sum;
          const vjc = Math.abs(v[kvBase + j * D + c]);
          e += p * rho[j] * (vjc + Math.abs(value[qo + c]));
          mag += p * vjc;
        }
        bound[qo + c] = e + 2 * accumulation * mag + Lk * 2 ** -126 * vmax;
      }
    }
  }
  return { value, bound };
}
