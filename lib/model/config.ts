// A decoder model's hyperparameters, read from GGUF metadata (llama.cpp's key names:
// `<arch>.embedding_length`, `<arch>.attention.head_count`, ...).
import { TensorOpsError } from '../errors';
import type { GgufValue } from '../loaders/gguf/types';

/** The architectures loadModel runs (GGUF `general.architecture`). */
export const ARCHITECTURES = ['llama', 'mistral', 'qwen2', 'qwen3', 'qwen3moe', 'gpt-oss'] as const;
export type Architecture = (typeof ARCHITECTURES)[number];

export interface ModelConfig {
  arch: Architecture;
  layers: number;
  width: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  /** MLP width; for mixture-of-experts models, each expert's. */
  ff: number;
  vocab: number;
  context: number;
  eps: number;
  rope: {
    base: number;
    /** Leading features of each head that rotate. */
    dims: number;
    /**
     * Which features rotate together: 'interleaved' pairs (2i, 2i+1), 'neox' (i, i + dims/2).
     * GGUF llama/mistral are interleaved (llama.cpp's converter permuted their q/k rows for it);
     * qwen GGUF files and every Hugging Face checkpoint (unpermuted, rotate_half) are neox.
     */
    style: 'interleaved' | 'neox';
    /** 'linear' and 'yarn' scaling: the context factor (llama.cpp's freq_scale = 1/scale). */
    scale: number;
    /** YaRN (rope.scaling.type 'yarn'): interpolation blended into extrapolation per frequency. */
    yarn?: {
      originalContext: number; betaFast: number; betaSlow: number; attnFactor: number;
      /** transformers' `truncate: false` (gpt-oss): the correction range is not rounded to whole pairs. */
      unrounded?: boolean;
    };
    /** The base of the sliding-window layers when it differs (gpt-oss's rope.freq_base_swa). */
    baseSwa?: number;
  };
  /**
   * Sliding-window attention (gpt-oss): on the layers marked true, the query at position p sees
   * the keys at positions p - size < j <= p (llama.cpp's LLAMA_SWA_TYPE_STANDARD).
   */
  slidingWindow?: { size: number; layers: readonly boolean[] };
  /** gpt-oss's SwiGLU in the experts (llama.cpp's swiglu_oai); else silu(gate) * up. */
  swiglu?: { alpha: number; limit: number };
  experts: number;
  expertsUsed: number;
  /**
   * The chosen experts' weights sum to 1: qwen3moe renormalises the top k of the softmax, gpt-oss
   * takes the softmax of the top k logits; both are the softmax over the k largest logits.
   */
  normTopK: boolean;
}

function num(meta: Map<string, GgufValue>, key: string, fallback?: number): number {
  const v = meta.get(key);
  if (v === undefined) {
    if (fallback !== undefined) return fallback;
    throw new TensorOpsError('E_FORMAT', `the model's metadata has no '${key}'`);
  }
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n)) {
    throw new TensorOpsError('E_FORMAT', `metadata '${key}' must be a number; got ${typeof v}`);
  }
  return n;
}

function positiveInt(meta: Map<string, GgufValue>, key: string, fallback?: number, max = 1 << 24): number {
  const n = num(meta, key, fallback);
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new TensorOpsError('E_FORMAT', `metadata '${key}' must be an integer from 1 to ${max}; got ${n}`);
  }
  return n;
}

