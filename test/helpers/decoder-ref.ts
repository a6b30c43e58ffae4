// A float64 reference forward pass of the decoders loadModel runs (llama, qwen2, qwen3, qwen3moe,
// gpt-oss), written from the architectures' definitions (llama.cpp's graphs), straight loops, no
// device: the tests' independent reference where llama.cpp is not installed. gpt-oss as
// llama.cpp's LLM_ARCH_OPENAI_MOE graph: q/k/v/o biases, NeoX RoPE with YaRN (ggml's rope_yarn:
// the blended angle, cos and sin times mscale), attention sinks in each softmax's denominator,
// a sliding window on the even layers, post_attention_norm, router bias, top-k then softmax, and
// experts with biases and swiglu_oai.

export interface RefSpec {
  arch: 'llama' | 'qwen2' | 'qwen3' | 'qwen3moe' | 'gpt-oss';
  vocab: number; width: number; layers: number; heads: number; kvHeads: number; ff: number;
  headDim?: number; experts?: number; expertsUsed?: number; ropeBase?: number; eps?: number;
  /** gpt-oss: the window of the even layers (default 128). */
  slidingWindow?: number;
  /** YaRN as GGUF metadata declares it (beta_fast 32, beta_slow 1, attn_factor 1). */
  ropeScaling?: { type: string; factor: number; originalContext?: number };
  /** transformers' YaRN `truncate: false`: the correction range is not rounded to whole pairs. */
  yarnUnrounded?: boolean;
}

/** Weights by GGUF name, float values in ggml order (a weight [N, K] of ours: row n is values[n*K..]). */
export type RefWeights = Map<string, ArrayLike<number>>;

function matvec(w: ArrayLike<number>, x: Float64Array, N: number, K: number, offset = 0): Float64Array {
  const y = new Float64Array(N);
  for (let n = 0; n < N; n++) {
    let s = 0;
    const row = offset + n * K;
    for (let k = 0; k < K; k++) s += w[row + k] * x[k];
    y[n] = s;
  }
  return y;
}

function rmsNorm(x: Float64Array, w: ArrayLike<number>, eps: number, at = 0, n = x.length): void {
  let ss = 0;
  for (let i = 0; i < n; i++) ss += x[at + i] ** 2;
  const r = 1 / Math.sqrt(ss / n + eps);
  for (let i = 0; i < n; i++) x[at + i] = x[at + i] * r * w[i];
}

interface Yarn { scale: number; low: number; high: number; mscale: number }

/** ggml_rope_yarn_corr_dims and the magnitude factor, from the YaRN parameters. */
function yarnOf(spec: RefSpec, D: number, base: number): Yarn | undefined {
  const r = spec.ropeScaling;
  if (!r || r.type !== 'yarn') return undefined;
  const dim = (rot: number) => (D * Math.log(r.originalContext! / (rot * 2 * Math.PI))) / (2 * Math.log(base));
  const [low, high] = spec.yarnUnrounded ? [dim(32), dim(1)] : [Math.floor(dim(32)), Math.ceil(dim(1))];
  return { scale: 1 / r.factor, low: Math.max(0, low), high: Math.min(D - 1, high), mscale: 1 + 0.1 * Math.log(r.factor) };
}

function rope(x: Float64Array, at: number, D: number, pos: number, base: number, neox: boolean, yarn?: Yarn): void {
  for (let i = 0; i < D / 2; i++) {
    const extrap = pos * Math.pow(base, (-2 * i) / D);
    let theta = extrap, m = 1;
    if (yarn) {
      // ggml's rope_yarn_ramp at i0 = 2i: 1 below `low` (extrapolate), 0 above `high` (interpolate).
      const y = (i - yarn.low) / Math.max(0.001, yarn.high - yarn.low);
      const mix = 1 - Math.min(1, Math.max(0, y));
      theta = yarn.scale * extrap * (1 - mix) + extrap * mix;
      m = yarn.mscale;
    }
    const [a, b] = neox ? [at + i, at + i + D / 2] : [at + 2 * i, at + 2 * i + 1];
    const c = Math.cos(theta) * m, s = Math.sin(theta) * m;
    const x0 = x[a], x1 = x[b];
    x[a] = x0 * c - x1 * s;
    x[b] = x0 * s + x1 * c;
  }
}

const silu = (v: number) => v / (1 + Math.exp(-v));
/** gpt-oss's gate (llama.cpp's swiglu_oai, alpha 1.702, limit 7). */
function swigluOai(g: number, u: number): number {
  const x = Math.min(g, 7), y = Math.min(Math.max(u, -7), 7);
  return (x / (1 + Math.exp(-1.702 * x))) * (y + 1);
}

