// A tokenizer's vocabulary as plain data, and reading it from a GGUF file's metadata
// (the tokenizer.ggml.* keys llama.cpp's converters write).
import { TensorOpsError } from '../errors';
import type { GgufValue } from '../loaders/gguf/types';

/** Everything a {@link Tokenizer} is made from; what a GGUF file's tokenizer.ggml.* keys hold. */
export interface TokenizerData {
  /** 'gpt2': byte-level BPE with merges; 'llama': SentencePiece with scores. */
  model: 'gpt2' | 'llama';
  /** The BPE pre-tokenizer (tokenizer.ggml.pre); absent or '' means 'default'. Ignored for 'llama'. */
  pre?: string;
  tokens: readonly string[];
  /** Piece scores (SentencePiece merges by them); absent: all 0. */
  scores?: ArrayLike<number>;
  /** Token types (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte); absent: all normal. */
  tokenTypes?: ArrayLike<number>;
  /** BPE merges, 'left right', in priority order (required for 'gpt2'). */
  merges?: readonly string[];
  bosId?: number;
  eosId?: number;
  eotId?: number;
  eomId?: number;
  unkId?: number;
  sepId?: number;
  padId?: number;
  /** More ids that end generation besides EOS/EOT/EOM (generation_config.json's eos_token_id list). */
  eogIds?: readonly number[];
  /** Defaults: 'llama' true; 'gpt2' per the pre type (true for llama3). */
  addBos?: boolean;
  /** Default false. */
  addEos?: boolean;
  /** Default: 'llama' true, 'gpt2' false. */
  addSpacePrefix?: boolean;
}

const PREFIX = 'tokenizer.ggml.';

function bad(key: string, what: string): TensorOpsError {
  return new TensorOpsError('E_FORMAT', `GGUF metadata ${key}: ${what}`);
}

function describeValue(v: GgufValue): string {
  if (Array.isArray(v)) return 'an array';
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
  return `${typeof v} ${String(v).slice(0, 40)}`;
}

function stringOf(md: ReadonlyMap<string, GgufValue>, key: string, required: boolean): string | undefined {
  const v = md.get(key);
  if (v === undefined) {
    if (required) throw bad(key, 'missing (the file has no tokenizer)');
    return undefined;
  }
  if (typeof v !== 'string') throw bad(key, `expected a string, got ${describeValue(v)}`);
  return v;
}

function stringsOf(md: ReadonlyMap<string, GgufValue>, key: string, required: boolean): string[] | undefined {
  const v = md.get(key);
  if (v === undefined) {
    if (required) throw bad(key, 'missing');
    return undefined;
  }
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string')) throw bad(key, `expected an array of strings, got ${describeValue(v)}`);
  return v as string[];
}

function numbersOf(md: ReadonlyMap<string, GgufValue>, key: string, length: number, integer: boolean): ArrayLike<number> | undefined {
  const v = md.get(key);
  if (v === undefined) return undefined;
  let arr: ArrayLike<number>;
  if (v instanceof BigInt64Array || v instanceof BigUint64Array) {
    arr = Array.from(v, Number);
  } else if (ArrayBuffer.isView(v)) {
    arr = v as unknown as ArrayLike<number>;
  } else if (Array.isArray(v) && v.every((x) => typeof x === 'number' || typeof x === 'bigint')) {
    arr = v.map(Number);
  } else {
    throw bad(key, `expected a numeric array, got ${describeValue(v)}`);
  }
  if (arr.length < length) throw bad(key, `has ${arr.length} entries for ${length} tokens`);
  if (integer) {
    for (let i = 0; i < length; i++) if (!Number.isInteger(arr[i])) throw bad(key, `entry ${i} is not an integer`);
  }
  return arr;
}

function idOf(md: ReadonlyMap<string, GgufValue>, key: string): number | undefined {
  const v = md.get(key);
  if (v === undefined) return undefined;
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw bad(key, `expected a token id, got ${describeValue(v)}`);
  return n;
}

function flagOf(md: ReadonlyMap<string, GgufValue>, key: string): boolean | undefined {
  const v = md.get(key);
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw bad(key, `expected a boolean, got ${describeValue(v)}`);
  return v;
}

/**
 * Reads the tokenizer from parsed GGUF metadata. Missing or ill-typed keys throw E_FORMAT
 * naming the key. Ids out of the vocabulary's range are dropped, as llama.cpp drops them.
 */
export function tokenizerDataFromGguf(metadata: ReadonlyMap<string, GgufValue>): TokenizerData {
  const modelKey = `${PREFIX}model`;
  const model = stringOf(metadata, modelKey, true)!;
  if (model !== 'gpt2' && model !== 'llama') {
    throw bad(modelKey, `'${model}' is not a tokenizer this package implements (gpt2, llama)`);
  }
  const tokens = stringsOf(metadata, `${PREFIX}tokens`, true)!;
  if (tokens.length === 0) throw bad(`${PREFIX}tokens`, 'is empty');
  const n = tokens.length;
  const data: TokenizerData = {
    model,
    pre: stringOf(metadata, `${PREFIX}pre`, false),
    tokens,
    scores: numbersOf(metadata, `${PREFIX}scores`, n, false),
    tokenTypes: numbersOf(metadata, `${PREFIX}token_type`, n, true),
    merges: stringsOf(metadata, `${PREFIX}merges`, model === 'gpt2'),
  };
  const ids: Array<[keyof TokenizerData, string]> = [
    ['bosId', 'bos_token_id'], ['eosId', 'eos_token_id'], ['eotId', 'eot_token_id'], ['eomId', 'eom_token_id'],
    ['unkId', 'unknown_token_id'], ['sepId', 'seperator_token_id'], ['padId', 'padding_token_id'],
  ];
  for (const [field, key] of ids) {
    const id = idOf(metadata, PREFIX + key);
    if (id !== undefined && id < n) (data as unknown as Record<string, unknown>)[field] = id;
  }
  const flags: Array<[keyof TokenizerData, string]> = [
    ['addBos', 'add_bos_token'], ['addEos', 'add_eos_token'], ['addSpacePrefix', 'add_space_prefix'],
  ];
  for (const [field, key] of flags) {
    const f = flagOf(metadata, PREFIX + key);
    if (f !== undefined) (data as unknown as Record<string, unknown>)[field] = f;
  }
  return data;
}
