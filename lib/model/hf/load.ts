// A Hugging Face model folder (config.json, model.safetensors or shards with
// model.safetensors.index.json, tokenizer.json, tokenizer_config.json) as what a GGUF file gives
// loadModel: the config, the tokenizer, and the weights under llama.cpp's tensor names. In two
// steps like GGUF's: readHfFolder reads the JSON files and the weights' headers (nothing sized by
// the weights is allocated), loadHfWeights reads the tensors onto the device.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Device } from '../../device';
import { TensorOpsError } from '../../errors';
import { inspectSafetensors, readJsonFile } from '../../loaders/safetensors/parse';
import { loadSafetensors } from '../../loaders/safetensors/tensors';
import type { SafetensorsConversion } from '../../loaders/safetensors/types';
import { Tensor } from '../../tensor';
import { tokenizerFromHf, type Tokenizer } from '../../tokenizer/index';
import type { ModelConfig } from '../config';
import type { Weight } from '../weights';
import { configFromHf } from './config';
import { expectedNames, hfTensorName, hfTensorRole } from './names';

const FOLDER = 'a Hugging Face model folder holds config.json, model.safetensors (or shards and model.safetensors.index.json) and tokenizer.json';

/** A folder read by readHfFolder. */
export interface HfFolder {
  dir: string;
  config: ModelConfig;
  tokenizer: Tokenizer;
  /** llama3 RoPE scaling's divisors, when config.json asks for it. */
  ropeDivisors?: Float32Array;
  /**
   * The file's tensors to load (their names as loadSafetensors gives them) -> GGUF name, and expert
   * index; or gpt-oss's interleaved gate_up_proj, split into the two GGUF names of `split`.
   */
  roles: Map<string, { name: string; expert?: number; split?: readonly [string, string]; inOut?: true }>;
}

/** What loadHfWeights returns. */
export interface HfWeights {
  /** Under GGUF names, experts stacked [E, N, K]. */
  tensors: Map<string, Weight>;
  /** The conversions loadSafetensors reports as not exact. */
  conversions: SafetensorsConversion[];
  /** A GGUF name as the folder names it (for messages). */
  label: (name: string) => string;
}

function formatError(message: string): TensorOpsError {
  return new TensorOpsError('E_FORMAT', message);
}

/** Re-throws an E_FORMAT about one of the folder's files with the folder named. */
function inFolder<T>(dir: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof TensorOpsError && err.code === 'E_FORMAT' && !err.message.includes(dir)) {
      throw new TensorOpsError('E_FORMAT', `'${dir}': ${err.message}`, { cause: err });
    }
    throw err;
  }
}

/**
 * A safetensors tensor that belongs to another (an MLX layer's scales/biases, an FP8 weight's
 * scales, an MXFP4 `x_blocks`' `x_scales`): its owner's name.
 */
function ownerOf(name: string, names: ReadonlySet<string>): string | undefined {
  const owner = name.replace(/\.(scales|biases)$/, '.weight').replace(/_scale(_inv)?$/, '').replace(/_scales$/, '_blocks');
  return owner !== name && names.has(owner) ? owner : undefined;
}

/** The name loadSafetensors gives a tensor: gpt-oss's MXFP4 `x_blocks` (with `x_scales`) loads as `x`. */
function loadedName(name: string, names: ReadonlySet<string>): string {
  const base = name.replace(/_blocks$/, '');
  return base !== name && names.has(`${base}_scales`) ? base : name;
}

