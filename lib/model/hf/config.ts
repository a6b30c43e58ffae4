// A Hugging Face model folder's config.json as a ModelConfig: transformers' field names
// (hidden_size, num_attention_heads, rope_scaling, ...) for the architectures loadModel runs,
// each checked (a missing or wrong field is E_FORMAT naming it and what is accepted).
import { TensorOpsError } from '../../errors';
import { describe } from '../../validate';
import type { Architecture, ModelConfig } from '../config';
import { llama3RopeDivisors } from '../rope';

/** config.json's model_type, and the class names of its `architectures`, for each of ours. */
const MODEL_TYPES: Readonly<Record<string, Architecture>> = {
  llama: 'llama', mistral: 'mistral', qwen2: 'qwen2', qwen3: 'qwen3', qwen3_moe: 'qwen3moe', gpt_oss: 'gpt-oss',
};
const CLASSES: Readonly<Record<string, Architecture>> = {
  LlamaForCausalLM: 'llama', MistralForCausalLM: 'mistral', Qwen2ForCausalLM: 'qwen2', Qwen3ForCausalLM: 'qwen3',
  Qwen3MoeForCausalLM: 'qwen3moe', GptOssForCausalLM: 'gpt-oss',
};

export interface HfConfig {
  config: ModelConfig;
  /** tie_word_embeddings, when config.json says (absent: tied when the folder has no lm_head). */
  tied?: boolean;
  /** llama3 RoPE scaling: the divisor of each pair's frequency (a GGUF file's rope_freqs.weight). */
  ropeDivisors?: Float32Array;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads config.json's fields; every failure names the file and the field. */
class Fields {
  constructor(readonly file: string) {}

  fail(key: string, message: string): TensorOpsError {
    return new TensorOpsError('E_FORMAT', `'${this.file}': ${key} ${message}`);
  }

  num(obj: Record<string, unknown>, key: string, fallback?: number, where = key): number {
    const v = obj[key];
    if (v === undefined || v === null) {
      if (fallback !== undefined) return fallback;
      throw this.fail(where, 'is missing');
    }
    if (typeof v !== 'number' || !Number.isFinite(v)) throw this.fail(where, `must be a number; got ${describe(v)}`);
    return v;
  }

