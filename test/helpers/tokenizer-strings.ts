// Strings the tokenizer tests compare on: hand-picked edge cases and seeded random mixtures of
// words, whitespace runs, digits, punctuation, scripts, emoji and special-token texts.
import { rng } from './compare';

export const EDGE_CASES: readonly string[] = [
  '', ' ', '  ', '   ', '\n', '\n\n', ' \n', '\n ', ' \n\n ', '\t', '\t\t', '\r\n', '\r\n\r\n', ' \r\n x',
  'a', 'A', 'Hello', ' Hello', 'Hello ', 'Hello world', 'Hello  world', 'Hello   world  ', ' leading', 'trailing  ',
  "don't", "DON'T", "it's", "It'S", "'s", "'", "''", "'ll've", "we'RE", " 're", "x'd y'M", "o'clock",
  '1', '12', '123', '1234', '1234567890', ' 12345', '3.14159', '1,000,000', '10%', '$100.00', '007', 'a1b22c333d4444',
  '...', '?!', '!!!???', 'a.b,c;d:e', ' , . ! ?', 'x , y . z ! w ?', "a ' b", "he said ' hi ' there", "it 's , they 're",
  '<=>', '^~|', '`code`', '@#$%^&*()', '-->', '::', '/* */', '//', '\\n', '"quoted"',
  'café', 'naïve', 'Ærøskøbing', 'e\u0301', 'cafe\u0301s', 'Ⅻ', '½', '٣٤٥', '१२३',
  '中文', '我爱自然语言处理', '日本語のテキスト', '한국어', 'Привет, мир!', 'Γειά σου', 'مرحبا', 'नमस्ते',
  '😀', '👍🏽', '👨‍👩‍👧‍👦', '🇺🇸', '❤️', 'a😀b', ' 😀 ', '😀😀😀',
  '\u00a0', 'a\u00a0b', 'a\u3000b', 'a\u2028b', '\ufeffBOM', 'zero\u200bwidth', 'tab\there', 'ctrl\u0007char', 'nul\u0000x',
  'x\u0085y', '\u0085', '  \u00a0 ', 'Ω', 'K', 'ﬁ', 'İstanbul', 'ß', 'ǅ',
  '<|begin_of_text|>', '<|begin_of_text|>Hello', 'Hello<|eot_id|>', '<|eot_id|><|eot_id|>', 'a<|eot_id|>b',
  ' <|eot_id|> ', '<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>', '<|eot_id', '|eot_id|>',
  '<|tool|>', 'x <|tool|> y', '<|tool|><|tool|>', '<s>', '</s>', '<s>hi</s>', '<unk>', '<tool>', 'a<tool>b', ' <tool> ',
  '<0x41>', '▁', '▁▁x', 'unmergedword', ' unmergedword', 'Zebra', ' quickbrown', 'quickbrown', '12',
  'ab', ' ab', 'abab', 'ba ba', 'aba bab',
  'The quick brown fox jumps over the lazy dog.',
  'def f(x):\n    return x * 2\n\n\n# done',
  '    indented\n        more\n',
  'x' + ' '.repeat(40) + 'y',
  '\n'.repeat(12),
  'a'.repeat(300),
  '9'.repeat(100),
  '!'.repeat(50),
];

const POOL = [
  'the', 'The', ' quick', 'brown', 'fox', 'jumps', "don't", "I'm", "we've", "they'LL", 'hello', 'world', 'tokenizer',
  'unmergedword', 'Zebra', 'quickbrown', 'ab', 'ba',
  '0', '7', '42', '123', '2024', '3.14', '1,000', '99999',
  '.', ',', '!', '?', ';', ':', '...', '(', ')', '[', ']', '{', '}', '"', "'", '`', '-', '_', '/', '\\', '@', '#', '$', '%',
  '^', '&', '*', '+', '=', '<', '>', '|', '~',
  ' ', ' ', ' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', ' \n', '\u00a0', '\u3000',
  'café', 'über', 'Straße', 'niño', 'élève', 'cœur', 'e\u0301', 'Ω', 'İ',
  '中文', '自然', '语言', '。', '，', '日本', 'テキスト', 'ひらがな', '한국어', 'Привет', 'мир', 'αλεπού', 'مرحبا', 'नमस्ते',
  '😀', '👍🏽', '❤️', '🇺🇸', '👨‍👩‍👧‍👦', '™', '©', '°', '→', '∑', '½', 'Ⅻ', '١٢', '\u200b', '\ufeff',
  '<|eot_id|>', '<|begin_of_text|>', '<|tool|>', '<s>', '</s>', '<tool>', '<unk>', '<|', '|>',
];


/** `count` random strings of 1 to 24 pool pieces. */
export function randomStrings(count: number, seed = 1): string[] {
  const r = rng(seed);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const n = 1 + Math.floor(r() * 24);
    let s = '';
    for (let j = 0; j < n; j++) s += POOL[Math.floor(r() * POOL.length)];
    out.push(s);
  }
  return out;
}