/** Reads config.json, the tokenizer files and the weights' headers; E_FORMAT naming what is missing or wrong. */
export async function readHfFolder(dir: string): Promise<HfFolder> {
  const json = async (file: string) => readJsonFile(join(dir, file), file);
  const configJson = await json('config.json');
  if (!configJson) throw formatError(`'${dir}' is a folder without config.json; ${FOLDER}`);
  const { config, tied, ropeDivisors } = configFromHf(configJson, join(dir, 'config.json'));
  const tokenizerJson = await json('tokenizer.json');
  if (!tokenizerJson) throw formatError(`'${dir}' has no tokenizer.json (a BPE tokenizer: byte-level or SentencePiece-style); ${FOLDER}`);
  const files = { tokenizer: tokenizerJson, tokenizerConfig: await json('tokenizer_config.json'), config: configJson, generationConfig: await json('generation_config.json') };
  const tokenizer = inFolder(dir, () => tokenizerFromHf(files, { vocabSize: config.vocab }));

  const isFile = (f: string) => stat(join(dir, f)).then((s) => s.isFile(), () => false);
  if (!(await isFile('model.safetensors.index.json')) && !(await isFile('model.safetensors')) && !(await readdir(dir)).some((n) => n.endsWith('.safetensors'))) {
    throw formatError(`'${dir}' has no weights (model.safetensors, or shards and model.safetensors.index.json); ${FOLDER}`);
  }
  const { tensors } = await inspectSafetensors(dir);
  const all = new Set(tensors.map((t) => t.name));
  const roles: HfFolder['roles'] = new Map();
  const unknown: string[] = [];
  const moe = config.experts > 0;
  const oss = config.arch === 'gpt-oss';
  for (const file of all) {
    if (ownerOf(file, all) !== undefined) continue;
    const name = loadedName(file, all);
    const role = hfTensorRole(name, config.layers, moe, oss);
    if (role.kind === 'interleaved') {
      roles.set(name, { name: role.names[0], split: role.names, ...(role.inOut ? { inOut: role.inOut } : {}) });
    } else if (role.kind === 'weight') {
      // A tied model's logits use the embedding: a saved lm_head copy is left unread.
      if (role.name !== 'output.weight' || tied !== true) roles.set(name, { name: role.name, ...(role.inOut ? { inOut: role.inOut } : {}) });
    } else if (role.kind === 'expert' && role.expert < config.experts) {
      roles.set(name, { name: role.name, expert: role.expert });
    } else if (role.kind !== 'ignored') {
      unknown.push(file);
    }
  }
  if (unknown.length) {
    throw formatError(`'${dir}': tensor${unknown.length > 1 ? 's' : ''} ${unknown.slice(0, 3).map((n) => `'${n}'`).join(', ')}` +
      `${unknown.length > 3 ? ` and ${unknown.length - 3} more` : ''} ${unknown.length > 1 ? 'are' : 'is'} not ${config.arch} weights ` +
      `(config.json's ${config.layers} layers${moe ? `, ${config.experts} experts` : ''}); loadModel reads ${expectedNames(moe, oss).join(', ')}`);
  }
  if (tied === false && ![...roles.values()].some((r) => r.name === 'output.weight')) {
    throw formatError(`'${dir}': config.json's tie_word_embeddings is false, but the folder has no tensor 'lm_head.weight'`);
  }
  return { dir, config, tokenizer, ...(ropeDivisors ? { ropeDivisors } : {}), roles };
}

/** Stacks one layer's experts (dense [N, K] each) into [E, N, K]; E_FORMAT naming the expert that is missing or differs. */
function stackExperts(dev: Device, parts: (Weight | undefined)[], label: string): Tensor {
  const first = parts[0];
  for (let e = 0; e < parts.length; e++) {
    const t = parts[e];
    const what = label.replace('*', String(e));
    if (t === undefined) throw formatError(`the model has no tensor '${what}' (${parts.length} experts)`);
    if (!(t instanceof Tensor)) throw formatError(`tensor '${what}' is quantized per expert (${t.format}); loadModel stacks dense experts (mlx-lm's switch_mlp layers come stacked)`);
    if (t.shape.join() !== first!.shape.join() || t.dtype !== (first as Tensor).dtype) {
      throw formatError(`tensor '${what}' is [${t.shape.join(', ')}] ${t.dtype}; expert 0 is [${first!.shape.join(', ')}] ${(first as Tensor).dtype}`);
    }
  }
  const views = (parts as Tensor[]).map((t) => t.reshape([1, ...t.shape]));
  try {
    return dev.concat(views, 0);
  } finally {
    for (const v of views) v.dispose();  // the queued concat keeps what it reads
  }
}

/** Reads a folder's tensors onto the device under GGUF names; nothing stays allocated on a failure. */
export async function loadHfWeights(dev: Device, folder: HfFolder, onProgress?: (loaded: number, total: number) => void): Promise<HfWeights> {
  const { dir, roles, config } = folder;
  const loaded = await loadSafetensors(dev, dir, {
    filter: (name) => roles.has(name),
    ...(onProgress ? { onProgress: (p) => onProgress(p.bytesRead, p.totalBytes) } : {}),
  });
  const tensors = new Map<string, Weight>();
  const fileName = new Map<string, string>();
  const experts = new Map<string, (Weight | undefined)[]>();
  try {
    for (const [hf, t] of loaded.tensors) {
      const role = roles.get(hf)!;
      if (role.split) {
        const [a, b] = await inFolder(dir, () => splitInterleaved(dev, t, hf, role.inOut === true));
        t.dispose();
        for (const [name, part] of [[role.split[0], a], [role.split[1], b]] as const) {
          if (tensors.has(name)) { part.dispose(); throw formatError(`'${dir}': tensor '${hf}' and '${fileName.get(name)}' are both ${hfTensorName(name)}`); }
          tensors.set(name, part);
          fileName.set(name, hf);
        }
      } else if (role.expert === undefined) {
        if (tensors.has(role.name) || experts.has(role.name)) throw formatError(`'${dir}': tensors '${fileName.get(role.name) ?? hf}' and '${hf}' are both ${hfTensorName(role.name)}`);
        tensors.set(role.name, role.inOut && t instanceof Tensor ? inFolder(dir, () => outIn(dev, t, hf)) : t);
        fileName.set(role.name, hf);
      } else {
        if (tensors.has(role.name)) throw formatError(`'${dir}': tensor '${hf}' and the stacked '${fileName.get(role.name)}' are both ${hfTensorName(role.name)}`);
        const list = experts.get(role.name) ?? new Array<Weight | undefined>(config.experts).fill(undefined);
        list[role.expert] = t;
        experts.set(role.name, list);
      }
    }
    for (const [name, parts] of experts) {
      tensors.set(name, inFolder(dir, () => stackExperts(dev, parts, hfTensorName(name))));
      for (const t of parts) t?.dispose();  // the queued concat keeps what it reads
    }
    if (folder.ropeDivisors) tensors.set('rope_freqs.weight', dev.tensor(folder.ropeDivisors, [folder.ropeDivisors.length]));
  } catch (err) {
    for (const t of loaded.tensors.values()) if (!t.disposed) t.dispose();
    for (const t of tensors.values()) if (!t.disposed) t.dispose();
    throw err;
  }
  return {
    tensors,
    conversions: loaded.report.conversions.filter((c) => !c.exact),
    label: (name) => fileName.get(name) ?? hfTensorName(name),
  };
}

