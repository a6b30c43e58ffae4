// Code point classes as llama.cpp's pre-tokenizers see them: one general category per code point
// (letter, number, mark, punctuation, symbol, separator, control, or unassigned) plus the Unicode
// White_Space property. The categories come from the JavaScript engine's Unicode tables, so a
// code point assigned in a newer Unicode version than llama.cpp's tables may classify differently.

export const F_UNDEFINED = 0x01;
export const F_NUMBER = 0x02;
export const F_LETTER = 0x04;
export const F_SEPARATOR = 0x08;
export const F_MARK = 0x10;
export const F_PUNCTUATION = 0x20;
export const F_SYMBOL = 0x40;
export const F_CONTROL = 0x80;
export const F_WHITESPACE = 0x100;

const CATEGORY_TESTS: ReadonlyArray<readonly [RegExp, number]> = [
  [/^\p{L}$/u, F_LETTER], [/^\p{N}$/u, F_NUMBER], [/^\p{M}$/u, F_MARK], [/^\p{P}$/u, F_PUNCTUATION],
  [/^\p{S}$/u, F_SYMBOL], [/^\p{Z}$/u, F_SEPARATOR], [/^\p{Cn}$/u, F_UNDEFINED], [/^\p{C}$/u, F_CONTROL],
];
const WHITE_SPACE = /^\p{White_Space}$/u;

// Filled lazily: 0 = not yet computed; otherwise the flags with bit 0x8000 set.
const table = new Uint16Array(0x110000);

function compute(cp: number): number {
  const ch = String.fromCodePoint(cp);
  let flags = F_UNDEFINED;
  for (const [re, flag] of CATEGORY_TESTS) {
    if (re.test(ch)) { flags = flag; break; }
  }
  if (WHITE_SPACE.test(ch)) flags |= F_WHITESPACE;
  return flags;
}

/** The category and whitespace flags of a code point (never 0 for a valid code point). */
export function cpFlags(cp: number): number {
  if (cp < 0 || cp > 0x10ffff) return F_UNDEFINED;
  let v = table[cp];
  if (v === 0) { v = compute(cp) | 0x8000; table[cp] = v; }
  return v & 0x7fff;
}

/** Lowercases A-Z (the only code points whose lowercase is one of the contraction letters). */
export function asciiLower(cp: number): number {
  return cp >= 0x41 && cp <= 0x5a ? cp + 32 : cp;
}

/** The code points of a string (lone surrogates read as U+FFFD). */
export function codePoints(text: string): Uint32Array {
  const out = new Uint32Array(text.length);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) { c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00); i++; } else c = 0xfffd;
    } else if (c >= 0xdc00 && c <= 0xdfff) c = 0xfffd;
    out[n++] = c;
  }
  return out.subarray(0, n);
}

/** The UTF-16 offset of each code point of a well-formed string, and the string's length last. */
export function unitOffsets(text: string, count: number): Int32Array {
  const out = new Int32Array(count + 1);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    out[n++] = i;
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) i++;
  }
  out[n] = text.length;
  return out;
}

/** A string from code points [start, end). */
export function fromCodePoints(cps: Uint32Array, start = 0, end = cps.length): string {
  let s = '';
  for (let i = start; i < end; i += 4096) {
    s += String.fromCodePoint(...cps.subarray(i, Math.min(end, i + 4096)));
  }
  return s;
}

/** Replaces lone surrogates with U+FFFD, as a UTF-8 conversion of the string would. */
export function wellFormed(text: string): string {
  return text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}
