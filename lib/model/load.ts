// loadModel(dev, path): a GGUF decoder model on a device (weights in our formats, config,
// tokenizer), ready for forward() and generate().
import { TensorOpsError } from '../errors';
import type { Device } from '../device';
import { readGgufInfo } from '../loaders/gguf/parse';
import { loadGgufTensors, type GgufConversion } from '../loaders/gguf/tensors';
import { Tensor } from '../tensor';
import { tokenizerFromGgufMetadata, type Tokenizer } from '../tokenizer/index';
import { checkActivations } from '../ops/args';
import type { Activations } from '../types';
import { checkOptions, describe } from '../validate';
import { configFromGguf, type ModelConfig } from './config';
import { Model } from './model';
import { modelWeights } from './weights';
import type { CacheDtype } from './kv-cache';

export interface LoadModelOptions {
  /** Called as tensor data is read: bytes read so far, of total. */
  onProgress?: (loaded: number, total: number) => void;
  /** KV cache positions of createCache() and generate() (default min(4096, the model's context)). */
  contextSize?: number;
  /** The KV cache's storage: 'float16' (default) or 'mxfp8' (half the bytes). */
  cacheDtype?: CacheDtype;
  /**
   * 'int8': the projections quantize their inputs to 8 bits per 32 values and multiply them by the
   * weights' integer codes, as llama.cpp does (faster generation; error in PERFORMANCE.md).
   * Default 'float32'.
   */
  activations?: Activations;
}

/** A loaded model with its tokenizer and what loading converted. */
export interface LoadedModel extends Model {
  readonly tokenizer: Tokenizer;
  /** The tensors that were not loaded bit-exactly (K-quants, overflowing scales) and their measured error. */
  readonly conversions: readonly GgufConversion[];
}

/**
 * RoPE's inverse frequencies when the model scales them (linear, YaRN, llama3's rope_freqs), and
 * the attention scale YaRN's magnitude correction asks for. Every variant keeps the angle linear in
 * the position, so one table per model does: YaRN's theta = theta_interp (1 - r) + theta_extrap r
 * is pos * freq * (r + (1 - r) / factor), r the ramp of frequency i between its correction dims.
 */
async function ropeFrequencies(dev: Device, config: ModelConfig, factors: Tensor | undefined): Promise<{ freqs?: Tensor; attentionScale?: number }> {
  const { base, dims, scale, yarn } = config.rope;
  if (scale === 1 && !factors) return {};
  const half = dims / 2;
  const divisors = factors ? await factors.toFloat32() : new Float32Array(half).fill(1);
  // YaRN's correction dims (the pair indices where interpolation starts and ends), as llama.cpp's
  // ggml_rope_yarn_corr_dims: the pair whose wavelength turns n_rot times over the original context.
  const corrDim = (rotations: number) => (dims * Math.log(yarn!.originalContext / (rotations * 2 * Math.PI))) / (2 * Math.log(base));
  const low = yarn ? Math.max(0, Math.floor(corrDim(yarn.betaFast))) : 0;
  const high = yarn ? Math.min(dims - 1, Math.ceil(corrDim(yarn.betaSlow))) : 0;
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

export async function loadModel(dev: Device, path: string, options: LoadModelOptions = {}): Promise<Model & LoadedModel> {
  const opts = checkOptions(options, 'options', ['onProgress', 'contextSize', 'cacheDtype', 'activations']) as LoadModelOptions;
  const activations = checkActivations(opts.activations) ? 'int8' : 'float32';
  if (typeof path !== 'string') throw new TensorOpsError('E_ARG', `path must be a string; got ${describe(path)}`);
  if (opts.onProgress !== undefined && typeof opts.onProgress !== 'function') {
    throw new TensorOpsError('E_ARG', `options.onProgress must be a function; got ${describe(opts.onProgress)}`);
  }
  const file = await readGgufInfo(path);
  const tokenizer = tokenizerFromGgufMetadata(file.metadata);
  const config = configFromGguf(file.metadata, tokenizer.vocabSize);
  const contextSize = opts.contextSize ?? Math.min(4096, config.context);
  if (!Number.isInteger(contextSize) || contextSize < 1 || contextSize > config.context) {
    throw new TensorOpsError('E_ARG', `options.contextSize must be an integer from 1 to ${config.context}; got ${describe(opts.contextSize)}`);
  }
  const tensors = await loadGgufTensors(dev, file, path, {
    onProgress: opts.onProgress && ((p) => opts.onProgress!(p.bytesRead, p.totalBytes)),
  });
  try {
    const weights = modelWeights(config, tensors);
    const { freqs: ropeFreqs, attentionScale } = await ropeFrequencies(dev, config, weights.ropeFactors);
    const model = new Model(dev, config, weights, { ropeFreqs, attentionScale, contextSize, cacheDtype: opts.cacheDtype, activations, endTokens: [...tokenizer.eogIds] });
    return Object.assign(model, { tokenizer, conversions: tensors.conversions }) as Model & LoadedModel;
  } catch (err) {
    for (const t of tensors.values()) if (!t.disposed) t.dispose();
    throw err;
  }
}