/** Logits [L, vocab] (row-major) of the tokens, positions 0..L-1, float64 throughout. */
export function referenceLogits(spec: RefSpec, w: RefWeights, ids: readonly number[]): Float64Array {
  const { width: W, heads: H, kvHeads: Hkv, ff, vocab: V, layers } = spec;
  const D = spec.headDim ?? W / H;
  const eps = spec.eps ?? 1e-6;
  const base = spec.ropeBase ?? 10000;
  const neox = spec.arch !== 'llama';
  const oss = spec.arch === 'gpt-oss';
  const yarn = yarnOf(spec, D, base);
  const window = spec.slidingWindow ?? 128;
  const get = (name: string) => {
    const t = w.get(name);
    if (!t) throw new Error(`reference: no weight ${name}`);
    return t;
  };
  const L = ids.length;
  const xs = ids.map((id) => Float64Array.from({ length: W }, (_, i) => get('token_embd.weight')[id * W + i]));
  const keys: Float64Array[][] = Array.from({ length: layers }, () => []);
  const values: Float64Array[][] = Array.from({ length: layers }, () => []);
  const out = new Float64Array(L * V);
  for (let p = 0; p < L; p++) {
    const x = xs[p];
    for (let l = 0; l < layers; l++) {
      const b = `blk.${l}`;
      const h = Float64Array.from(x);
      rmsNorm(h, get(`${b}.attn_norm.weight`), eps);
      const bias = (t: Float64Array, name: string) => { if (w.has(name)) { const v = get(name); for (let i = 0; i < t.length; i++) t[i] += v[i]; } return t; };
      const q = bias(matvec(get(`${b}.attn_q.weight`), h, H * D, W), `${b}.attn_q.bias`);
      const k = bias(matvec(get(`${b}.attn_k.weight`), h, Hkv * D, W), `${b}.attn_k.bias`);
      const v = bias(matvec(get(`${b}.attn_v.weight`), h, Hkv * D, W), `${b}.attn_v.bias`);
      for (let hh = 0; hh < H; hh++) {
        if (w.has(`${b}.attn_q_norm.weight`)) rmsNorm(q, get(`${b}.attn_q_norm.weight`), eps, hh * D, D);
        rope(q, hh * D, D, p, base, neox, yarn);
      }
      for (let hh = 0; hh < Hkv; hh++) {
        if (w.has(`${b}.attn_k_norm.weight`)) rmsNorm(k, get(`${b}.attn_k_norm.weight`), eps, hh * D, D);
        rope(k, hh * D, D, p, base, neox, yarn);
      }
      keys[l].push(k);
      values[l].push(v);
      const attn = new Float64Array(H * D);
      // gpt-oss: llama_hparams::set_swa_pattern(2) makes the even layers slide; a key at j is seen
      // from position p when p - j < window.
      const first = oss && l % 2 === 0 ? Math.max(0, p - window + 1) : 0;
      for (let hh = 0; hh < H; hh++) {
        const g = Math.floor(hh / (H / Hkv));
        const scores = keys[l].map((kk, j) => {
          if (j < first) return -Infinity;
          let s = 0; for (let d = 0; d < D; d++) s += q[hh * D + d] * kk[g * D + d]; return s / Math.sqrt(D);
        });
        const sink = oss ? get(`${b}.attn_sinks.weight`)[hh] : -Infinity;
        const m = Math.max(...scores, sink);
        const e = scores.map((s) => Math.exp(s - m));
        const z = e.reduce((a, c) => a + c, 0) + Math.exp(sink - m);
        for (let j = 0; j < e.length; j++) for (let d = 0; d < D; d++) attn[hh * D + d] += (e[j] / z) * values[l][j][g * D + d];
      }
      const o = bias(matvec(get(`${b}.attn_output.weight`), attn, W, H * D), `${b}.attn_output.bias`);
      for (let i = 0; i < W; i++) x[i] += o[i];
      const m = Float64Array.from(x);
      rmsNorm(m, get(oss ? `${b}.post_attention_norm.weight` : `${b}.ffn_norm.weight`), eps);
      const mlp = (gate: ArrayLike<number>, up: ArrayLike<number>, down: ArrayLike<number>, e = 0) => {
        const g = matvec(gate, m, ff, W, e * ff * W);
        const u = matvec(up, m, ff, W, e * ff * W);
        if (oss) {
          // Per-expert biases, rows e of [E, ff] and [E, width].
          const [bg, bu] = [get(`${b}.ffn_gate_exps.bias`), get(`${b}.ffn_up_exps.bias`)];
          for (let i = 0; i < ff; i++) g[i] = swigluOai(g[i] + bg[e * ff + i], u[i] + bu[e * ff + i]);
          const y = matvec(down, g, W, ff, e * W * ff);
          const bd = get(`${b}.ffn_down_exps.bias`);
          for (let i = 0; i < W; i++) y[i] += bd[e * W + i];
          return y;
        }
        for (let i = 0; i < ff; i++) g[i] = silu(g[i]) * u[i];
        return matvec(down, g, W, ff, e * W * ff);
      };
      if (spec.arch === 'qwen3moe' || oss) {
        const E = spec.experts!, k = spec.expertsUsed!;
        // gpt-oss: logits plus the router's bias, top k, softmax over those k (qwen3moe: the softmax
        // over all renormalised over the top k: the same weights).
        const logits = bias(matvec(get(`${b}.ffn_gate_inp.weight`), m, E, W), `${b}.ffn_gate_inp.bias`);
        const order = Array.from(logits.keys()).sort((a, c) => logits[c] - logits[a]).slice(0, k);
        const mx = logits[order[0]];
        const z = order.reduce((a, e) => a + Math.exp(logits[e] - mx), 0);
        for (const e of order) {
          const y = mlp(get(`${b}.ffn_gate_exps.weight`), get(`${b}.ffn_up_exps.weight`), get(`${b}.ffn_down_exps.weight`), e);
          const g = Math.exp(logits[e] - mx) / z;
          for (let i = 0; i < W; i++) x[i] += g * y[i];
        }
      } else {
        const y = mlp(get(`${b}.ffn_gate.weight`), get(`${b}.ffn_up.weight`), get(`${b}.ffn_down.weight`));
        for (let i = 0; i < W; i++) x[i] += y[i];
      }
    }
    const f = Float64Array.from(x);
    rmsNorm(f, get('output_norm.weight'), eps);
    out.set(matvec(w.get('output.weight') ?? get('token_embd.weight'), f, V, W), p * V);
  }
  return out;
}
