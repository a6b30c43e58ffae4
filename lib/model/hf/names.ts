// Hugging Face tensor names (transformers' module paths, and mlx-lm's for its converted folders)
// to the GGUF names the model's weights are looked up by (model/weights.ts), and back for messages.

/** Within model.layers.N: the HF module path -> the GGUF name after blk.N. */
const LAYER: Readonly<Record<string, string>> = {
  'input_layernorm.weight': 'attn_norm.weight',
  'self_attn.q_proj.weight': 'attn_q.weight',
  'self_attn.k_proj.weight': 'attn_k.weight',
  'self_attn.v_proj.weight': 'attn_v.weight',
  'self_attn.o_proj.weight': 'attn_output.weight',
  'self_attn.q_proj.bias': 'attn_q.bias',
  'self_attn.k_proj.bias': 'attn_k.bias',
  'self_attn.v_proj.bias': 'attn_v.bias',
  'self_attn.q_norm.weight': 'attn_q_norm.weight',
  'self_attn.k_norm.weight': 'attn_k_norm.weight',
  'post_attention_layernorm.weight': 'ffn_norm.weight',
};
const DENSE_MLP: Readonly<Record<string, string>> = {
  'mlp.gate_proj.weight': 'ffn_gate.weight',
  'mlp.up_proj.weight': 'ffn_up.weight',
  'mlp.down_proj.weight': 'ffn_down.weight',
};
/** qwen3moe: the router, and mlx-lm's experts already stacked [E, N, K] (its switch_mlp). */
const MOE: Readonly<Record<string, string>> = {
  'mlp.gate.weight': 'ffn_gate_inp.weight',
  'mlp.switch_mlp.gate_proj.weight': 'ffn_gate_exps.weight',
  'mlp.switch_mlp.up_proj.weight': 'ffn_up_exps.weight',
  'mlp.switch_mlp.down_proj.weight': 'ffn_down_exps.weight',
};
/**
 * gpt-oss (transformers' GptOss): biases, sinks, the router and the experts as one stacked tensor
 * each (MXFP4 `_blocks`/`_scales` pairs, loaded as mxfp4 under the name without the suffix).
 * gate_up_proj holds gate and up interleaved row by row: it splits in two (OSS_SPLIT).
 */
const OSS: Readonly<Record<string, string>> = {
  'self_attn.o_proj.bias': 'attn_output.bias',
  'self_attn.sinks': 'attn_sinks.weight',
  'post_attention_layernorm.weight': 'post_attention_norm.weight',
  'mlp.router.weight': 'ffn_gate_inp.weight',
  'mlp.router.bias': 'ffn_gate_inp.bias',
  'mlp.experts.down_proj': 'ffn_down_exps.weight',
  'mlp.experts.down_proj_bias': 'ffn_down_exps.bias',
};
const OSS_SPLIT: Readonly<Record<string, readonly [string, string]>> = {
  'mlp.experts.gate_up_proj': ['ffn_gate_exps.weight', 'ffn_up_exps.weight'],
  'mlp.experts.gate_up_proj_bias': ['ffn_gate_exps.bias', 'ffn_up_exps.bias'],
};
/**
 * transformers' dense gpt-oss experts (a BF16 checkpoint, no quantization_config) are parameters
 * it multiplies as x @ W: [E, in, out] (gate_up_proj [E, hidden, 2 * intermediate], gate and up
 * interleaved column by column; down_proj [E, intermediate, hidden]), where the MXFP4 blocks and
 * GGUF are [E, out, in]. A dense one is transposed on loading.
 */
const OSS_IN_OUT: ReadonlySet<string> = new Set(['mlp.experts.gate_up_proj', 'mlp.experts.down_proj']);
const GLOBAL: Readonly<Record<string, string>> = {
  'model.embed_tokens.weight': 'token_embd.weight',
  'model.norm.weight': 'output_norm.weight',
  'lm_head.weight': 'output.weight',
};