  int(obj: Record<string, unknown>, key: string, fallback?: number, max = 1 << 24, where = key): number {
    const n = this.num(obj, key, fallback, where);
    if (!Number.isInteger(n) || n < 1 || n > max) throw this.fail(where, `must be an integer from 1 to ${max}; got ${n}`);
    return n;
  }
}

/** Which of our architectures config.json describes (model_type, else its first `architectures` class). */
function architectureOf(json: Record<string, unknown>, f: Fields): Architecture {
  const type = json.model_type;
  const classes = Array.isArray(json.architectures) ? json.architectures : [];
  if (typeof type === 'string' && Object.prototype.hasOwnProperty.call(MODEL_TYPES, type)) return MODEL_TYPES[type];
  if (type === undefined) {
    const cls = classes.find((c): c is string => typeof c === 'string' && Object.prototype.hasOwnProperty.call(CLASSES, c));
    if (cls) return CLASSES[cls];
  }
  throw f.fail('model_type', `${describe(type)}${classes.length ? ` (architectures ${describe(classes)})` : ''} is not one loadModel runs; ` +
    `accepted: ${Object.keys(MODEL_TYPES).join(', ')} (${Object.keys(CLASSES).join(', ')})`);
}

/** rope_scaling (or transformers 5's rope_parameters) as our scale, YaRN parameters or llama3 divisors. */
function ropeScaling(json: Record<string, unknown>, f: Fields, base: number, dims: number, context: number, oss: boolean):
  { scale: number; yarn?: ModelConfig['rope']['yarn']; divisors?: Float32Array } {
  const key = json.rope_scaling !== undefined && json.rope_scaling !== null ? 'rope_scaling' : 'rope_parameters';
  const s = json[key];
  if (s === undefined || s === null) return { scale: 1 };
  if (!isObject(s)) throw f.fail(key, `must be an object; got ${describe(s)}`);
  const type = s.rope_type ?? s.type;
  if (type === undefined || type === 'default') return { scale: 1 };
  const factor = f.num(s, 'factor', type === 'llama3' ? 8 : undefined, `${key}.factor`);
  if (!(factor >= 1 && factor <= 1e6)) throw f.fail(`${key}.factor`, `must be from 1 to 1e6; got ${factor}`);
  if (type === 'linear') return { scale: factor };
  if (type === 'yarn') {
    if (s.mscale !== undefined || s.mscale_all_dim !== undefined) throw f.fail(key, 'has mscale / mscale_all_dim (DeepSeek\'s YaRN variant), which is not supported');
    // gpt-oss's configs say truncate: false (transformers then leaves the correction range unrounded).
    if (s.truncate === false && !oss) throw f.fail(`${key}.truncate`, 'false is not supported (the correction dims are whole pairs, as llama.cpp has them)');
    // transformers' default magnitude correction is 0.1 ln(factor) + 1, ours times attnFactor.
    const attention = f.num(s, 'attention_factor', 1 + 0.1 * Math.log(factor), `${key}.attention_factor`);
    return {
      scale: factor,
      yarn: {
        originalContext: f.int(s, 'original_max_position_embeddings', context, 1 << 24, `${key}.original_max_position_embeddings`),
        betaFast: f.num(s, 'beta_fast', 32, `${key}.beta_fast`),
        betaSlow: f.num(s, 'beta_slow', 1, `${key}.beta_slow`),
        attnFactor: attention / (1 + 0.1 * Math.log(factor)),
        ...(s.truncate === false ? { unrounded: true } : {}),
      },
    };
  }
  if (type === 'llama3') {
    const divisors = llama3RopeDivisors(base, dims, {
      factor,
      lowFreqFactor: f.num(s, 'low_freq_factor', 1, `${key}.low_freq_factor`),
      highFreqFactor: f.num(s, 'high_freq_factor', 4, `${key}.high_freq_factor`),
      originalContext: f.int(s, 'original_max_position_embeddings', 8192, 1 << 24, `${key}.original_max_position_embeddings`),
    });
    return { scale: 1, divisors };
  }
  throw f.fail(`${key}.rope_type`, `${describe(type)} is not supported; accepted: default, linear, yarn, llama3`);
}

/** The ModelConfig of a config.json (`file` names it in messages). */
export function configFromHf(json: Record<string, unknown>, file: string): HfConfig {
  const f = new Fields(file);
  const arch = architectureOf(json, f);
  const act = json.hidden_act ?? json.hidden_activation;
  if (act !== undefined && act !== 'silu') throw f.fail('hidden_act', `${describe(act)} is not supported (the MLP is SwiGLU: 'silu')`);
  const q = json.quantization_config;
  const oss = arch === 'gpt-oss';
  // gpt-oss's published experts are MXFP4 blocks and scales (quant_method 'mxfp4'), read as mxfp4.
  if (isObject(q) && q.quant_method !== undefined && q.quant_method !== 'fp8' && !(oss && q.quant_method === 'mxfp4')) {
    throw f.fail('quantization_config.quant_method', `${describe(q.quant_method)} is not supported; MLX's quantization, FP8 weights with block scales and gpt-oss's MXFP4 are`);
  }
  const width = f.int(json, 'hidden_size');
  const heads = f.int(json, 'num_attention_heads', undefined, 4096);
  const kvHeads = f.int(json, 'num_key_value_heads', heads, 4096);
  if (heads % kvHeads !== 0) throw f.fail('num_attention_heads', `${heads} is not a multiple of num_key_value_heads ${kvHeads}`);
  const headDim = f.int(json, 'head_dim', width % heads === 0 ? width / heads : undefined, 1024);
  const partial = f.num(json, 'partial_rotary_factor', 1);
  const ropeDims = Math.round(headDim * partial);
  if (!(partial > 0 && partial <= 1) || ropeDims % 2 !== 0) {
    throw f.fail('partial_rotary_factor', `${partial} must leave an even number of rotating features of head_dim ${headDim}`);
  }
  const context = f.int(json, 'max_position_embeddings', 4096);
  const base = f.num(json, 'rope_theta', isObject(json.rope_parameters) ? f.num(json.rope_parameters, 'rope_theta', 10000, 'rope_parameters.rope_theta') : 10000);
  if (!(base > 1)) throw f.fail('rope_theta', `must be greater than 1; got ${base}`);
  const { scale, yarn, divisors } = ropeScaling(json, f, base, ropeDims, context, oss);
  if (yarn && ropeDims !== headDim) throw f.fail('rope_scaling', `YaRN with partial rotary dimensions (${ropeDims} of ${headDim}) is not supported`);
  const eps = f.num(json, 'rms_norm_eps', 1e-6);
  if (!(eps > 0 && eps < 1)) throw f.fail('rms_norm_eps', `must be in (0, 1); got ${eps}`);
  const moe = arch === 'qwen3moe' || oss;
  if (arch === 'qwen3moe') {
    if (json.norm_topk_prob !== true) throw f.fail('norm_topk_prob', `${describe(json.norm_topk_prob)} is not supported: the experts' weights are renormalised over the chosen ones (true)`);
    if (Array.isArray(json.mlp_only_layers) && json.mlp_only_layers.length > 0) throw f.fail('mlp_only_layers', 'must be empty (every layer a mixture of experts)');
    if (f.int(json, 'decoder_sparse_step', 1) !== 1) throw f.fail('decoder_sparse_step', 'must be 1 (every layer a mixture of experts)');
  }
  const tied = json.tie_word_embeddings;
  if (tied !== undefined && typeof tied !== 'boolean') throw f.fail('tie_word_embeddings', `must be true or false; got ${describe(tied)}`);
  const config: ModelConfig = {
    arch,
    layers: f.int(json, 'num_hidden_layers', undefined, 4096),
    width, heads, kvHeads, headDim,
    ff: f.int(json, arch === 'qwen3moe' ? 'moe_intermediate_size' : 'intermediate_size'),
    vocab: f.int(json, 'vocab_size'),
    context,
    eps,
    // Hugging Face checkpoints keep q/k as trained: rotate_half pairs (i, i + dims/2) for every
    // architecture here (llama.cpp's converter permutes llama's rows for adjacent pairs instead).
    rope: { base, dims: ropeDims, style: 'neox', scale, ...(yarn ? { yarn } : {}) },
    experts: moe ? f.int(json, oss ? 'num_local_experts' : 'num_experts', undefined, 4096) : 0,
    expertsUsed: moe ? f.int(json, oss && json.num_experts_per_tok === undefined ? 'experts_per_token' : 'num_experts_per_tok', undefined, 4096) : 0,
    normTopK: moe,
    ...(oss ? gptOssFields(json, f, f.int(json, 'num_hidden_layers', undefined, 4096)) : {}),
  };
  if (moe && config.expertsUsed > config.experts) throw f.fail('num_experts_per_tok', `${config.expertsUsed} is more than num_experts ${config.experts}`);
  return { config, ...(tied !== undefined ? { tied } : {}), ...(divisors ? { ropeDivisors: divisors } : {}) };
}

/**
 * gpt-oss's sliding window (sliding_window, on the layers layer_types names 'sliding_attention';
 * without layer_types, the even layers, as llama.cpp's pattern) and its SwiGLU (alpha 1.702,
 * swiglu_limit, default 7).
 */
function gptOssFields(json: Record<string, unknown>, f: Fields, layers: number): Pick<ModelConfig, 'slidingWindow' | 'swiglu'> {
  const size = f.int(json, 'sliding_window', undefined, 1 << 24);
  const types = json.layer_types;
  let slides: boolean[];
  if (types === undefined || types === null) {
    slides = Array.from({ length: layers }, (_, l) => l % 2 === 0);
  } else {
    if (!Array.isArray(types) || types.length !== layers || !types.every((t) => t === 'sliding_attention' || t === 'full_attention')) {
      throw f.fail('layer_types', `must list 'sliding_attention' or 'full_attention' for each of the ${layers} layers; got ${describe(types)}`);
    }
    slides = types.map((t) => t === 'sliding_attention');
  }
  const limit = f.num(json, 'swiglu_limit', 7);
  if (!(limit > 0)) throw f.fail('swiglu_limit', `must be positive; got ${limit}`);
  return { slidingWindow: { size, layers: slides }, swiglu: { alpha: 1.702, limit } };
}
