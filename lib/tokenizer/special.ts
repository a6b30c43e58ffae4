// Token attributes (from tokenizer.ggml.token_type, with llama.cpp's corrections by token text)
// and the split of input text around special tokens before the text is tokenized.

export const ATTR_UNKNOWN = 1 << 0;
export const ATTR_UNUSED = 1 << 1;
export const ATTR_NORMAL = 1 << 2;
export const ATTR_CONTROL = 1 << 3;
export const ATTR_USER_DEFINED = 1 << 4;
export const ATTR_BYTE = 1 << 5;
export const ATTR_LSTRIP = 1 << 7;
export const ATTR_RSTRIP = 1 << 8;

/** tokenizer.ggml.token_type values (gguf's llama_token_type). */
export const TOKEN_TYPE = { UNDEFINED: 0, NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

/** The attribute bits of a token type. */
export function attrOfType(type: number): number {
  switch (type) {
    case TOKEN_TYPE.NORMAL: return ATTR_NORMAL;
    case TOKEN_TYPE.UNKNOWN: return ATTR_UNKNOWN;
    case TOKEN_TYPE.CONTROL: return ATTR_CONTROL;
    case TOKEN_TYPE.USER_DEFINED: return ATTR_USER_DEFINED;
    case TOKEN_TYPE.UNUSED: return ATTR_UNUSED;
    case TOKEN_TYPE.BYTE: return ATTR_BYTE;
    default: return 0;
  }
}

// Texts llama.cpp recognizes as end-of-turn / fill-in-the-middle / end-of-generation tokens when
// the metadata does not name them; such tokens are made control tokens.
export const EOT_TEXTS = ['<|eot_id|>', '<|im_end|>', '<|end|>', '<end_of_turn>', '<|endoftext|>', '<|end_of_text|>',
  '<EOT>', '_<EOT>', '[EOT]', '<｜end▁of▁sentence｜>', '<end_of_utterance>'];
export const EOM_TEXTS = ['<|eom_id|>'];
export const FIM_TEXTS = [
  ['<|fim_prefix|>', '<fim-prefix>', '<fim_prefix>', '<｜fim▁begin｜>', '<PRE>', '▁<PRE>', '<|code_prefix|>', '<|prefix|>'],
  ['<|fim_suffix|>', '<fim-suffix>', '<fim_suffix>', '<｜fim▁hole｜>', '<SUF>', '▁<SUF>', '<|code_suffix|>', '<|suffix|>'],
  ['<|fim_middle|>', '<fim-middle>', '<fim_middle>', '<｜fim▁end｜>', '<MID>', '▁<MID>', '<|code_middle|>', '<|middle|>'],
  ['<|fim_pad|>', '<fim-pad>', '<fim_pad>', '<PAD>', '[PAD]'],
  ['<|fim_repo|>', '<|repo_name|>', '<fim-repo>', '<REPO>', '<reponame>'],
  ['<|file_sep|>'],
];
export const EOG_TEXTS = ['<|eot_id|>', '<|im_end|>', '<|end|>', '<|return|>', '<|call|>', '<|flush|>', '<|calls|>',
  '<end_of_turn>', '<|endoftext|>', '</s>', '<|eom_id|>', '<EOT>', '_<EOT>', '[EOT]', '[EOS]', '<|end_of_text|>',
  '<end_of_utterance>', '<eos>', '<turn|>', '<|tool_response>', '<｜end▁of▁sentence｜>', '[e~['];
/** gpt-oss's tokens llama.cpp always renders (made user-defined). */
export const ALWAYS_RENDERED = ['<|channel|>', '<|message|>', '<|start|>', '<|constrain|>'];

/** A piece of input: text still to tokenize, or a special token's id. */
export type Fragment = string | number;

const isSpace = (c: number) => c === 0x20 || (c >= 0x09 && c <= 0x0d);

/**
 * Splits text around the special tokens (longest first; each token's occurrences left to right).
 * Control and unknown tokens count only when `parseSpecial`; user-defined tokens always do.
 */
export function partition(
  text: string, specials: readonly number[], texts: readonly string[], attrs: Uint16Array, parseSpecial: boolean,
): Fragment[] {
  let frags: Fragment[] = text.length > 0 ? [text] : [];
  for (const id of specials) {
    const attr = attrs[id];
    if (!parseSpecial && attr & (ATTR_CONTROL | ATTR_UNKNOWN)) continue;
    const t = texts[id];
    if (!frags.some((f) => typeof f === 'string' && f.includes(t))) continue;
    const next: Fragment[] = [];
    for (const f of frags) {
      if (typeof f !== 'string') { next.push(f); continue; }
      let from = 0;
      for (let at = f.indexOf(t); at >= 0; at = f.indexOf(t, from)) {
        let leftEnd = at;
        if (attr & ATTR_LSTRIP) while (leftEnd > from && isSpace(f.charCodeAt(leftEnd - 1))) leftEnd--;
        if (leftEnd > from) next.push(f.slice(from, leftEnd));
        next.push(id);
        from = at + t.length;
        if (attr & ATTR_RSTRIP) while (from < f.length && isSpace(f.charCodeAt(from))) from++;
      }
      if (from < f.length) next.push(from === 0 ? f : f.slice(from));
    }
    frags = next;
  }
  return frags;
}
