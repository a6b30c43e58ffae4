// The KV cache of a decoder: per layer, keys and values [1, Hkv, capacity, D] on the device,
// appended in stream order with `write`. float16 (llama.cpp's default) or mxfp8 (half the bytes;
// attention reads the FP8 codes and E8M0 scales directly). `length` is how many positions hold
// keys; forward() appends at `length` and advances it.
import { TensorOpsError } from '../errors';
import type { Device } from '../device';
import { QuantizedTensor, type Tensor } from '../tensor';
import type { ModelConfig } from './config';

/** What a cache stores its keys and values as. */
export type CacheDtype = 'float16' | 'mxfp8';

export interface CacheOptions {
  /** Positions the cache holds (default: what loadModel was given). */
  contextSize?: number;
  /** 'float16' (default) or 'mxfp8'. */
  dtype?: CacheDtype;
}

type Stored = Tensor | QuantizedTensor;

export class KVCache {
  readonly capacity: number;
  readonly dtype: CacheDtype;
  #length = 0;
  readonly #dev: Device;
  readonly #keys: Stored[] = [];
  readonly #values: Stored[] = [];
  /** The masks of the forward at (at, L), by kind; disposed when the next forward asks for others. */
  #masks: { at: number; L: number; byKey: Map<string, Tensor> } | null = null;

  constructor(dev: Device, config: ModelConfig, capacity: number, dtype: CacheDtype = 'float16') {
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > config.context) {
      throw new TensorOpsError('E_ARG', `contextSize must be an integer from 1 to the model's context length ${config.context}; got ${capacity}`);
    }
    if (dtype !== 'float16' && dtype !== 'mxfp8') {
      throw new TensorOpsError('E_ARG', `the cache dtype must be 'float16' or 'mxfp8'; got ${String(dtype)}`);
    }
    if (dtype === 'mxfp8' && config.headDim % 32 !== 0) {
      throw new TensorOpsError('E_ARG', `an mxfp8 cache needs a head dimension that is a multiple of 32; this model's is ${config.headDim}`);
    }
    this.#dev = dev;
    this.capacity = capacity;
    this.dtype = dtype;
    const shape = [1, config.kvHeads, capacity, config.headDim];
    const zeros = dev.tensor(new Uint16Array(config.kvHeads * capacity * config.headDim), shape, 'float16');
    const make = () => (dtype === 'mxfp8' ? dev.quantize(zeros, { format: 'mxfp8' }) : dev.cast(zeros, 'float16'));
    for (let l = 0; l < config.layers; l++) {
      this.#keys.push(make());
      this.#values.push(make());
    }
    zeros.dispose();
  }

  /** Positions that hold keys. */
  get length(): number { return this.#length; }

  /** Forgets positions from `length` on (the next forward writes over them). */
  truncate(length: number): void {
    if (!Number.isInteger(length) || length < 0 || length > this.#length) {
      throw new TensorOpsError('E_ARG', `length must be an integer from 0 to ${this.#length}; got ${length}`);
    }
    this.#length = length;
  }

  /** @internal Room check before a forward of `tokens` positions. */
  reserve(tokens: number): number {
    if (this.#length + tokens > this.capacity) {
      throw new TensorOpsError('E_ARG', `the KV cache holds ${this.capacity} positions; ${this.#length} are used and ${tokens} more do not fit (open the model with a larger contextSize)`);
    }
    return this.#length;
  }

  /**
   * @internal
   * Writes one layer's new keys and values (float32 [1, L, Hkv, D], after RoPE) at position `at`
   * and returns what attention reads: the keys and values of positions [lo, at + L) as copies the
   * caller disposes (`copies`), or, when the cache is full or mxfp8 (no slice of a quantized
   * tensor), the cache's own tensors; with a `mask` saying which positions each query sees where
   * bottom-right causal alignment alone does not. `window` (a sliding-window layer): the query at
   * position p sees only keys p - window < j <= p, so lo is the first key the first query sees.
   */
  append(layer: number, k: Tensor, v: Tensor, at: number, window?: number): { keys: Stored; values: Stored; copies: boolean; mask?: Tensor } {
    const dev = this.#dev;
    const L = k.shape[1];
    // [1, L, Hkv, D] -> [1, Hkv, L, D] in the cache's dtype, written at `at`; what this made is
    // disposed once the write is queued (the write keeps it alive until it ran).
    const put = (cache: Stored, t: Tensor) => {
      const h = this.dtype === 'float16' ? dev.cast(t, 'float16') : t;
      const src = L === 1 ? h.reshape([1, t.shape[2], 1, t.shape[3]]) : dev.transpose(h, [0, 2, 1, 3]);
      dev.write(cache, src, { axis: 2, offset: at });
      src.dispose();
      if (h !== t) h.dispose();
    };
    put(this.#keys[layer], k);
    put(this.#values[layer], v);
    const end = at + L;
    const lo = window === undefined ? 0 : Math.max(0, at + 1 - window);
    // The last query's window starts after lo: some query sees fewer keys than causal alignment gives.
    const band = window !== undefined && end - window > lo;
    const own = { keys: this.#keys[layer], values: this.#values[layer], copies: false };
    if (this.dtype === 'mxfp8') {
      // The whole cache: a mask of what each query sees (none needed when it is full and nothing slides).
      if (window === undefined && end === this.capacity) return own;
      return { ...own, mask: this.#visible(at, L, 0, this.capacity, window) };
    }
    if (lo === 0 && end === this.capacity) return band ? { ...own, mask: this.#visible(at, L, 0, end, window) } : own;
    const seen = (c: Stored) => dev.slice(c as Tensor, { axis: 2, start: lo, end });
    return { keys: seen(this.#keys[layer]), values: seen(this.#values[layer]), copies: true, ...(band ? { mask: this.#visible(at, L, lo, end, window) } : {}) };
  }

  /**
   * bool [1, 1, L, hi - lo] over the cache positions [lo, hi): query i (position at + i) sees keys
   * at + i - window < j <= at + i (no lower bound without a window). Made once per forward and kind.
   */
  #visible(at: number, L: number, lo: number, hi: number, window: number | undefined): Tensor {
    if (this.#masks && (this.#masks.at !== at || this.#masks.L !== L)) {
      for (const t of this.#masks.byKey.values()) t.dispose();
      this.#masks = null;
    }
    this.#masks ??= { at, L, byKey: new Map() };
    const key = `${lo},${hi},${window ?? ''}`;
    const known = this.#masks.byKey.get(key);
    if (known) return known;
    const n = hi - lo;
    const m = new Uint8Array(L * n);
    for (let i = 0; i < L; i++) {
      const p = at + i;
      const first = window === undefined ? 0 : Math.max(0, p - window + 1);
      m.fill(1, i * n + Math.max(first - lo, 0), i * n + Math.max(p + 1 - lo, 0));
    }
    const t = this.#dev.tensor(m, [1, 1, L, n], 'bool');
    this.#masks.byKey.set(key, t);
    return t;
  }

  /** @internal Called by forward() once every layer has appended. */
  advance(tokens: number): void { this.#length += tokens; }

  dispose(): void {
    for (const t of [...this.#keys, ...this.#values]) if (!t.disposed) t.dispose();
    for (const t of this.#masks?.byKey.values() ?? []) t.dispose();
    this.#masks = null;
    this.#keys.length = 0;
    this.#values.length = 0;
  }
}
