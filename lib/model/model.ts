// A loaded decoder model: forward passes over a KV cache and token generation, on one device.
import { TensorOpsError } from '../errors';
import type { Device } from '../device';
import type { Tensor } from '../tensor';
import type { Activations } from '../types';
import { checkOptions, describe } from '../validate';
import type { ModelConfig } from './config';
import { forward, type ForwardContext } from './arch/decoder';
import { KVCache, type CacheDtype, type CacheOptions } from './kv-cache';
import type { ModelWeights } from './weights';

export interface ForwardOptions {
  /** 'last' (default): logits [1, vocab] of the last position; 'all': [L, vocab]. */
  logits?: 'last' | 'all';
}

export interface GenerateOptions {
  /** Default 128. */
  maxTokens?: number;
  /** 0 (default) is greedy. */
  temperature?: number;
  topK?: number;
  topP?: number;
  /** Draws depend only on (seed, step): the same seed gives the same tokens. Default 0. */
  seed?: number;
  /** Called with each token as soon as it is known. */
  onToken?: (id: number) => void;
  /** Stops generation (the promise rejects with the signal's reason, as fetch does). */
  signal?: AbortSignal;
  /** Tokens that end generation (default: the model's end-of-generation tokens). */
  stop?: readonly number[];
  /**
   * A cache to continue from (default: a new one, disposed at the end). Afterwards it holds the
   * prompt and every generated token but the last: pass that token as the next call's prompt.
   */
  cache?: KVCache;
}

function toIds(dev: Device, ids: unknown, vocab: number): Tensor {
  if (!(ids instanceof Int32Array) && !Array.isArray(ids)) {
    throw new TensorOpsError('E_ARG', `ids must be an Int32Array or an array of token ids; got ${describe(ids)}`);
  }
  const arr = Int32Array.from(ids as ArrayLike<number>);
  if (arr.length === 0) throw new TensorOpsError('E_ARG', 'ids must hold at least one token id');
  for (let i = 0; i < arr.length; i++) {
    if (arr[i] < 0 || arr[i] >= vocab || arr[i] !== (ids as ArrayLike<number>)[i]) {
      throw new TensorOpsError('E_ARG', `ids[${i}] must be a token id from 0 to ${vocab - 1}; got ${(ids as ArrayLike<number>)[i]}`);
    }
  }
  return dev.tensor(arr, [arr.length], 'int32');
}

export class Model {
  readonly config: ModelConfig;
  /** Tokens that end generation (end of sequence, end of turn). */
  readonly endTokens: readonly number[];
  /** What the projections do with their inputs: 'float32', or 'int8' (loadModel's `activations`). */
  readonly activations: Activations;
  readonly #ctx: ForwardContext;
  readonly #contextSize: number;
  readonly #cacheDtype: CacheDtype;
  #disposed = false;

  /** @internal Use loadModel(). */
  constructor(dev: Device, config: ModelConfig, weights: ModelWeights, options: { ropeFreqs?: Tensor; ropeFreqsSwa?: Tensor; attentionScale?: number; contextSize: number; cacheDtype?: CacheDtype; activations?: Activations; endTokens: number[] }) {
    this.config = config;
    this.endTokens = Object.freeze([...options.endTokens]);
    this.activations = options.activations ?? 'float32';
    this.#ctx = { dev, config, weights, ropeFreqs: options.ropeFreqs, ropeFreqsSwa: options.ropeFreqsSwa, attentionScale: options.attentionScale, activations: this.activations };
    this.#contextSize = options.contextSize;
    this.#cacheDtype = options.cacheDtype ?? 'float16';
  }

