// RoPE's frequency table when a model scales it, from either kind of model file: llama3's
// per-frequency divisors (what a GGUF file stores as rope_freqs.weight and a Hugging Face
// config.json describes as rope_scaling {rope_type: 'llama3', ...}), linear and YaRN scaling.
import type { Device } from '../device';
import type { Tensor } from '../tensor';
import type { ModelConfig } from './config';

export interface Llama3Scaling {
  factor: number;
  lowFreqFactor: number;
  highFreqFactor: number;
  /** The context the model was trained at (original_max_position_embeddings). */
  originalContext: number;
}

/**
 * llama3's divisor of each rotating pair's frequency (what llama.cpp's converter writes as
 * rope_freqs.weight): 1 for wavelengths below original/highFreqFactor, `factor` above
 * original/lowFreqFactor, a smooth blend between.
 */
export function llama3RopeDivisors(base: number, dims: number, s: Llama3Scaling): Float32Array {
  const out = new Float32Array(dims / 2);
  for (let i = 0; i < out.length; i++) {
    const wavelength = (2 * Math.PI) / Math.pow(base, (-2 * i) / dims);
    if (wavelength < s.originalContext / s.highFreqFactor) out[i] = 1;
    else if (wavelength > s.originalContext / s.lowFreqFactor) out[i] = s.factor;
    else {
      const smooth = (s.originalContext / wavelength - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
      out[i] = 1 / ((1 - smooth) / s.factor + smooth);
    }
  }
  return out;
}

/**
 * RoPE's inverse frequencies when the model scales them (linear, YaRN, llama3's divisors), and
 * the attention scale YaRN's magnitude correction asks for. Every variant keeps the angle linear in
 * the position, so one table per model does: YaRN's theta = theta_interp (1 - r) + theta_extrap r
 * is pos * freq * (r + (1 - r) / factor), r the ramp of frequency i between its correction dims.
 */
export async function ropeFrequencies(dev: Device, config: ModelConfig, factors: Tensor | undefined): Promise<{ freqs?: Tensor; attentionScale?: number }> {
  const { base, dims, scale, yarn } = config.rope;
  if (scale === 1 && !factors) return {};
  const half = dims / 2;
  const divisors = factors ? await factors.toFloat32() : new Float32Array(half).fill(1);
  // YaRN's correction dims (the pair indices where interpolation starts and ends), as llama.cpp's
  // ggml_rope_yarn_corr_dims: the pair whose wavelength turns n_rot times over the original context.
  const corrDim = (rotations: number) => (dims * Math.log(yarn!.originalContext / (rotations * 2 * Math.PI))) / (2 * Math.log(base));
  // (transformers rounds them too unless the config says truncate: false; llama.cpp always does.)
  const round = (v: number, f: (x: number) => number) => (yarn!.unrounded ? v : f(v));
  const low = yarn ? Math.max(0, round(corrDim(yarn.betaFast), Math.floor)) : 0;
  const high = yarn ? Math.min(dims - 1, round(corrDim(yarn.betaSlow), Math.ceil)) : 0;
  const freqs = new Float32Array(half);
  for (let i = 0; i < half; i++) {
    const f = Math.pow(base, (-2 * i) / dims) / divisors[i];
    const r = yarn ? 1 - Math.min(1, Math.max(0, (i - low) / Math.max(0.001, high - low))) : 0;
    freqs[i] = f * (r + (1 - r) / scale);
  }
  // YaRN scales cos and sin by mscale: q and k both, so the scores by mscale^2.
  const mscale = yarn ? yarn.attnFactor * (1 + 0.1 * Math.log(scale)) : 1;
  return { freqs: dev.tensor(freqs, [half]), ...(yarn ? { attentionScale: (mscale * mscale) / Math.sqrt(config.headDim) } : {}) };
}
