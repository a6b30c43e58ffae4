// Hugging Face model folders of the synthetic models (config.json, safetensors weights,
// tokenizer.json), written from the float values writeSyntheticModel put in the GGUF file, the way
// transformers stores them: llama's q/k rows unpermuted (llama.cpp's converter permutes them for
// its adjacent-pair RoPE), each qwen3moe expert a tensor of its own; or quantized as mlx-lm
// writes its folders (affine codes, scales and biases; experts stacked in switch_mlp).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeGgml, encodeGgml, writeSafetensors, type SafetensorsWriteTensor, type SyntheticModelSpec } from '../../lib/index';
import { syntheticVocabulary } from '../../lib/model/synthetic';
import type { TokenizerData } from '../../lib/tokenizer/index';
import { hfTokenizerJson } from './hf-tokenizer';
import { mlxAffineQuantize, roundBf16, scaleBytes } from './mlx-quant';

type Values = ArrayLike<number>;

/**
 * llama.cpp's permute of llama's q/k rows (convert_hf_to_gguf.py:
 * w.reshape(heads, 2, D/2, K).swapaxes(1, 2).reshape(w.shape)): row h*D + 2i + a of the result is
 * row h*D + a*D/2 + i of w. `back` undoes it.
 */
export function permuteQK(w: Values, heads: number, K: number, back = false): Float32Array {
  const D = w.length / K / heads;
  const out = new Float32Array(w.length);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < D / 2; i++) {
      for (let a = 0; a < 2; a++) {
        const gguf = h * D + 2 * i + a, hf = h * D + a * (D / 2) + i;
        const [to, from] = back ? [hf, gguf] : [gguf, hf];
        for (let k = 0; k < K; k++) out[to * K + k] = w[from * K + k];
      }
    }
  }
  return out;
}

const MODEL_TYPE = { llama: 'llama', qwen2: 'qwen2', qwen3: 'qwen3', qwen3moe: 'qwen3_moe' } as const;
const CLASS = { llama: 'LlamaForCausalLM', qwen2: 'Qwen2ForCausalLM', qwen3: 'Qwen3ForCausalLM', qwen3moe: 'Qwen3MoeForCausalLM' } as const;

/** config.json for a synthetic spec, with transformers' field names. */
export function hfConfig(spec: SyntheticModelSpec): Record<string, unknown> {
  const moe = spec.arch === 'qwen3moe';
  const c: Record<string, unknown> = {
    architectures: [CLASS[spec.arch]], model_type: MODEL_TYPE[spec.arch],
    hidden_size: spec.width, num_hidden_layers: spec.layers, num_attention_heads: spec.heads, num_key_value_heads: spec.kvHeads,
    head_dim: spec.headDim ?? spec.width / spec.heads, intermediate_size: moe ? 4 * spec.ff : spec.ff,
    max_position_embeddings: spec.context ?? 4096, rms_norm_eps: spec.eps ?? 1e-6, rope_theta: spec.ropeBase ?? 10000,
    vocab_size: spec.vocab, tie_word_embeddings: spec.tiedEmbeddings ?? false, hidden_act: 'silu',
    bos_token_id: 1, eos_token_id: 2, torch_dtype: 'bfloat16', attention_dropout: 0,
  };
  if (moe) {
    Object.assign(c, { num_experts: spec.experts ?? 8, num_experts_per_tok: spec.expertsUsed ?? 2, moe_intermediate_size: spec.ff,
      norm_topk_prob: true, decoder_sparse_step: 1, mlp_only_layers: [] });
  }
  const s = spec.ropeScaling;
  if (s?.type === 'linear') c.rope_scaling = { rope_type: 'linear', factor: s.factor };
  if (s?.type === 'yarn') c.rope_scaling = { rope_type: 'yarn', factor: s.factor, original_max_position_embeddings: s.originalContext };
  if (s?.type === 'llama3') {
    c.rope_scaling = { rope_type: 'llama3', factor: s.factor, low_freq_factor: s.lowFreqFactor, high_freq_factor: s.highFreqFactor,
      original_max_position_embeddings: s.originalContext };
  }
  return c;
}

