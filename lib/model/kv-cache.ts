// The KV cache of a decoder: per layer, keys and values [1, Hkv, capacity, D] on the device,
// appended in stream order with `write` (a float16 cache, as llama.cpp's default). `length` is
// how many positions hold keys; forward() appends at `length` and advances it.
import { TensorOpsError } from '../errors';
import type { Device } from '../device';
import type { Tensor } from '../tensor';
import type { ModelConfig } from './config';

export class KVCache {
  readonly capacity: number;
  #length = 0;
  readonly #dev: Device;
  readonly #keys: Tensor[] = [];
  readonly #values: Tensor[] = [];

  constructor(dev: Device, config: ModelConfig, capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > config.context) {
      throw new TensorOpsError('E_ARG', `contextSize must be an integer from 1 to the model's context length ${config.context}; got ${capacity}`);
    }
    this.#dev = dev;
    this.capacity = capacity;
    const shape = [1, config.kvHeads, capacity, config.headDim];
    const zeros = new Uint16Array(config.kvHeads * capacity * config.headDim);
    for (let l = 0; l < config.layers; l++) {
      this.#keys.push(dev.tensor(zeros, shape, 'float16'));
      this.#values.push(dev.tensor(zeros, shape, 'float16'));
    }
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

  /** Room check before a forward of `tokens` positions. */
  reserve(tokens: number): number {
    if (this.#length + tokens > this.capacity) {
      throw new TensorOpsError('E_ARG', `the KV cache holds ${this.capacity} positions; ${this.#length} are used and ${tokens} more do not fit (open the model with a larger contextSize)`);
    }
    return this.#length;
  }

  /**
   * Writes one layer's new keys and values (float32 [1, L, Hkv, D], after RoPE) at position `at`
   * and returns the keys and values of positions [0, at + L) in [1, Hkv, at + L, D]: copies the
   * caller disposes (`copies`), or the cache's own tensors when it is full.
   */
  append(layer: number, k: Tensor, v: Tensor, at: number): { keys: Tensor; values: Tensor; copies: boolean } {
    const dev = this.#dev;
    const L = k.shape[1];
    const toCache = (t: Tensor) => {
      const h = dev.cast(t, 'float16');
      return L === 1 ? h.reshape([1, t.shape[2], 1, t.shape[3]]) : dev.transpose(h, [0, 2, 1, 3]);
    };
    dev.write(this.#keys[layer], toCache(k), { axis: 2, offset: at });
    dev.write(this.#values[layer], toCache(v), { axis: 2, offset: at });
    const full = at + L === this.capacity;
    const seen = (c: Tensor) => (full ? c : dev.slice(c, { axis: 2, start: 0, end: at + L }));
    return { keys: seen(this.#keys[layer]), values: seen(this.#values[layer]), copies: !full };
  }

  /** Called by forward() once every layer has appended. */
  advance(tokens: number): void { this.#length += tokens; }

  dispose(): void {
    for (const t of [...this.#keys, ...this.#values]) t.dispose();
    this.#keys.length = 0;
    this.#values.length = 0;
  }
}