/** The config of a GGUF model, or E_FORMAT naming the key that is missing or wrong. */
export function configFromGguf(meta: Map<string, GgufValue>, vocab: number): ModelConfig {
  const arch = meta.get('general.architecture');
  if (typeof arch !== 'string' || !(ARCHITECTURES as readonly string[]).includes(arch)) {
    throw new TensorOpsError('E_FORMAT', `general.architecture must be one of ${ARCHITECTURES.join(', ')}; got ${JSON.stringify(arch)}`);
  }
  const a = arch as Architecture;
  const width = positiveInt(meta, `${a}.embedding_length`);
  const heads = positiveInt(meta, `${a}.attention.head_count`, undefined, 4096);
  const headDim = positiveInt(meta, `${a}.attention.key_length`, width % heads === 0 ? width / heads : undefined, 1024);
  const valueDim = positiveInt(meta, `${a}.attention.value_length`, headDim, 1024);
  if (valueDim !== headDim) {
    throw new TensorOpsError('E_FORMAT', `key_length ${headDim} and value_length ${valueDim} differ; loadModel runs equal head dimensions`);
  }
  const kvHeads = positiveInt(meta, `${a}.attention.head_count_kv`, heads, 4096);
  if (heads % kvHeads !== 0) {
    throw new TensorOpsError('E_FORMAT', `attention.head_count ${heads} is not a multiple of head_count_kv ${kvHeads}`);
  }
  const moe = a === 'qwen3moe' || a === 'gpt-oss';
  const ff = positiveInt(meta, moe ? `${a}.expert_feed_forward_length` : `${a}.feed_forward_length`);
  const ropeDims = positiveInt(meta, `${a}.rope.dimension_count`, headDim, headDim);
  if (ropeDims % 2 !== 0) throw new TensorOpsError('E_FORMAT', `rope.dimension_count must be even; got ${ropeDims}`);
  const scalingType = meta.get(`${a}.rope.scaling.type`);
  let scale = 1;
  let yarn: ModelConfig['rope']['yarn'];
  if (scalingType === 'linear' || scalingType === 'yarn') {
    scale = num(meta, `${a}.rope.scaling.factor`);
    if (!(scale >= 1 && scale <= 1e6)) throw new TensorOpsError('E_FORMAT', `rope.scaling.factor must be from 1 to 1e6; got ${scale}`);
  } else if (scalingType !== undefined && scalingType !== 'none') {
    throw new TensorOpsError('E_FORMAT', `rope.scaling.type '${String(scalingType)}' is not supported (none, linear and yarn are; llama3's rope_freqs tensor is)`);
  }
  if (scalingType === 'yarn') {
    if (ropeDims !== headDim) throw new TensorOpsError('E_FORMAT', `YaRN with partial rotary dimensions (${ropeDims} of ${headDim}) is not supported`);
    yarn = {
      originalContext: positiveInt(meta, `${a}.rope.scaling.original_context_length`, undefined, 1 << 24),
      betaFast: num(meta, `${a}.rope.scaling.yarn_beta_fast`, 32),
      betaSlow: num(meta, `${a}.rope.scaling.yarn_beta_slow`, 1),
      attnFactor: num(meta, `${a}.rope.scaling.attn_factor`, 1),
    };
  }
  const layers = positiveInt(meta, `${a}.block_count`, undefined, 4096);
  const eps = num(meta, `${a}.attention.layer_norm_rms_epsilon`);
  if (!(eps > 0 && eps < 1)) throw new TensorOpsError('E_FORMAT', `attention.layer_norm_rms_epsilon must be in (0, 1); got ${eps}`);
  const oss: Partial<ReturnType<typeof gptOssParts>> = a === 'gpt-oss' ? gptOssParts(meta, layers) : {};
  const experts = moe ? positiveInt(meta, `${a}.expert_count`, undefined, 4096) : 0;
  const expertsUsed = moe ? positiveInt(meta, `${a}.expert_used_count`, undefined, 4096) : 0;
  if (expertsUsed > experts) throw new TensorOpsError('E_FORMAT', `metadata '${a}.expert_used_count' ${expertsUsed} is more than expert_count ${experts}`);
  const base = num(meta, `${a}.rope.freq_base`, 10000);
  return {
    arch: a,
    layers,
    width, heads, kvHeads, headDim, ff, vocab,
    context: positiveInt(meta, `${a}.context_length`, 4096, 1 << 24),
    eps,
    rope: {
      base,
      dims: ropeDims,
      // llama.cpp's llama_model_rope_type: LLAMA (and mistral) use the normal (interleaved)
      // pairing on weights converted for it; the qwen families use neox.
      style: a === 'llama' || a === 'mistral' ? 'interleaved' : 'neox',
      scale,
      ...(yarn ? { yarn } : {}),
      ...(oss.baseSwa !== undefined && oss.baseSwa !== base ? { baseSwa: oss.baseSwa } : {}),
    },
    ...(oss.slidingWindow ? { slidingWindow: oss.slidingWindow, swiglu: GPT_OSS_SWIGLU } : {}),
    experts,
    expertsUsed,
    normTopK: moe,
  };
}

/** gpt-oss's SwiGLU constants (llama.cpp's build_moe_ffn, LLM_FFN_SWIGLU_OAI_MOE). */
const GPT_OSS_SWIGLU = { alpha: 1.702, limit: 7 };

/**
 * gpt-oss's sliding window, as llama.cpp's llama_model_openai_moe reads it: the window
 * (attention.sliding_window, required) and the period of the pattern (sliding_window_pattern,
 * default 2): layer l slides when l % period < period - 1, so with 2 the even layers slide and the
 * odd ones see everything. rope.freq_base_swa, when given, is the sliding layers' RoPE base.
 */
function gptOssParts(meta: Map<string, GgufValue>, layers: number): { slidingWindow: NonNullable<ModelConfig['slidingWindow']>; baseSwa?: number } {
  const size = positiveInt(meta, 'gpt-oss.attention.sliding_window', undefined, 1 << 24);
  const period = num(meta, 'gpt-oss.attention.sliding_window_pattern', 2);
  if (!Number.isInteger(period) || period < 0 || period > 4096) {
    throw new TensorOpsError('E_FORMAT', `metadata 'gpt-oss.attention.sliding_window_pattern' must be an integer from 0 to 4096; got ${period}`);
  }
  // llama_hparams::set_swa_pattern: a period of 0 makes every layer slide.
  const slides = Array.from({ length: layers }, (_, l) => period === 0 || l % period < period - 1);
  const baseSwa = meta.has('gpt-oss.rope.freq_base_swa') ? num(meta, 'gpt-oss.rope.freq_base_swa') : undefined;
  if (baseSwa !== undefined && !(baseSwa > 0)) throw new TensorOpsError('E_FORMAT', `metadata 'gpt-oss.rope.freq_base_swa' must be positive; got ${baseSwa}`);
  return { slidingWindow: { size, layers: slides }, ...(baseSwa !== undefined ? { baseSwa } : {}) };
}
