// The weights of a decoder by role, looked up by llama.cpp's GGUF tensor names and checked
// against the config (a missing or misshapen tensor is E_FORMAT naming it). A Hugging Face folder's
// tensors are renamed to these names first (model/hf/names.ts), and named as the folder has them
// in the messages.
import { TensorOpsError } from '../errors';
import { QuantizedTensor, Tensor } from '../tensor';
import type { ModelConfig } from './config';

export type Weight = Tensor | QuantizedTensor;

export interface LayerWeights {
  attnNorm: Tensor;
  q: Weight; k: Weight; v: Weight; o: Weight;
  qBias?: Tensor; kBias?: Tensor; vBias?: Tensor;
  qNorm?: Tensor; kNorm?: Tensor;
  /** gpt-oss: the output projection's bias and the attention sinks (float32 [heads]). */
  oBias?: Tensor;
  sinks?: Tensor;
  /** The norm before the MLP (gpt-oss's post_attention_norm plays this role). */
  ffnNorm: Tensor;
  /** Dense MLP. */
  gate?: Weight; up?: Weight; down?: Weight;
  /** Mixture of experts: the router [E, width] (MLX quantizes it too) and the stacked experts [E, N, K]. */
  router?: Weight;
  gateExperts?: Weight; upExperts?: Weight; downExperts?: Weight;
  /** gpt-oss: the router's bias [E] and each expert's biases, [E, ff] (gate, up) and [E, width] (down). */
  routerBias?: Tensor;
  gateExpertsBias?: Tensor; upExpertsBias?: Tensor; downExpertsBias?: Tensor;
}

export interface ModelWeights {
  embedding: Weight;
  outputNorm: Tensor;
  /** token_embd when the model ties its embeddings. */
  output: Weight;
  /** llama3's per-frequency divisors (rope_freqs.weight), when the model has them. */
  ropeFactors?: Tensor;
  layers: LayerWeights[];
}

function shapeOf(t: Weight): readonly number[] { return t.shape; }

/**
 * Picks the tensors a config needs out of a loaded file; checks every shape. `label` names a
 * tensor in messages as its file does (default: the GGUF name).
 */
export function modelWeights(config: ModelConfig, tensors: Map<string, Weight>, label: (name: string) => string = (n) => n): ModelWeights {
  const get = (name: string, shape: number[] | null, dense = false): Weight => {
    const t = tensors.get(name);
    if (t === undefined) throw new TensorOpsError('E_FORMAT', `the model has no tensor '${label(name)}'`);
    if (shape && shapeOf(t).join() !== shape.join()) {
      throw new TensorOpsError('E_FORMAT', `tensor '${label(name)}' has shape [${shapeOf(t).join(', ')}]; the config needs [${shape.join(', ')}]`);
    }
    if (dense && !(t instanceof Tensor)) throw new TensorOpsError('E_FORMAT', `tensor '${label(name)}' must be dense (it is ${(t as QuantizedTensor).format})`);
    return t;
  };
  const dense = (name: string, shape: number[]) => get(name, shape, true) as Tensor;
  const optional = (name: string, shape: number[]) => (tensors.has(name) ? dense(name, shape) : undefined);
  const { width, heads, kvHeads, headDim, ff, vocab, experts } = config;
  const oss = config.arch === 'gpt-oss';
  const layers: LayerWeights[] = [];
  for (let l = 0; l < config.layers; l++) {
    const b = `blk.${l}`;
    const layer: LayerWeights = {
      attnNorm: dense(`${b}.attn_norm.weight`, [width]),
      q: get(`${b}.attn_q.weight`, [heads * headDim, width]),
      k: get(`${b}.attn_k.weight`, [kvHeads * headDim, width]),
      v: get(`${b}.attn_v.weight`, [kvHeads * headDim, width]),
      o: get(`${b}.attn_output.weight`, [width, heads * headDim]),
      qBias: optional(`${b}.attn_q.bias`, [heads * headDim]),
      kBias: optional(`${b}.attn_k.bias`, [kvHeads * headDim]),
      vBias: optional(`${b}.attn_v.bias`, [kvHeads * headDim]),
      qNorm: optional(`${b}.attn_q_norm.weight`, [headDim]),
      kNorm: optional(`${b}.attn_k_norm.weight`, [headDim]),
      // gpt-oss normalises the residual before its experts with what llama.cpp calls
      // attn_post_norm (GGUF post_attention_norm): the llama family's ffn_norm by another name.
      ffnNorm: dense(oss ? `${b}.post_attention_norm.weight` : `${b}.ffn_norm.weight`, [width]),
    };
    if (oss) {
      // Required, as llama.cpp's llama_model_openai_moe creates them.
      layer.oBias = dense(`${b}.attn_output.bias`, [width]);
      layer.sinks = dense(`${b}.attn_sinks.weight`, [heads]);
      layer.routerBias = dense(`${b}.ffn_gate_inp.bias`, [experts]);
      layer.gateExpertsBias = dense(`${b}.ffn_gate_exps.bias`, [experts, ff]);
      layer.upExpertsBias = dense(`${b}.ffn_up_exps.bias`, [experts, ff]);
      layer.downExpertsBias = dense(`${b}.ffn_down_exps.bias`, [experts, width]);
    }
    if (experts > 0) {
      layer.router = get(`${b}.ffn_gate_inp.weight`, [experts, width]);
      layer.gateExperts = get(`${b}.ffn_gate_exps.weight`, [experts, ff, width]);
      layer.upExperts = get(`${b}.ffn_up_exps.weight`, [experts, ff, width]);
      layer.downExperts = get(`${b}.ffn_down_exps.weight`, [experts, width, ff]);
    } else {
      layer.gate = get(`${b}.ffn_gate.weight`, [ff, width]);
      layer.up = get(`${b}.ffn_up.weight`, [ff, width]);
      layer.down = get(`${b}.ffn_down.weight`, [width, ff]);
    }
    layers.push(layer);
  }
  const embedding = get('token_embd.weight', [vocab, width]);
  return {
    embedding,
    outputNorm: dense('output_norm.weight', [width]),
    output: tensors.has('output.weight') ? get('output.weight', [vocab, width]) : embedding,
    ropeFactors: optional('rope_freqs.weight', [config.rope.dims / 2]),
    layers,
  };
}
