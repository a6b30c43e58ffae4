// A decoder model's hyperparameters, read from GGUF metadata (llama.cpp's key names:
// `<arch>.embedding_length`, `<arch>.attention.head_count`, ...).
import { TensorOpsError } from '../errors';
import type { GgufValue } from '../loaders/gguf/types';

/** The architectures loadModel runs (GGUF `general.architecture`). */
export const ARCHITECTURES = ['llama', 'mistral', 'qwen2', 'qwen3', 'qwen3moe'] as const;
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
    yarn?: { originalContext: number; betaFast: number; betaSlow: number; attnFactor: number };
  };
  experts: number;
  expertsUsed: number;
  /** qwen3moe renormalises the chosen experts' weights to sum to 1. */
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
  const moe = a === 'qwen3moe';
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
  const eps = num(meta, `${a}.attention.layer_norm_rms_epsilon`);
  if (!(eps > 0 && eps < 1)) throw new TensorOpsError('E_FORMAT', `attention.layer_norm_rms_epsilon must be in (0, 1); got ${eps}`);
  return {
    arch: a,
    layers: positiveInt(meta, `${a}.block_count`, undefined, 4096),
    width, heads, kvHeads, headDim, ff, vocab,
    context: positiveInt(meta, `${a}.context_length`, 4096, 1 << 24),
    eps,
    rope: {
      base: num(meta, `${a}.rope.freq_base`, 10000),
      dims: ropeDims,
      // llama.cpp's llama_model_rope_type: LLAMA (and mistral) use the normal (interleaved)
      // pairing on weights converted for it; the qwen families use neox.
      style: a === 'llama' || a === 'mistral' ? 'interleaved' : 'neox',
      scale,
      ...(yarn ? { yarn } : {}),
    },
    experts: moe ? positiveInt(meta, `${a}.expert_count`, undefined, 4096) : 0,
    expertsUsed: moe ? positiveInt(meta, `${a}.expert_used_count`, undefined, 4096) : 0,
    normTopK: moe,
  };
}
