// Random-weight model files with published models' shapes: what the tests and the bench load
// (no weights can be downloaded where they run). The weights are scaled like a trained model's
// (rows of norm ~1 after each projection) so activations and logits stay in a realistic range,
// and the vocabulary is a SentencePiece ('llama') one llama.cpp loads (gpt-oss: a byte-level BPE
// one, synthetic-bpe.ts).
import { writeGguf, type GgufWriteTensor, type GgufWriteValue } from '../loaders/gguf/write';
import { encodeGgml, type GgmlEncodable } from '../loaders/gguf/blocks';
import { llama3RopeDivisors } from './rope';
import { syntheticBpeMetadata } from './synthetic-bpe';

export interface SyntheticModelSpec {
  arch: 'llama' | 'qwen2' | 'qwen3' | 'qwen3moe' | 'gpt-oss';
  vocab: number;
  width: number;
  layers: number;
  heads: number;
  kvHeads: number;
  /** Default width / heads. */
  headDim?: number;
  /** MLP width (qwen3moe, gpt-oss: each expert's). */
  ff: number;
  experts?: number;
  expertsUsed?: number;
  context?: number;
  ropeBase?: number;
  eps?: number;
  /** No output.weight: the logits use token_embd (default false). */
  tiedEmbeddings?: boolean;
  /** RoPE scaling as published models declare it: 'linear' (metadata rope.scaling), or 'llama3' (a rope_freqs.weight tensor of per-frequency divisors). */
  ropeScaling?: { type: 'linear'; factor: number } | { type: 'yarn'; factor: number; originalContext: number } | { type: 'llama3'; factor: number; lowFreqFactor: number; highFreqFactor: number; originalContext: number };
  /** The type of the 2-D weights (norms and biases stay F32, as llama.cpp's quantizer keeps them). */
  type: GgmlEncodable;
  /** The experts' type (default `type`; gpt-oss publishes MXFP4 experts beside 16-bit attention). */
  expertType?: GgmlEncodable;
  /** gpt-oss: the sliding window of its even layers (default 128, the published models'). */
  slidingWindow?: number;
  seed?: number;
}

/**
 * A fast deterministic generator of values with mean 0 and standard deviation 1: xorshift128 on
 * 32-bit words, uniform on [-sqrt(3), sqrt(3)) (a billion draws in seconds; the shape of the
 * distribution does not matter to the tests and the bench, its scale does).
 */
function unitValues(seed: number): () => number {
  let a = (seed * 0x9e3779b9) | 0 || 1, b = 0x243f6a88, c = 0x85a308d3, d = 0x13198a2e;
  const k = (2 * Math.sqrt(3)) / 4294967296;
  return () => {
    const t = a ^ (a << 11);
    a = b; b = c; c = d;
    d = d ^ (d >>> 19) ^ (t ^ (t >>> 8));
    return d * k;  // d is a signed 32-bit integer: d * k is uniform on [-sqrt(3), sqrt(3))
  };
}

