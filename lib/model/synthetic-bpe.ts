// The byte-level BPE ('gpt2') vocabulary of a synthetic gpt-oss model: GPT-2's 256 byte
// characters, merges of letters (a space-prefixed letter, then letter pairs), and gpt-oss's
// harmony control tokens last, written with the 'gpt-4o' pre-tokenizer that gpt-oss's published
// GGUF files name (o200k). Small, deterministic, and a vocabulary llama.cpp loads.
import type { GgufWriteValue } from '../loaders/gguf/write';
import { BYTE_TO_CHAR } from '../tokenizer/bytes';

/** gpt-oss's special tokens (o200k_harmony), in the order its tokenizer numbers them. */
export const HARMONY_TOKENS = ['<|startoftext|>', '<|endoftext|>', '<|return|>', '<|constrain|>', '<|channel|>',
  '<|start|>', '<|end|>', '<|message|>', '<|call|>'] as const;

/** GGUF tokenizer metadata of a `size`-token byte-level BPE vocabulary (at least 300 tokens). */
export function syntheticBpeMetadata(size: number): [string, GgufWriteValue][] {
  if (!Number.isInteger(size) || size < 300) throw new RangeError(`a synthetic BPE vocabulary needs at least 300 tokens; got ${size}`);
  const tokens: string[] = [...BYTE_TO_CHAR];
  const seen = new Set(tokens);
  const merges: string[] = [];
  const room = size - HARMONY_TOKENS.length;
  const merge = (a: string, b: string) => {
    if (tokens.length >= room || seen.has(a + b)) return;
    seen.add(a + b);
    tokens.push(a + b);
    merges.push(`${a} ${b}`);
  };
  const space = BYTE_TO_CHAR[0x20];  // 'Ġ'
  const letters = 'etaoinshrdlucmfwypvbgkqjxz';
  for (const c of letters) merge(space, c);
  for (const a of letters) for (const b of letters) merge(a, b);
  for (const a of letters) for (const b of letters) merge(space + a, b);
  // Any room left (vocabularies past ~1300 tokens): pieces no merge makes, never produced.
  for (let i = 0; tokens.length < room; i++) { const t = `<unused${i}>`; if (!seen.has(t)) { seen.add(t); tokens.push(t); } }
  const types: number[] = tokens.map((t) => (t.startsWith('<unused') ? 5 : 1));  // 1 normal, 5 unused, 3 control
  const first = tokens.length;
  for (const t of HARMONY_TOKENS) { tokens.push(t); types.push(3); }
  const id = (t: (typeof HARMONY_TOKENS)[number]) => ({ type: 'uint32', value: first + HARMONY_TOKENS.indexOf(t) }) as GgufWriteValue;
  return [
    ['tokenizer.ggml.model', { type: 'string', value: 'gpt2' }],
    ['tokenizer.ggml.pre', { type: 'string', value: 'gpt-4o' }],
    ['tokenizer.ggml.tokens', { type: 'array', of: 'string', value: tokens }],
    ['tokenizer.ggml.token_type', { type: 'array', of: 'int32', value: Int32Array.from(types) }],
    ['tokenizer.ggml.merges', { type: 'array', of: 'string', value: merges }],
    // As gpt-oss's tokenizer_config.json has them: bos <|startoftext|>, eos <|return|>, pad <|endoftext|>.
    ['tokenizer.ggml.bos_token_id', id('<|startoftext|>')],
    ['tokenizer.ggml.eos_token_id', id('<|return|>')],
    ['tokenizer.ggml.padding_token_id', id('<|endoftext|>')],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: false }],
  ];
}