/** The synthetic models' SentencePiece vocabulary as TokenizerData (what their GGUF file holds). */
export function syntheticTokenizerData(vocab: number): TokenizerData {
  const v = syntheticVocabulary(vocab);
  return { model: 'llama', tokens: v.tokens, scores: v.scores, tokenTypes: v.types, bosId: 1, eosId: 2, unkId: 0, addBos: true };
}

/** A GGUF tensor name -> the HF name(s) (experts: one per expert, or mlx-lm's stacked switch_mlp). */
function hfNames(gguf: string, experts: number, stacked: boolean): string[] {
  const global: Record<string, string> = { 'token_embd.weight': 'model.embed_tokens.weight', 'output_norm.weight': 'model.norm.weight', 'output.weight': 'lm_head.weight' };
  if (global[gguf]) return [global[gguf]];
  const [, l, rest] = /^blk\.(\d+)\.(.+)$/.exec(gguf)!;
  const layer: Record<string, string> = {
    'attn_norm.weight': 'input_layernorm.weight', 'ffn_norm.weight': 'post_attention_layernorm.weight',
    'attn_q.weight': 'self_attn.q_proj.weight', 'attn_k.weight': 'self_attn.k_proj.weight', 'attn_v.weight': 'self_attn.v_proj.weight',
    'attn_output.weight': 'self_attn.o_proj.weight', 'attn_q.bias': 'self_attn.q_proj.bias', 'attn_k.bias': 'self_attn.k_proj.bias',
    'attn_v.bias': 'self_attn.v_proj.bias', 'attn_q_norm.weight': 'self_attn.q_norm.weight', 'attn_k_norm.weight': 'self_attn.k_norm.weight',
    'ffn_gate.weight': 'mlp.gate_proj.weight', 'ffn_up.weight': 'mlp.up_proj.weight', 'ffn_down.weight': 'mlp.down_proj.weight',
    'ffn_gate_inp.weight': 'mlp.gate.weight',
  };
  if (layer[rest]) return [`model.layers.${l}.${layer[rest]}`];
  const proj = /^ffn_(gate|up|down)_exps\.weight$/.exec(rest)![1];
  if (stacked) return [`model.layers.${l}.mlp.switch_mlp.${proj}_proj.weight`];
  return Array.from({ length: experts }, (_, e) => `model.layers.${l}.mlp.experts.${e}.${proj}_proj.weight`);
}

export interface HfFolderOptions {
  /** The 2-D weights' dtype (default: the spec's type); norms, biases and the router stay F32 as in the GGUF file. */
  dtype?: 'F32' | 'F16' | 'BF16';
  /** Norms and biases in BF16 too (as published bfloat16 checkpoints; default F32). */
  bf16Norms?: boolean;
  /** Split the weights into this many shards with model.safetensors.index.json. */
  shards?: number;
  /** Write llama's q/k rows as the GGUF file holds them (a folder wrong on purpose). */
  keepPermuted?: boolean;
  /** mlx-lm's affine quantization of every 2-D weight (routerBits: the router's, as a per-layer entry). */
  mlx?: { bits: number; groupSize: number; routerBits?: number };
  /** Fields to add to / replace in config.json. */
  config?: Record<string, unknown>;
  /** HF tensor names to leave out. */
  omit?: readonly string[];
}

/**
 * Writes `dir` as a Hugging Face folder of the model whose GGUF weights are `weights` (by GGUF
 * name, ggml order, as writeSyntheticModel keeps them). Returns the values the folder holds
 * (dequantized, for MLX) by GGUF name and in GGUF order: the float64 reference's weights.
 */
