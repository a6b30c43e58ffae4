// Which of llama.cpp's BPE pre-tokenizers a tokenizer.json asks for. A byte-level tokenizer.json
// states its split as a regular expression (a Split step before ByteLevel, or ByteLevel's own
// GPT-2 pattern); llama.cpp names the same splits (tokenizer.ggml.pre) and implements each by
// hand, so the pattern is matched exactly against the ones those names stand for.
import { TensorOpsError } from '../errors';
import { describe } from '../validate';

const CONTRACTIONS = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)`;
const TAIL = String.raw`|\s*[\r\n]+|\s+(?!\S)|\s+`;
/** GPT-2's pattern: ByteLevel's own when use_regex is on. */
const GPT2 = String.raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`;

/** tokenizer.json Split patterns (as the file spells them) -> llama.cpp's pre type. */
const PATTERNS: ReadonlyMap<string, string> = new Map([
  [CONTRACTIONS + String.raw`|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*` + TAIL, 'llama3'],
  [CONTRACTIONS + String.raw`|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*` + TAIL, 'qwen2'],
  [CONTRACTIONS + String.raw`|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*` + TAIL, 'qwen35'],
  [String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*` + TAIL, 'tekken'],
  // o200k (gpt-4o, gpt-oss): tekken's letter runs, each with an optional contraction.
  [String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` + CONTRACTIONS + String.raw`?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*` + CONTRACTIONS + String.raw`?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*` + TAIL, 'gpt-4o'],
  [GPT2, 'gpt-2'],
]);

/** The pre types a tokenizer.json can name, by the pattern it spells (for messages and docs). */
export const HF_PRE_TYPES: readonly string[] = [...new Set(PATTERNS.values())];

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fail(message: string): TensorOpsError {
  return new TensorOpsError('E_FORMAT', `tokenizer.json: ${message}`);
}

/**
 * llama.cpp's pre type for a byte-level tokenizer.json's pre_tokenizer: Sequence [Split(regex,
 * Isolated), ByteLevel(use_regex false)], or ByteLevel alone with GPT-2's pattern. E_FORMAT naming
 * the step or the pattern otherwise.
 */
export function hfPreType(preTokenizer: unknown): string {
  if (!isObject(preTokenizer)) throw fail(`pre_tokenizer must be an object; got ${describe(preTokenizer)}`);
  const steps = preTokenizer.type === 'Sequence' ? preTokenizer.pretokenizers : [preTokenizer];
  if (!Array.isArray(steps) || !steps.every(isObject)) throw fail('pre_tokenizer.pretokenizers must be an array of objects');
  const patterns: string[] = [];
  for (const step of steps as Record<string, unknown>[]) {
    if (step.type === 'ByteLevel') {
      // A leading space added to every text changes every first word; llama.cpp never adds one.
      if (step.add_prefix_space === true) throw fail('ByteLevel add_prefix_space true is not supported');
      if (step.use_regex !== false) patterns.push(GPT2);
    } else if (step.type === 'Split') {
      const pattern = isObject(step.pattern) ? step.pattern.Regex : undefined;
      if (typeof pattern !== 'string') throw fail(`a Split pre-tokenizer must have a Regex pattern; got ${JSON.stringify(step.pattern)}`);
      if (step.invert === true || (step.behavior !== undefined && step.behavior !== 'Isolated')) {
        throw fail(`Split behavior ${describe(step.behavior)}${step.invert ? ' inverted' : ''} is not supported (Isolated is)`);
      }
      patterns.push(pattern);
    } else {
      throw fail(`pre-tokenizer step ${describe(step.type)} is not supported (Split and ByteLevel are)`);
    }
  }
  if (patterns.length !== 1) throw fail(`pre_tokenizer splits by ${patterns.length} patterns; loadModel reads one`);
  const name = PATTERNS.get(patterns[0]);
  if (name === undefined) {
    throw fail(`the pre-tokenizer pattern ${JSON.stringify(patterns[0])} is not one of llama.cpp's that this package implements (those of ${HF_PRE_TYPES.join(', ')})`);
  }
  return name;
}
