// One forward pass of the llama family (llama, mistral, qwen2 with qkv biases, qwen3 with q/k
// norms), qwen3moe and gpt-oss (biases, attention sinks, sliding-window layers, experts with
// biases), as llama.cpp's graphs compute them: every op queued on the device, nothing read back.
import type { Device } from '../../device';
import { handleOf, natives, type Tensor } from '../../tensor';
import type { Activations } from '../../types';
import type { ModelConfig } from '../config';
import type { KVCache } from '../kv-cache';
import type { LayerWeights, ModelWeights } from '../weights';
import { expertsForward } from './experts';

/** Intermediate tensors of one forward pass, disposed once their consumers are queued. */
export class Scratch {
  readonly #all: Tensor[] = [];
  keep<T extends Tensor>(t: T): T { this.#all.push(t); return t; }
  dispose(): void {
    for (const t of this.#all) if (!t.disposed) t.dispose();
    this.#all.length = 0;
  }
}

export interface ForwardContext {
  dev: Device;
  config: ModelConfig;
  weights: ModelWeights;
  /** float32 [rope.dims / 2] inverse frequencies when the model scales RoPE; else base is used. */
  ropeFreqs?: Tensor;
  /** The sliding-window layers' table when they have a base of their own (rope.baseSwa). */
  ropeFreqsSwa?: Tensor;
  /** The attention's scale when not 1/sqrt(D) (YaRN's magnitude correction). */
  attentionScale?: number;
  /** linear's `activations` for every projection ('int8': llama.cpp's 8-bit activations). */
  activations: Activations;
}

function attentionBlock(c: ForwardContext, s: Scratch, w: LayerWeights, h: Tensor, cache: KVCache, layer: number, at: number): Tensor {
  const { dev, config } = c;
  const L = h.shape[0];
  const { heads, kvHeads, headDim, eps } = config;
  const project = (wt: LayerWeights['q'], bias: Tensor | undefined, H: number, norm: Tensor | undefined) => {
    let t = s.keep(dev.linear(h, wt, { activations: c.activations, ...(bias ? { bias } : {}) })).reshape([1, L, H, headDim]);
    if (norm) t = s.keep(dev.rmsNorm(t, norm, { eps }));
    return t;
  };
  const sliding = config.slidingWindow?.layers[layer] === true;
  const ownBase = sliding && config.rope.baseSwa !== undefined;
  const freqs = ownBase ? c.ropeFreqsSwa : c.ropeFreqs;
  const rope = (t: Tensor) => s.keep(dev.rope(t, {
    offset: at, layout: 'blhd', dims: config.rope.dims, style: config.rope.style,
    ...(freqs ? { freqs } : { base: ownBase ? config.rope.baseSwa! : config.rope.base }),
  }));
  const q = rope(project(w.q, w.qBias, heads, w.qNorm));
  const k = rope(project(w.k, w.kBias, kvHeads, w.kNorm));
  const v = project(w.v, w.vBias, kvHeads, undefined);
  const { keys, values, copies, mask } = cache.append(layer, k, v, at, sliding ? config.slidingWindow!.size : undefined);
  const qh = L === 1 ? q.reshape([1, heads, 1, headDim]) : s.keep(dev.transpose(q, [0, 2, 1, 3]));
  const extra = {
    ...(c.attentionScale === undefined ? {} : { scale: c.attentionScale }),
    ...(w.sinks ? { sinks: w.sinks } : {}),
  };
  const o = s.keep(dev.attention(qh, keys, values, mask ? { mask, ...extra } : { causal: true, ...extra }));
  if (copies) { s.keep(keys as Tensor); s.keep(values as Tensor); }
  const merged = L === 1 ? o.reshape([1, heads * headDim]) : s.keep(dev.transpose(o, [0, 2, 1, 3])).reshape([L, heads * headDim]);
  return s.keep(dev.linear(merged, w.o, { activations: c.activations, ...(w.oBias ? { bias: w.oBias } : {}) }));
}

function mlp(c: ForwardContext, s: Scratch, w: LayerWeights, m: Tensor): Tensor {
  const { dev, activations } = c;
  const gated = s.keep(dev.swiglu(s.keep(dev.linear(m, w.gate!, { activations })), s.keep(dev.linear(m, w.up!, { activations }))));
  return s.keep(dev.linear(gated, w.down!, { activations }));
}

/**
 * Runs `ids` (int32 [L]) at the cache's next positions and returns float32 logits: [1, vocab]
 * for the last position, or [L, vocab] for every position when `all` is set.
 */
export async function forward(c: ForwardContext, ids: Tensor, cache: KVCache, all: boolean): Promise<Tensor> {
  const { dev, config, weights } = c;
  const L = ids.shape[0];
  const at = cache.reserve(L);
  // Outputs are allocated when an op is queued, and the JS thread queues a whole prompt's forward
  // pass in milliseconds: with every layer in flight at once, none of their buffers could come
  // back to the pool, and each op would fault in fresh pages. So a prompt keeps at most two layers
  // queued (the next is queued once the one before has run), and each layer's intermediates are
  // disposed once queued (the queued ops keep what they read alive until they ran).
  const pace = L > 1;
  const s = new Scratch();
  let x = dev.embedding(weights.embedding, ids);
  try {
    if (x.dtype !== 'float32') { const e = x; x = dev.cast(e, 'float32'); e.dispose(); }
    for (let l = 0; l < config.layers; l++) {
      const w = weights.layers[l];
      const h = s.keep(dev.rmsNorm(x, w.attnNorm, { eps: config.eps }));
      const r = s.keep(dev.add(x, attentionBlock(c, s, w, h, cache, l, at)));
      const m = s.keep(dev.rmsNorm(r, w.ffnNorm, { eps: config.eps }));
      const f = w.router ? expertsForward(c, s, w, m) : mlp(c, s, w, m);
      const y = dev.add(r, f);
      s.dispose();
      const input = x;
      x = y;
      if (pace) await readyOf(input);
      input.dispose();
    }
    cache.advance(L);
    const last = all || L === 1 ? x : s.keep(dev.slice(x, { axis: 0, start: L - 1, end: L }));
    return dev.linear(s.keep(dev.rmsNorm(last, weights.outputNorm, { eps: config.eps })), weights.output, { outDtype: 'float32', activations: c.activations });
  } finally {
    s.dispose();
    if (!x.disposed) x.dispose();
  }
}

/** Resolves once the op writing t has run (rejects with its failure). */
function readyOf(t: Tensor): Promise<void> {
  return Promise.resolve(natives().whenReady(t[handleOf]));
}