/** The SentencePiece vocabulary of a synthetic model: <unk> <s> </s>, 256 byte tokens, then pieces. */
export function syntheticVocabulary(size: number): { tokens: string[]; scores: Float32Array; types: Int32Array } {
  const tokens = ['<unk>', '<s>', '</s>'];
  const types = [2, 3, 3];  // llama.cpp's token types: 1 normal, 2 unknown, 3 control, 6 byte
  for (let b = 0; b < 256; b++) { tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`); types.push(6); }
  const letters = 'etaoinshrdlucmfwypvbgkqjxz';
  const pieces = new Set<string>();
  for (const c of letters) pieces.add(`▁${c}`);
  for (const c of letters) pieces.add(c);
  for (const a of letters) for (const b of letters) { pieces.add(a + b); pieces.add(`▁${a}${b}`); }
  for (let i = 0; pieces.size < size; i++) pieces.add(`▁w${i}`);
  for (const p of pieces) { if (tokens.length >= size) break; tokens.push(p); types.push(1); }
  const scores = new Float32Array(tokens.length);
  for (let i = 0; i < tokens.length; i++) scores[i] = types[i] === 1 ? -i : 0;
  return { tokens, scores, types: Int32Array.from(types) };
}

/** Writes a random-weight GGUF model llama.cpp loads. Returns the float32 weights by tensor name (ggml order). */
export function writeSyntheticModel(path: string, spec: SyntheticModelSpec, keepWeights = false): Map<string, Float32Array> {
  const { arch, vocab, width, layers, heads, kvHeads, ff } = spec;
  const headDim = spec.headDim ?? width / heads;
  const randn = unitValues(spec.seed ?? 1);
  const kept = new Map<string, Float32Array>();
  const tensors: GgufWriteTensor[] = [];
  // dims in ggml order: [inner, outer]; a weight [N, K] of ours is dims [K, N].
  const add = (name: string, dims: number[], scale: number, offset = 0, type: GgmlEncodable = 'F32') => {
    const n = dims.reduce((a, b) => a * b, 1);
    tensors.push({
      name, dims, type,
      data: () => {
        const v = new Float32Array(n);
        for (let i = 0; i < n; i++) v[i] = offset + scale * randn();
        if (keepWeights) kept.set(name, v);
        return encodeGgml(type, v);
      },
    });
  };
  const weight = (name: string, inner: number, outer: number, experts = 0, gain = 1) =>
    add(name, experts ? [inner, outer, experts] : [inner, outer], gain / Math.sqrt(inner), 0, experts ? spec.expertType ?? spec.type : spec.type);
  const norm = (name: string, n: number) => add(name, [n], 0.1, 1);

  // Logits with a standard deviation of about 4, as trained models' (peaked next-token distributions).
  weight('token_embd.weight', width, vocab, 0, 4);
  for (let l = 0; l < layers; l++) {
    const b = `blk.${l}`;
    norm(`${b}.attn_norm.weight`, width);
    weight(`${b}.attn_q.weight`, width, heads * headDim);
    weight(`${b}.attn_k.weight`, width, kvHeads * headDim);
    weight(`${b}.attn_v.weight`, width, kvHeads * headDim);
    if (arch === 'qwen2' || arch === 'gpt-oss') {
      add(`${b}.attn_q.bias`, [heads * headDim], 0.1);
      add(`${b}.attn_k.bias`, [kvHeads * headDim], 0.1);
      add(`${b}.attn_v.bias`, [kvHeads * headDim], 0.1);
    }
    if (arch === 'qwen3' || arch === 'qwen3moe') {
      norm(`${b}.attn_q_norm.weight`, headDim);
      norm(`${b}.attn_k_norm.weight`, headDim);
    }
    weight(`${b}.attn_output.weight`, heads * headDim, width);
    if (arch === 'gpt-oss') {
      add(`${b}.attn_output.bias`, [width], 0.1);
      // Sinks of about the scores' size, so that they take a real share of each row's softmax.
      add(`${b}.attn_sinks.weight`, [heads], 1);
      norm(`${b}.post_attention_norm.weight`, width);
      const E = spec.experts ?? 8;
      add(`${b}.ffn_gate_inp.weight`, [width, E], 1 / Math.sqrt(width));
      add(`${b}.ffn_gate_inp.bias`, [E], 0.5);
      weight(`${b}.ffn_gate_exps.weight`, width, ff, E);
      weight(`${b}.ffn_up_exps.weight`, width, ff, E);
      weight(`${b}.ffn_down_exps.weight`, ff, width, E);
      add(`${b}.ffn_gate_exps.bias`, [ff, E], 0.1);
      add(`${b}.ffn_up_exps.bias`, [ff, E], 0.1);
      add(`${b}.ffn_down_exps.bias`, [width, E], 0.1);
      continue;
    }
    norm(`${b}.ffn_norm.weight`, width);
    if (arch === 'qwen3moe') {
      const E = spec.experts ?? 8;
      add(`${b}.ffn_gate_inp.weight`, [width, E], 1 / Math.sqrt(width));
      weight(`${b}.ffn_gate_exps.weight`, width, ff, E);
      weight(`${b}.ffn_up_exps.weight`, width, ff, E);
      weight(`${b}.ffn_down_exps.weight`, ff, width, E);
    } else {
      weight(`${b}.ffn_gate.weight`, width, ff);
      weight(`${b}.ffn_up.weight`, width, ff);
      weight(`${b}.ffn_down.weight`, ff, width);
    }
  }
  norm('output_norm.weight', width);
  if (spec.ropeScaling?.type === 'llama3') {
    // llama3's divisors, as its convert script writes them.
    const f = llama3RopeDivisors(spec.ropeBase ?? 10000, headDim, spec.ropeScaling);
    tensors.push({ name: 'rope_freqs.weight', dims: [headDim / 2], type: 'F32', data: new Uint8Array(f.buffer) });
  }
  if (!spec.tiedEmbeddings) weight('output.weight', width, vocab, 0, 4);

  const u32 = (value: number): GgufWriteValue => ({ type: 'uint32', value });
  const f32 = (value: number): GgufWriteValue => ({ type: 'float32', value });
  const v = syntheticVocabulary(vocab);
  const spm: [string, GgufWriteValue][] = [
    ['tokenizer.ggml.model', { type: 'string', value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: 'array', of: 'string', value: v.tokens }],
    ['tokenizer.ggml.scores', { type: 'array', of: 'float32', value: v.scores }],
    ['tokenizer.ggml.token_type', { type: 'array', of: 'int32', value: v.types }],
    ['tokenizer.ggml.unknown_token_id', u32(0)],
    ['tokenizer.ggml.bos_token_id', u32(1)],
    ['tokenizer.ggml.eos_token_id', u32(2)],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: true }],
  ];
  const meta: [string, GgufWriteValue][] = [
    ['general.architecture', { type: 'string', value: arch }],
    ['general.name', { type: 'string', value: `synthetic-${arch}` }],
    [`${arch}.context_length`, u32(spec.context ?? 4096)],
    [`${arch}.embedding_length`, u32(width)],
    [`${arch}.block_count`, u32(layers)],
    [`${arch}.feed_forward_length`, u32(ff)],
    [`${arch}.attention.head_count`, u32(heads)],
    [`${arch}.attention.head_count_kv`, u32(kvHeads)],
    [`${arch}.attention.key_length`, u32(headDim)],
    [`${arch}.attention.value_length`, u32(headDim)],
    [`${arch}.rope.dimension_count`, u32(headDim)],
    [`${arch}.rope.freq_base`, f32(spec.ropeBase ?? 10000)],
    [`${arch}.attention.layer_norm_rms_epsilon`, f32(spec.eps ?? 1e-6)],
    ...(arch === 'gpt-oss' ? syntheticBpeMetadata(vocab) : spm),
  ];
  if (spec.ropeScaling?.type === 'linear' || spec.ropeScaling?.type === 'yarn') {
    meta.push([`${arch}.rope.scaling.type`, { type: 'string', value: spec.ropeScaling.type }], [`${arch}.rope.scaling.factor`, f32(spec.ropeScaling.factor)]);
  }
  if (spec.ropeScaling?.type === 'yarn') meta.push([`${arch}.rope.scaling.original_context_length`, u32(spec.ropeScaling.originalContext)]);
  if (arch === 'gpt-oss') meta.push([`${arch}.attention.sliding_window`, u32(spec.slidingWindow ?? 128)]);
  if (arch === 'qwen3moe' || arch === 'gpt-oss') {
    meta.push([`${arch}.expert_count`, u32(spec.experts ?? 8)], [`${arch}.expert_used_count`, u32(spec.expertsUsed ?? 2)],
      [`${arch}.expert_feed_forward_length`, u32(ff)]);
  }
  writeGguf(path, meta, tensors);
  return kept;
}