  get device(): Device { return this.#ctx.dev; }

  #check(): void {
    if (this.#disposed) throw new TensorOpsError('E_DISPOSED', 'the model was disposed');
  }

  /**
   * A KV cache for this model: `contextSize` positions (default: what loadModel was given), float16
   * or mxfp8; sliding-window layers keep window + 1 positions unless `swaFull`.
   */
  createCache(options: CacheOptions = {}): KVCache {
    this.#check();
    const opts = checkOptions(options, 'options', ['contextSize', 'dtype', 'swaFull']) as CacheOptions;
    return new KVCache(this.#ctx.dev, this.config, opts.contextSize ?? this.#contextSize, opts.dtype ?? this.#cacheDtype, opts.swaFull ?? false);
  }

  /** Runs token ids at the cache's next positions; returns float32 logits on the device. */
  async forward(ids: Int32Array | readonly number[], cache: KVCache, options: ForwardOptions = {}): Promise<Tensor> {
    this.#check();
    const opts = checkOptions(options, 'options', ['logits']);
    if (opts.logits !== undefined && opts.logits !== 'last' && opts.logits !== 'all') {
      throw new TensorOpsError('E_ARG', `options.logits must be 'last' or 'all'; got ${describe(opts.logits)}`);
    }
    if (!(cache instanceof KVCache)) throw new TensorOpsError('E_ARG', `cache must be a KVCache (model.createCache()); got ${describe(cache)}`);
    const t = toIds(this.#ctx.dev, ids, this.config.vocab);
    try {
      return await forward(this.#ctx, t, cache, opts.logits === 'all');
    } finally {
      t.dispose();
    }
  }

  /**
   * Generates up to maxTokens tokens after the prompt. Each step's sampled id feeds the next step
   * on the device; the host reads it one step behind, so it never waits for the device in between.
   */
  async generate(prompt: Int32Array | readonly number[], options: GenerateOptions = {}): Promise<number[]> {
    this.#check();
    const opts = checkOptions(options, 'options', ['maxTokens', 'temperature', 'topK', 'topP', 'seed', 'onToken', 'signal', 'stop', 'cache']) as GenerateOptions;
    const maxTokens = opts.maxTokens ?? 128;
    if (!Number.isInteger(maxTokens) || maxTokens < 0) {
      throw new TensorOpsError('E_ARG', `options.maxTokens must be a non-negative integer; got ${describe(opts.maxTokens)}`);
    }
    if (opts.onToken !== undefined && typeof opts.onToken !== 'function') {
      throw new TensorOpsError('E_ARG', `options.onToken must be a function; got ${describe(opts.onToken)}`);
    }
    const signal = opts.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new TensorOpsError('E_ARG', `options.signal must be an AbortSignal; got ${describe(signal)}`);
    }
    const stop = new Set(opts.stop ?? this.endTokens);
    const sampling = { temperature: opts.temperature ?? 0, topK: opts.topK ?? 0, topP: opts.topP ?? 1 };
    const seed = opts.seed ?? 0;
    const { dev } = this.#ctx;
    if (opts.cache !== undefined && !(opts.cache instanceof KVCache)) {
      throw new TensorOpsError('E_ARG', `options.cache must be a KVCache (model.createCache()); got ${describe(opts.cache)}`);
    }
    const cache = opts.cache ?? this.createCache();
    const start = cache.length;
    const out: number[] = [];
    let logits: Tensor | null = null;
    let prompted = 0;
    try {
      signal?.throwIfAborted();
      const ids = toIds(dev, prompt, this.config.vocab);
      try {
        logits = await forward(this.#ctx, ids, cache, false);
        prompted = ids.shape[0];
      } finally {
        ids.dispose();
      }
      for (let step = 0; step < maxTokens; step++) {
        const next = dev.sample(logits!, { ...sampling, seed: (seed + step) >>> 0 });  // int32 [1]
        logits!.dispose();
        logits = null;
        try {
          const pending = next.data();
          const more = step + 1 < maxTokens && cache.length < cache.capacity;
          // Queue the next step before reading this one's token: the device never idles on the host.
          if (more) logits = await forward(this.#ctx, next, cache, false);
          const id = (await pending as Int32Array)[0];
          signal?.throwIfAborted();
          out.push(id);
          opts.onToken?.(id);
          if (stop.has(id) || !more) break;
        } finally {
          next.dispose();
        }
      }
    } finally {
      if (logits && !logits.disposed) logits.dispose();
      if (!opts.cache) cache.dispose();
      // A given cache keeps the prompt and every generated token but the last (the next call's
      // prompt), whether or not the step after it was already queued.
      else cache.truncate(Math.min(cache.length, start + prompted + Math.max(out.length - 1, 0)));
    }
    return out;
  }

  /** Frees the weights. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    const w = this.#ctx.weights;
    const seen = new Set<unknown>();
    const all = [w.embedding, w.outputNorm, w.output, w.ropeFactors, this.#ctx.ropeFreqs, this.#ctx.ropeFreqsSwa,
      ...w.layers.flatMap((l) => Object.values(l))];
    for (const t of all) {
      if (t && !seen.has(t) && !t.disposed) { seen.add(t); t.dispose(); }
    }
  }
}
