// A Hugging Face gpt-oss folder of a synthetic model, laid out as openai/gpt-oss-20b is
// (transformers' GptOss names; experts as MXFP4 `_blocks` [E, N, K/32, 16] and `_scales`
// [E, N, K/32] uint8 with gate and up interleaved row by row in gate_up_proj, and their biases
// likewise; sinks, router and o_proj biases; quantization_config mxfp4; an o200k-style
// tokenizer.json), holding exactly the weights of the GGUF file writeSyntheticModel wrote: the
// experts' MXFP4 codes and scales are the GGUF file's, as loadGgufTensors gives them. With
// `denseExperts` (a GGUF file of dense experts), laid out as a dequantized checkpoint is instead
// (unsloth's BF16 ones): no quantization_config, the experts as transformers' parameters, which it
// multiplies as x @ W: gate_up_proj [E, hidden, 2N] with gate and up in alternate columns,
// down_proj [E, N, hidden].
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadGgufTensors, readGgufInfo, writeSafetensors, type Device, type QuantizedTensor, type SafetensorsWriteTensor, type SyntheticModelSpec, type Tensor } from '../../lib/index';
import type { TokenizerData } from '../../lib/tokenizer/index';
import { hfTokenizerJson } from './hf-tokenizer';

const f32 = (v: ArrayLike<number>) => new Uint8Array(Float32Array.from(v).buffer);