export function writeHfFolder(dir: string, spec: SyntheticModelSpec, weights: Map<string, Float32Array>, options: HfFolderOptions = {}): Map<string, Values> {
  mkdirSync(dir, { recursive: true });
  const dtype = options.dtype ?? (spec.type as 'F32' | 'F16' | 'BF16');
  const E = spec.experts ?? 8;
  const headDim = spec.headDim ?? spec.width / spec.heads;
  const mlx = options.mlx;
  const tensors: SafetensorsWriteTensor[] = [];
  const held = new Map<string, Values>();
  const quantization: Record<string, unknown> = mlx ? { group_size: mlx.groupSize, bits: mlx.bits } : {};
  for (const [gguf, values] of weights) {
    const big = /(token_embd|attn_[qkv]|attn_output|ffn_(gate|up|down)(_exps)?|output)\.weight$/.test(gguf);
    const router = gguf.endsWith('ffn_gate_inp.weight');
    // Shapes outermost first: experts [E, N, K], 2-D weights [N, K], the rest 1-D.
    const experts = gguf.includes('_exps');
    const rows = big || router ? rowsOf(gguf, spec, headDim) : 0;
    const K = rows ? values.length / (experts ? E : 1) / rows : values.length;
    const shape = experts ? [E, rows, K] : rows ? [rows, K] : [K];
    const heads = gguf.endsWith('attn_q.weight') ? spec.heads : spec.kvHeads;
    const permuted = spec.arch === 'llama' && /attn_[qk]\.weight$/.test(gguf) && !options.keepPermuted;
    const hfValues = permuted ? permuteQK(values, heads, K, true) : values;
    const names = hfNames(gguf, E, !!mlx);
    if (mlx && (big || router)) {
      const bits = router && mlx.routerBits ? mlx.routerBits : mlx.bits;
      const module = names[0].replace(/\.weight$/, '');
      if (bits !== mlx.bits) quantization[module] = { group_size: mlx.groupSize, bits };
      const q = mlxAffineQuantize(hfValues, K, bits, mlx.groupSize, 'BF16');
      const lead = shape.slice(0, -1), groups = [...lead, K / mlx.groupSize];
      tensors.push({ name: `${module}.weight`, dtype: 'U32', shape: [...lead, (K * bits) / 32], data: q.packed });
      tensors.push({ name: `${module}.scales`, dtype: 'BF16', shape: groups, data: scaleBytes(q.scales, 'BF16') });
      tensors.push({ name: `${module}.biases`, dtype: 'BF16', shape: groups, data: scaleBytes(q.biases, 'BF16') });
      held.set(gguf, permuted ? permuteQK(q.values, heads, K) : q.values);
      continue;
    }
    const type = big ? dtype : options.bf16Norms || mlx ? 'BF16' : 'F32';
    const stored = decodeGgml(type, encodeGgml(type, Float32Array.from(hfValues)));
    held.set(gguf, permuted ? permuteQK(stored, heads, K) : stored);
    // transformers keeps each expert apart: [N, K] each.
    const per = stored.length / names.length;
    names.forEach((name, e) => {
      const part = Float32Array.from(stored.subarray(e * per, (e + 1) * per));
      tensors.push({ name, dtype: type, shape: names.length > 1 ? shape.slice(1) : shape, data: encodeGgml(type, part) });
    });
  }
  const kept = tensors.filter((t) => !options.omit?.includes(t.name));
  const shards = options.shards ?? 1;
  if (shards === 1) {
    writeSafetensors(join(dir, 'model.safetensors'), kept, { format: 'pt' });
  } else {
    const weightMap: Record<string, string> = {};
    const per = Math.ceil(kept.length / shards);
    for (let s = 0; s < shards; s++) {
      const file = `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
      const part = kept.slice(s * per, (s + 1) * per);
      for (const t of part) weightMap[t.name] = file;
      writeSafetensors(join(dir, file), part, { format: 'pt' });
    }
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }, null, 2));
  }
  const config = { ...hfConfig(spec), ...(mlx ? { quantization, quantization_config: quantization } : {}), ...options.config };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2));
  const tok = hfTokenizerJson(syntheticTokenizerData(spec.vocab));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tok.tokenizer));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(tok.tokenizerConfig, null, 2));
  writeFileSync(join(dir, 'generation_config.json'), JSON.stringify({ bos_token_id: 1, eos_token_id: 2 }));
  return held;
}

/** Rows N of a 2-D weight (or of each expert) by its GGUF name. */
function rowsOf(gguf: string, spec: SyntheticModelSpec, headDim: number): number {
  const name = gguf.replace(/^blk\.\d+\./, '');
  switch (name) {
    case 'token_embd.weight': case 'output.weight': return spec.vocab;
    case 'attn_q.weight': return spec.heads * headDim;
    case 'attn_k.weight': case 'attn_v.weight': return spec.kvHeads * headDim;
    case 'attn_output.weight': case 'ffn_down.weight': case 'ffn_down_exps.weight': return spec.width;
    case 'ffn_gate_inp.weight': return spec.experts ?? 8;
    default: return spec.ff;  // ffn_gate, ffn_up (and their experts)
  }
}