/** A dense [E, in, out] expert stack (transformers' gpt-oss down_proj) as [E, out, in]; disposes t once queued. */
function outIn(dev: Device, t: Tensor, name: string): Tensor {
  if (t.shape.length !== 3) throw formatError(`tensor '${name}' must be [experts, intermediate_size, hidden_size]; got [${t.shape.join(', ')}]`);
  const r = dev.transpose(t, [0, 2, 1]);
  t.dispose();  // the queued transpose keeps what it reads
  return r;
}

/**
 * gpt-oss's gate_up_proj [E, 2N, K] (mxfp4), [E, K, 2N] (dense: transformers' x @ W layout,
 * `inOut`) or its bias [E, 2N]: gate is output 2i, up output 2i + 1 (transformers' gate_up[...,
 * ::2] and [..., 1::2]; llama.cpp's converter splits them the same way). A bias splits on the
 * host; a dense stack on the device (its columns paired, each half transposed to [E, N, K]: copies,
 * exact); mxfp4 codes and scales are copied row by row (whole 32-blocks, so exact), as no op selects
 * every other row of a quantized tensor.
 */
async function splitInterleaved(dev: Device, t: Weight, name: string, inOut: boolean): Promise<[Weight, Weight]> {
  const shape = t.shape;
  if (t instanceof Tensor && inOut && shape.length === 3) {
    const [E, K, N2] = shape;
    if (N2 % 2 !== 0) throw formatError(`tensor '${name}' must be [experts, hidden_size, 2 * intermediate_size]; got [${shape.join(', ')}]`);
    const pairs = t.reshape([E, K, N2 / 2, 2]);
    const half = (at: number) => {
      const cols = dev.slice(pairs, { axis: 3, start: at, end: at + 1 });  // [E, K, N, 1]
      const flat = cols.reshape([E, K, N2 / 2]);
      const r = dev.transpose(flat, [0, 2, 1]);
      flat.dispose();  // the queued ops keep what they read
      cols.dispose();
      return r;
    };
    const out: [Weight, Weight] = [half(0), half(1)];
    pairs.dispose();
    return out;
  }
  if (t instanceof Tensor) {
    if (shape.length !== 2 || shape[1] % 2 !== 0) throw formatError(`tensor '${name}' must be [experts, 2 * intermediate_size]; got [${shape.join(', ')}]`);
    // Small (a bias): split on the host, as float32 (every float16/bfloat16 value is exact there).
    const [E, N2] = shape;
    const v = await t.toFloat32();
    const half = (at: number) => dev.tensor(Float32Array.from({ length: (E * N2) / 2 }, (_, i) => v[2 * i + at]), [E, N2 / 2]);
    return [half(0), half(1)];
  }
  if (t.format !== 'mxfp4' || shape.length !== 3 || shape[1] % 2 !== 0) {
    throw formatError(`tensor '${name}' must be MXFP4 blocks [experts, 2 * intermediate_size, hidden_size] or dense [experts, hidden_size, 2 * intermediate_size]; got ${t.format} [${shape.join(', ')}]`);
  }
  const [E, N2, K] = shape;
  const codes = await t.codes(), scales = await t.scales();
  const rowCodes = K / 2, rowScales = K / 32;
  const part = (at: number) => {
    const c = new Uint8Array((E * N2 / 2) * rowCodes), s = new Uint8Array((E * N2 / 2) * rowScales);
    for (let r = 0; r < E * N2 / 2; r++) {
      const from = 2 * r + at;
      c.set(codes.subarray(from * rowCodes, (from + 1) * rowCodes), r * rowCodes);
      s.set(scales.subarray(from * rowScales, (from + 1) * rowScales), r * rowScales);
    }
    return dev.fromQuantized({ format: 'mxfp4', shape: [E, N2 / 2, K], codes: c, scales: s });
  };
  return [part(0), part(1)];
}
