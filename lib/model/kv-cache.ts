// The KV cache of a decoder: per layer, keys and values [1, Hkv, capacity, D] on the device,
// appended in stream order with `write`. float16 (llama.cpp's default) or mxfp8 (half the bytes;
// attention reads the FP8 codes and E8M0 scales directly). `length` is how many positions hold
// keys; forward() appends at `length` and advances it. Sliding-window layers (gpt-oss) keep only
// their window, in a ring (kv-ring.ts, kv-ring-read.ts), unless the cache is made with swaFull.
import { TensorOpsError } from '../errors';
import type { Device } from '../device';
import { QuantizedTensor, type Tensor } from '../tensor';
import type { ModelConfig } from './config';
import { SlidingRing, type RingPlan } from './kv-ring';
import { ringAppend } from './kv-ring-read';

/** What a cache stores its keys and values as. */
export type CacheDtype = 'float16' | 'mxfp8';

export interface CacheOptions {
  /** Positions the cache holds (default: what loadModel was given). */
  contextSize?: number;
  /** 'float16' (default) or 'mxfp8'. */
  dtype?: CacheDtype;
  /**
   * Sliding-window layers keep every position, as the other layers do (llama.cpp's swa_full),
   * instead of a ring of window + 1 positions: more memory, but truncate() can go back anywhere.
   * Default false.
   */
  swaFull?: boolean;
}

export type Stored = Tensor | QuantizedTensor;

/** What attention reads for one layer's forward (KVCache.append). */
export interface AttentionInputs {
  keys: Stored;
  values: Stored;
  /** keys and values are made for this forward: the caller disposes them once attention is queued. */
  copies: boolean;
  /** bool [1, 1, L, keys]: which keys each query sees, where bottom-right causal alignment does not say. */
  mask?: Tensor;
}

export class KVCache {
  readonly capacity: number;
  readonly dtype: CacheDtype;
  #length = 0;
  readonly #dev: Device;
  readonly #keys: Stored[] = [];
  readonly #values: Stored[] = [];
  /** The sliding layers' ring (none when the model has no sliding window, or with swaFull). */
  readonly #ring: SlidingRing | null;
  readonly #slides: readonly boolean[];
  /** The ring's plan of the forward in progress (reserve() to advance()). */
  #plan: RingPlan | null = null;
  /** The masks of the forward at (at, L), by kind; disposed when the next forward asks for others. */
  #masks: { at: number; L: number; byKey: Map<string, Tensor> } | null = null;