/** Writes `dir` from the GGUF file at `gguf` (a gpt-oss model with F32 weights, MXFP4 experts unless denseExperts). */
export async function writeGptOssHfFolder(dev: Device, dir: string, gguf: string, spec: SyntheticModelSpec, config: Record<string, unknown> = {}, denseExperts = false): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const info = await readGgufInfo(gguf);
  const all = await loadGgufTensors(dev, info, gguf);
  const tensors: SafetensorsWriteTensor[] = [];
  const dense = async (hf: string, gg: string) => {
    const t = all.get(gg)!;
    tensors.push({ name: hf, dtype: 'F32', shape: [...t.shape], data: f32(await (t as { toFloat32(): Promise<Float32Array> }).toFloat32()) });
  };
  /** Rows of [E, N, K] codes/scales (or [E, N] values): gate's and up's interleaved when two are given. */
  const interleave = (a: Uint8Array | Float32Array, b: Uint8Array | Float32Array | null, rows: number, row: number) => {
    if (!b) return a;
    const out = new (a.constructor as Uint8ArrayConstructor)(a.length * 2);
    for (let r = 0; r < rows; r++) {
      out.set(a.subarray(r * row, (r + 1) * row), 2 * r * row);
      out.set(b.subarray(r * row, (r + 1) * row), (2 * r + 1) * row);
    }
    return out;
  };
  /** [E, N, K] stacks (gate's and up's) as one [E, K, N or 2N] (output j of gate is column 2j, of up 2j + 1). */
  const inOut = async (hf: string, first: string, second: string | null) => {
    const ta = all.get(first) as Tensor, tb = second ? (all.get(second) as Tensor) : null;
    const [E, N, K] = ta.shape;
    const parts = [await ta.toFloat32(), ...(tb ? [await tb.toFloat32()] : [])];
    const n = parts.length * N;
    const out = new Float32Array(E * K * n);
    for (const [p, v] of parts.entries()) {
      for (let e = 0; e < E; e++) for (let r = 0; r < N; r++) for (let k = 0; k < K; k++) out[(e * K + k) * n + parts.length * r + p] = v[(e * N + r) * K + k];
    }
    tensors.push({ name: hf, dtype: 'F32', shape: [E, K, n], data: f32(out) });
  };
  const experts = async (hf: string, first: string, second: string | null) => {
    if (denseExperts) return inOut(hf, first, second);
    const a = all.get(first) as QuantizedTensor, b = second ? (all.get(second) as QuantizedTensor) : null;
    const [E, N, K] = a.shape;
    const rows = E * N, n = b ? 2 * N : N;
    const codes = interleave(await a.codes(), b ? await b.codes() : null, rows, K / 2) as Uint8Array;
    const scales = interleave(await a.scales() as Uint8Array, b ? await b.scales() as Uint8Array : null, rows, K / 32) as Uint8Array;
    tensors.push({ name: `${hf}_blocks`, dtype: 'U8', shape: [E, n, K / 32, 16], data: codes });
    tensors.push({ name: `${hf}_scales`, dtype: 'U8', shape: [E, n, K / 32], data: scales });
  };
  const biases = async (hf: string, first: string, second: string | null) => {
    const a = all.get(first)!, b = second ? all.get(second)! : null;
    const [E, N] = a.shape;
    const va = await (a as { toFloat32(): Promise<Float32Array> }).toFloat32();
    const vb = b ? await (b as { toFloat32(): Promise<Float32Array> }).toFloat32() : null;
    tensors.push({ name: hf, dtype: 'F32', shape: [E, vb ? 2 * N : N], data: f32(interleave(va, vb, E * N, 1)) });
  };
  await dense('model.embed_tokens.weight', 'token_embd.weight');
  await dense('model.norm.weight', 'output_norm.weight');
  await dense('lm_head.weight', 'output.weight');
  for (let l = 0; l < spec.layers; l++) {
    const h = `model.layers.${l}`, g = `blk.${l}`;
    await dense(`${h}.input_layernorm.weight`, `${g}.attn_norm.weight`);
    await dense(`${h}.post_attention_layernorm.weight`, `${g}.post_attention_norm.weight`);
    for (const [p, q] of [['q', 'q'], ['k', 'k'], ['v', 'v'], ['o', 'output']]) {
      await dense(`${h}.self_attn.${p}_proj.weight`, `${g}.attn_${q}.weight`);
      await dense(`${h}.self_attn.${p}_proj.bias`, `${g}.attn_${q}.bias`);
    }
    await dense(`${h}.self_attn.sinks`, `${g}.attn_sinks.weight`);
    await dense(`${h}.mlp.router.weight`, `${g}.ffn_gate_inp.weight`);
    await dense(`${h}.mlp.router.bias`, `${g}.ffn_gate_inp.bias`);
    await experts(`${h}.mlp.experts.gate_up_proj`, `${g}.ffn_gate_exps.weight`, `${g}.ffn_up_exps.weight`);
    await biases(`${h}.mlp.experts.gate_up_proj_bias`, `${g}.ffn_gate_exps.bias`, `${g}.ffn_up_exps.bias`);
    await experts(`${h}.mlp.experts.down_proj`, `${g}.ffn_down_exps.weight`, null);
    await biases(`${h}.mlp.experts.down_proj_bias`, `${g}.ffn_down_exps.bias`, null);
  }
  for (const t of all.values()) t.dispose();
  writeSafetensors(join(dir, 'model.safetensors'), tensors, { format: 'pt' });

  const s = spec.ropeScaling;
  writeFileSync(join(dir, 'config.json'), JSON.stringify({
    architectures: ['GptOssForCausalLM'], model_type: 'gpt_oss', hidden_size: spec.width, num_hidden_layers: spec.layers,
    num_attention_heads: spec.heads, num_key_value_heads: spec.kvHeads, head_dim: spec.headDim ?? spec.width / spec.heads,
    intermediate_size: spec.ff, num_local_experts: spec.experts ?? 8, num_experts_per_tok: spec.expertsUsed ?? 2,
    experts_per_token: spec.expertsUsed ?? 2, vocab_size: spec.vocab, max_position_embeddings: spec.context ?? 4096,
    rms_norm_eps: spec.eps ?? 1e-6, rope_theta: spec.ropeBase ?? 10000, sliding_window: spec.slidingWindow ?? 128,
    layer_types: Array.from({ length: spec.layers }, (_, l) => (l % 2 === 0 ? 'sliding_attention' : 'full_attention')),
    swiglu_limit: 7.0, tie_word_embeddings: false, hidden_act: 'silu', attention_bias: true, torch_dtype: 'bfloat16',
    ...(denseExperts ? {} : { quantization_config: { quant_method: 'mxfp4', modules_to_not_convert: ['model.layers.*.self_attn', 'model.layers.*.mlp.router', 'model.embed_tokens', 'lm_head'] } }),
    ...(s?.type === 'yarn' ? { rope_scaling: { rope_type: 'yarn', factor: s.factor, beta_fast: 32, beta_slow: 1, original_max_position_embeddings: s.originalContext } } : {}),
    ...config,
  }, null, 2));
  // The GGUF file's vocabulary as tokenizer.json (byte-level BPE, the o200k Split pattern).
  const meta = info.metadata;
  const num = (k: string) => { const v = meta.get(k); return v === undefined ? undefined : Number(v); };
  const data: TokenizerData = {
    model: 'gpt2', pre: 'gpt-4o', tokens: [...(meta.get('tokenizer.ggml.tokens') as string[])],
    tokenTypes: Int32Array.from(meta.get('tokenizer.ggml.token_type') as ArrayLike<number>),
    merges: [...(meta.get('tokenizer.ggml.merges') as string[])],
    bosId: num('tokenizer.ggml.bos_token_id'), eosId: num('tokenizer.ggml.eos_token_id'), padId: num('tokenizer.ggml.padding_token_id'),
    addBos: false,
  };
  const tok = hfTokenizerJson(data, { pre: 'gpt-4o' });
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tok.tokenizer));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(tok.tokenizerConfig, null, 2));
}
