// loadModel(dev, path): a GGUF decoder model on a device (weights in our formats, config,
// tokenizer), ready for forward() and generate().
import { TensorOpsError } from '../errors';
import type { Device } from '../device';
import { readGgufInfo } from '../loaders/gguf/parse';
import { loadGgufTensors, type GgufConversion } from '../loaders/gguf/tensors';
import { Tensor } from '../tensor';
import { tokenizerFromGgufMetadata, type Tokenizer } from '../tokenizer/index';
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
}

/** A loaded model with its tokenizer and what loading converted. */
export interface LoadedModel extends Model {
  readonly tokenizer: Tokenizer;
  /** The tensors that were not loaded bit-exactly (K-quants, overflowing scales) and their measured error. */
  readonly conversions: readonly GgufConversion[];
}

/** RoPE's inverse frequencies when the model scales them (linear scaling, llama3's rope_freqs). */
async function ropeFrequencies(dev: Device, config: ModelConfig, factors: Tensor | undefined): Promise<Tensor | undefined> {
  if (config.rope.scale === 1 && !factors) return undefined;
  const half = config.rope.dims / 2;
  const divisors = factors ? await factors.toFloat32() : new Float32Array(half).fill(1);
  const freqs = new Float32Array(half);
  for (let i = 0; i < half; i++) {
    freqs[i] = Math.pow(config.rope.base, (-2 * i) / config.rope.dims) / config.rope.scale / divisors[i];
  }
  return dev.tensor(freqs, [half]);
}

export async function loadModel(dev: Device, path: string, options: LoadModelOptions = {}): Promise<Model & LoadedModel> {
  const opts = checkOptions(options, 'options', ['onProgress', 'contextSize', 'cacheDtype']) as LoadModelOptions;
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
    const ropeFreqs = await ropeFrequencies(dev, config, weights.ropeFactors);
    const model = new Model(dev, config, weights, { ropeFreqs, contextSize, cacheDtype: opts.cacheDtype, endTokens: [...tokenizer.eogIds] });
    return Object.assign(model, { tokenizer, conversions: tensors.conversions }) as Model & LoadedModel;
  } catch (err) {
    for (const t of tensors.values()) if (!t.disposed) t.dispose();
    throw err;
  }
}