/** What a file's tensor is to the model. */
export type HfTensorRole =
  /** inOut: stored [E, in, out] when dense (OSS_IN_OUT). */
  | { kind: 'weight'; name: string; inOut?: true }
  /** One expert of a qwen3moe layer (transformers keeps them apart): stacked into `name` at `expert`. */
  | { kind: 'expert'; name: string; expert: number }
  /**
   * gpt-oss's gate_up_proj (and its bias): rows 2i are `names[0]`'s row i, rows 2i + 1 `names[1]`'s
   * (of the [E, in, out] layout's columns when dense: inOut).
   */
  | { kind: 'interleaved'; names: readonly [string, string]; inOut?: true }
  /** Not a weight (older llama checkpoints' rotary_emb.inv_freq buffers). */
  | { kind: 'ignored' }
  | { kind: 'unknown' };

const own = (table: object, key: string) => Object.prototype.hasOwnProperty.call(table, key);

/** The role of tensor `hf` in a model of `layers` layers, dense MLP or mixture of experts (gpt-oss's: `oss`). */
export function hfTensorRole(hf: string, layers: number, moe: boolean, oss = false): HfTensorRole {
  if (own(GLOBAL, hf)) return { kind: 'weight', name: GLOBAL[hf] };
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hf);
  if (!m || Number(m[1]) >= layers || String(Number(m[1])) !== m[1]) return { kind: 'unknown' };
  const [, l, rest] = m;
  if (rest.endsWith('rotary_emb.inv_freq')) return { kind: 'ignored' };
  if (oss) {
    const inOut = OSS_IN_OUT.has(rest) ? { inOut: true as const } : {};
    if (own(OSS, rest)) return { kind: 'weight', name: `blk.${l}.${OSS[rest]}`, ...inOut };
    if (own(OSS_SPLIT, rest)) return { kind: 'interleaved', names: [`blk.${l}.${OSS_SPLIT[rest][0]}`, `blk.${l}.${OSS_SPLIT[rest][1]}`], ...inOut };
    if (own(LAYER, rest)) return { kind: 'weight', name: `blk.${l}.${LAYER[rest]}` };
    return { kind: 'unknown' };
  }
  if (own(LAYER, rest)) return { kind: 'weight', name: `blk.${l}.${LAYER[rest]}` };
  if (!moe && own(DENSE_MLP, rest)) return { kind: 'weight', name: `blk.${l}.${DENSE_MLP[rest]}` };
  if (moe && own(MOE, rest)) return { kind: 'weight', name: `blk.${l}.${MOE[rest]}` };
  const e = moe ? /^mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight$/.exec(rest) : null;
  if (e && String(Number(e[1])) === e[1]) return { kind: 'expert', name: `blk.${l}.ffn_${e[2]}_exps.weight`, expert: Number(e[1]) };
  return { kind: 'unknown' };
}

/** The HF name of a GGUF weight name, for messages (experts: the per-expert pattern). */
export function hfTensorName(gguf: string): string {
  for (const [hf, g] of Object.entries(GLOBAL)) if (g === gguf) return hf;
  const m = /^blk\.(\d+)\.(.+)$/.exec(gguf);
  if (!m) return gguf;
  const [, l, rest] = m;
  const x = /^ffn_(gate|up|down)_exps\.weight$/.exec(rest);
  if (x) return `model.layers.${l}.mlp.experts.*.${x[1]}_proj.weight`;
  for (const [hf, g] of Object.entries(OSS)) if (g === rest) return `model.layers.${l}.${hf}`;
  for (const [hf, [gate, up]] of Object.entries(OSS_SPLIT)) if (rest === gate || rest === up) return `model.layers.${l}.${hf}`;
  for (const table of [LAYER, DENSE_MLP, MOE]) {
    for (const [hf, g] of Object.entries(table)) if (g === rest) return `model.layers.${l}.${hf}`;
  }
  return gguf;
}

/** The HF names a model of this kind reads, per layer (for the message naming an unknown tensor). */
export function expectedNames(moe: boolean, oss = false): string[] {
  if (oss) return [...Object.keys(GLOBAL), ...[...Object.keys(LAYER), ...Object.keys(OSS), ...Object.keys(OSS_SPLIT)].map((k) => `model.layers.N.${k}`)];
  return [
    ...Object.keys(GLOBAL),
    ...[...Object.keys(LAYER), ...Object.keys(moe ? MOE : DENSE_MLP), ...(moe ? ['mlp.experts.E.{gate,up,down}_proj.weight'] : [])]
      .map((k) => `model.layers.N.${k}`),
  ];
}
