// loadModel(dev, path): a decoder model on a device (weights in our formats, config, tokenizer),
// ready for forward() and generate(), from a GGUF file or a Hugging Face model folder (hf/).
import { stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { TensorOpsError } from '../errors';
import type { Device } from '../device';
import { readGgufInfo } from '../loaders/gguf/parse';
import { loadGgufTensors, type GgufConversion } from '../loaders/gguf/tensors';
import type { SafetensorsConversion } from '../loaders/safetensors/types';
import { tokenizerFromGgufMetadata, type Tokenizer } from '../tokenizer/index';
import { checkActivations } from '../ops/args';
import type { Activations } from '../types';
import { checkOptions, describe } from '../validate';
import { configFromGguf, type ModelConfig } from './config';
import { Model } from './model';
import { loadHfWeights, readHfFolder } from './hf/load';
import { ropeFrequencies } from './rope';
import { modelWeights, type Weight } from './weights';
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
  /**
   * The tensors that were not loaded bit-exactly, with their measured error: a GGUF file's
   * (K-quants, overflowing scales) as GgufConversion, a Hugging Face folder's (scales rounded to
   * float16, FP8 block scales) as loadSafetensors reports them.
   */
  readonly conversions: readonly (GgufConversion | SafetensorsConversion)[];
}

const ACCEPTED = 'loadModel takes a GGUF file or a Hugging Face model folder';

/** Whether `path` is a folder (a Hugging Face model) or a file (GGUF); E_LOAD / E_ARG naming it. */
async function sourceOf(path: string): Promise<'hf' | 'gguf'> {
  let dir: boolean;
  try {
    dir = (await stat(path)).isDirectory();
  } catch (err) {
    throw new TensorOpsError('E_LOAD', `cannot open '${path}': ${(err as Error).message} (${ACCEPTED})`, { cause: err });
  }
  if (dir) return 'hf';
  const name = basename(path);
  if (name.endsWith('.safetensors') || ['config.json', 'tokenizer.json', 'model.safetensors.index.json'].includes(name)) {
    throw new TensorOpsError('E_ARG', `'${path}' is one file of a Hugging Face model; pass its folder ('${dirname(path)}')`);
  }
  return 'gguf';
}

interface Source {
  config: ModelConfig;
  tokenizer: Tokenizer;
  /** Loads the weights (after the options are checked against the config). */
  load(): Promise<{ tensors: Map<string, Weight>; conversions: LoadedModel['conversions']; label?: (name: string) => string }>;
}

async function openGguf(dev: Device, path: string, onProgress: LoadModelOptions['onProgress']): Promise<Source> {
  let file;
  try {
    file = await readGgufInfo(path);
  } catch (err) {
    if (err instanceof TensorOpsError && err.message.includes('not a GGUF file')) {
      throw new TensorOpsError('E_FORMAT', `${err.message} (${ACCEPTED})`, { cause: err });
    }
    throw err;
  }
  const tokenizer = tokenizerFromGgufMetadata(file.metadata);
  return {
    tokenizer,
    config: configFromGguf(file.metadata, tokenizer.vocabSize),
    load: async () => {
      const tensors = await loadGgufTensors(dev, file, path, {
        onProgress: onProgress && ((p) => onProgress(p.bytesRead, p.totalBytes)),
      });
      return { tensors, conversions: tensors.conversions };
    },
  };
}

async function openHf(dev: Device, path: string, onProgress: LoadModelOptions['onProgress']): Promise<Source> {
  const folder = await readHfFolder(path);
  return { config: folder.config, tokenizer: folder.tokenizer, load: () => loadHfWeights(dev, folder, onProgress) };
}

/**
 * Loads a decoder model onto `dev`: a GGUF file, or a Hugging Face model folder (config.json,
 * model.safetensors or shards with model.safetensors.index.json, tokenizer.json; MLX-quantized
 * folders too). The config and tokenizer are read and checked before any weight is.
 */
export async function loadModel(dev: Device, path: string, options: LoadModelOptions = {}): Promise<Model & LoadedModel> {
  const opts = checkOptions(options, 'options', ['onProgress', 'contextSize', 'cacheDtype', 'activations']) as LoadModelOptions;
  const activations = checkActivations(opts.activations) ? 'int8' : 'float32';
  if (typeof path !== 'string' || path === '') throw new TensorOpsError('E_ARG', `path must be a non-empty string; got ${describe(path)}`);
  if (opts.onProgress !== undefined && typeof opts.onProgress !== 'function') {
    throw new TensorOpsError('E_ARG', `options.onProgress must be a function; got ${describe(opts.onProgress)}`);
  }
  const source = (await sourceOf(path)) === 'hf' ? await openHf(dev, path, opts.onProgress) : await openGguf(dev, path, opts.onProgress);
  const { config, tokenizer } = source;
  const contextSize = opts.contextSize ?? Math.min(4096, config.context);
  if (!Number.isInteger(contextSize) || contextSize < 1 || contextSize > config.context) {
    throw new TensorOpsError('E_ARG', `options.contextSize must be an integer from 1 to ${config.context}; got ${describe(opts.contextSize)}`);
  }
  const { tensors, conversions, label } = await source.load();
  try {
    const weights = modelWeights(config, tensors, label);
    // attention takes its sinks as float32 (a file may store them as float16 or bfloat16).
    for (const l of weights.layers) if (l.sinks && l.sinks.dtype !== 'float32') l.sinks = dev.cast(l.sinks, 'float32');
    // A tensor of the file no role took (none should be) is freed now rather than held by nothing.
    const used = new Set<unknown>([weights.embedding, weights.outputNorm, weights.output, weights.ropeFactors, ...weights.layers.flatMap((l) => Object.values(l))]);
    for (const t of tensors.values()) if (!used.has(t)) t.dispose();
    const { freqs: ropeFreqs, attentionScale } = await ropeFrequencies(dev, config, weights.ropeFactors);
    // gpt-oss's sliding layers may rotate with a base of their own (rope.freq_base_swa).
    const swaBase = config.rope.baseSwa;
    const ropeFreqsSwa = swaBase === undefined ? undefined
      : (await ropeFrequencies(dev, { ...config, rope: { ...config.rope, base: swaBase } }, weights.ropeFactors)).freqs;
    const model = new Model(dev, config, weights, { ropeFreqs, ropeFreqsSwa, attentionScale, contextSize, cacheDtype: opts.cacheDtype, activations, endTokens: [...tokenizer.eogIds] });
    return Object.assign(model, { tokenizer, conversions }) as Model & LoadedModel;
  } catch (err) {
    for (const t of tensors.values()) if (!t.disposed) t.dispose();
    throw err;
  }
}