  constructor(dev: Device, config: ModelConfig, capacity: number, dtype: CacheDtype = 'float16', swaFull = false) {
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > config.context) {
      throw new TensorOpsError('E_ARG', `contextSize must be an integer from 1 to the model's context length ${config.context}; got ${capacity}`);
    }
    if (dtype !== 'float16' && dtype !== 'mxfp8') {
      throw new TensorOpsError('E_ARG', `the cache dtype must be 'float16' or 'mxfp8'; got ${String(dtype)}`);
    }
    if (dtype === 'mxfp8' && config.headDim % 32 !== 0) {
      throw new TensorOpsError('E_ARG', `an mxfp8 cache needs a head dimension that is a multiple of 32; this model's is ${config.headDim}`);
    }
    if (typeof swaFull !== 'boolean') throw new TensorOpsError('E_ARG', `swaFull must be a boolean; got ${String(swaFull)}`);
    this.#dev = dev;
    this.capacity = capacity;
    this.dtype = dtype;
    const sw = config.slidingWindow;
    this.#slides = sw && !swaFull ? sw.layers : [];
    // window + 1 slots: see kv-ring.ts. A cache smaller than that never wraps.
    this.#ring = sw && !swaFull && this.#slides.includes(true) ? new SlidingRing(sw.size, Math.min(sw.size + 1, capacity)) : null;
    const zeros = new Map<number, Tensor>();
    const make = (positions: number) => {
      let z = zeros.get(positions);
      if (!z) {
        z = dev.tensor(new Uint16Array(config.kvHeads * positions * config.headDim), [1, config.kvHeads, positions, config.headDim], 'float16');
        zeros.set(positions, z);
      }
      return dtype === 'mxfp8' ? dev.quantize(z, { format: 'mxfp8' }) : dev.cast(z, 'float16');
    };
    for (let l = 0; l < config.layers; l++) {
      const positions = this.#slides[l] ? this.#ring!.slots : capacity;
      this.#keys.push(make(positions));
      this.#values.push(make(positions));
    }
    for (const z of zeros.values()) z.dispose();
  }

  /** Bytes of device memory the keys and values hold (sliding-window layers: their ring). */
  get bytes(): number {
    let n = 0;
    for (const t of [...this.#keys, ...this.#values]) if (!t.disposed) n += t.bytes;
    return n;
  }

  /** Positions that hold keys. */
  get length(): number { return this.#length; }

  /** Forgets positions from `length` on (the next forward writes over them). */
  truncate(length: number): void {
    if (!Number.isInteger(length) || length < 0 || length > this.#length) {
      throw new TensorOpsError('E_ARG', `length must be an integer from 0 to ${this.#length}; got ${length}`);
    }
    this.#ring?.truncate(length, this.#length);
    this.#length = length;
  }

  /** @internal Room check before a forward of `tokens` positions; plans the ring's writes. */
  reserve(tokens: number): number {
    if (this.#length + tokens > this.capacity) {
      throw new TensorOpsError('E_ARG', `the KV cache holds ${this.capacity} positions; ${this.#length} are used and ${tokens} more do not fit (open the model with a larger contextSize)`);
    }
    this.#plan = this.#ring?.plan(this.#length, tokens) ?? null;
    // Masks are made per forward (queued ops keep the ones they read alive).
    this.#dropMasks();
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
   * A sliding layer of a ring cache answers from kv-ring-read.ts instead.
   */
  append(layer: number, k: Tensor, v: Tensor, at: number, window?: number): AttentionInputs {
    if (this.#slides[layer]) {
      const plan = this.#plan;
      if (!plan || plan.at !== at || plan.L !== k.shape[1]) throw new Error(`internal: no ring plan for the forward at ${at}`);
      return ringAppend({ dev: this.#dev, dtype: this.dtype, ring: this.#ring!, plan, mask: (key, make) => this.#mask(at, plan.L, `ring:${key}`, make) },
        this.#keys[layer], this.#values[layer], k, v);
    }
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
    return this.#mask(at, L, `${lo},${hi},${window ?? ''}`, () => {
      const n = hi - lo;
      const m = new Uint8Array(L * n);
      for (let i = 0; i < L; i++) {
        const p = at + i;
        const first = window === undefined ? 0 : Math.max(0, p - window + 1);
        m.fill(1, i * n + Math.max(first - lo, 0), i * n + Math.max(p + 1 - lo, 0));
      }
      return this.#dev.tensor(m, [1, 1, L, n], 'bool');
    });
  }

  /** The mask `key` of the forward at (at, L), made once by `make` and shared by every layer. */
  #mask(at: number, L: number, key: string, make: () => Tensor): Tensor {
    if (this.#masks && (this.#masks.at !== at || this.#masks.L !== L)) this.#dropMasks();
    this.#masks ??= { at, L, byKey: new Map() };
    const known = this.#masks.byKey.get(key);
    if (known) return known;
    const t = make();
    this.#masks.byKey.set(key, t);
    return t;
  }

  #dropMasks(): void {
    for (const t of this.#masks?.byKey.values() ?? []) t.dispose();
    this.#masks = null;
  }

  /** @internal Called by forward() once every layer has appended. */
  advance(tokens: number): void {
    if (this.#plan) this.#ring!.commit(this.#plan);
    this.#plan = null;
    this.#length += tokens;
  }

  dispose(): void {
    for (const t of [...this.#keys, ...this.#values]) if (!t.disposed) t.dispose();
    this.#dropMasks();
    this.#keys.length = 0;
    this.#values.length = 0;
  }
}
