// Pre-tokenization: splitting text into words before BPE, as llama.cpp does for each
// `tokenizer.ggml.pre` type. A pre type is a list of steps applied in order; each step splits
// every piece the previous steps left (llama.cpp's `unicode_regex_split`). The common patterns
// (GPT-2's, Llama 3's, Qwen2's) are hand-written scanners, as llama.cpp has them; the others run
// as regular expressions the way llama.cpp runs them through std::regex: on a "collapsed" copy of
// the text where every non-ASCII code point is one stand-in character for its category.
import { TensorOpsError } from '../errors';
import {
  F_LETTER, F_MARK, F_NUMBER, F_PUNCTUATION, F_SYMBOL, F_WHITESPACE, asciiLower, codePoints, cpFlags,
  fromCodePoints, unitOffsets,
} from './unicode';

type Scanner = 'gpt2' | 'llama3' | 'qwen2' | 'qwen35' | 'newlines';
/** A step: a hand-written scanner, or a regular expression in llama.cpp's (ECMAScript) spelling. */
export type PreStep = Scanner | { re: string };

export interface PreType {
  steps: readonly PreStep[];
  /** llama.cpp's clean_up_tokenization_spaces when detokenizing (default true for BPE). */
  cleanSpaces: boolean;
  /** A word that is itself a token is not merged (tokenizer.json's ignore_merges). */
  ignoreMerges: boolean;
  /** The default for tokenizer.ggml.add_bos_token. */
  addBos: boolean;
  /** llama.cpp's default BOS id is cleared for this type. */
  noDefaultBos?: boolean;
}

const CONTRACTIONS = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const DEFAULT_STEPS: PreStep[] = [
  { re: '[\\p{P}\\$\\+<=>\\^~\\|]+' }, 'gpt2', { re: '\\p{N}+' }, { re: '[0-9][0-9][0-9]' },
];
const GPT4O_RE = `[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+${CONTRACTIONS}?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*${CONTRACTIONS}?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const TEKKEN_RE = '[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+';
const JAIS2_RE = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|` +
  [512, 256, 128, 64, 32, 16, 8, 4].map((n) => `\\s{${n}}(?!\\S)`).join('|') + '|\\s{1,2}(?!\\S)|\\s{1}';
const SEED_CODER_RE = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const BAILING_RE = "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+";
const MINICPM5_RE = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const BLOOM_RE = ' ?[^(\\s|.,!?…。，、।۔،)]+';

function pre(steps: PreStep[], opts: Partial<Omit<PreType, 'steps'>> = {}): PreType {
  return { steps, cleanSpaces: true, ignoreMerges: false, addBos: false, ...opts };
}

const noClean = { cleanSpaces: false };
const TYPES: Array<[string[], PreType]> = [
  [['default'], pre(DEFAULT_STEPS)],
  [['llama3', 'llama-v3', 'llama-bpe', 'falcon3', 'falcon-h1', 'pixtral', 'midm-2.0', 'lfm2', 'jina-v5-nano'],
    pre(['llama3'], { ignoreMerges: true, addBos: true })],
  [['dbrx', 'smaug-bpe'], pre(['llama3'])],
  [['glm4', 'chatglm-bpe'], pre(['llama3'], { noDefaultBos: true })],
  [['falcon'], pre([{ re: '[\\p{P}\\$\\+<=>\\^~\\|`]+' }, 'gpt2', { re: '[0-9][0-9][0-9]' }])],
  [['mpt', 'gpt-2', 'phi-2', 'jina-es', 'jina-de', 'gigachat', 'jina-v2-es', 'jina-v2-de', 'a.x-4.0', 'mellum',
    'modern-bert', 'jina-v1-en', 'jina-v2-code', 'roberta-bpe', 'olmo', 'jais', 'exaone4'], pre(['gpt2'])],
  [['trillion', 'granite-docling'], pre(['gpt2'], noClean)],
  [['starcoder', 'refact', 'codeshell', 'exaone', 'minerva-7b', 'mellum2'], pre([{ re: '\\p{N}' }, 'gpt2'])],
  [['command-r', 'smollm'], pre([{ re: '\\p{N}' }, 'gpt2'], noClean)],
  [['jais-2'], pre([{ re: JAIS2_RE }])],
  [['qwen2', 'deepseek-r1-qwen', 'kormo', 'f2llmv2', 'hunyuan', 'solar-open', 'grok-2'], pre(['qwen2'], noClean)],
  [['stablelm2', 'megrez'], pre(['qwen2'])],
  [['qwen35'], pre(['qwen35'], noClean)],
  [['laguna'], pre(['newlines', 'qwen2'], noClean)],
  [['poro-chat'], pre([{ re: BLOOM_RE }], noClean)],
  [['bloom', 'gpt3-finnish'], pre([{ re: BLOOM_RE }])],
  [['viking'], pre([{ re: BLOOM_RE }, { re: '\\p{N}' }], noClean)],
  [['tekken'], pre([{ re: TEKKEN_RE }], { cleanSpaces: false, ignoreMerges: true, addBos: true })],
  [['gpt-4o', 'llama4', 'kanana2', 'talkie', 'minimax-m2'], pre([{ re: GPT4O_RE }], noClean)],
  [['seed-coder'], pre([{ re: SEED_CODER_RE }], noClean)],
  [['bailingmoe', 'bailingmoe2', 'llada-moe'], pre([{ re: BAILING_RE }], noClean)],
  [['minicpm5'], pre([{ re: '\\p{N}{1,3}' }, { re: MINICPM5_RE }], { ignoreMerges: true })],
];

const BY_NAME = new Map<string, PreType>();
for (const [names, type] of TYPES) for (const n of names) BY_NAME.set(n, type);

/** The pre-tokenizer types this package implements (`tokenizer.ggml.pre` values). */
export const SUPPORTED_PRE_TYPES: readonly string[] = [...BY_NAME.keys()];

/** The pre type for a `tokenizer.ggml.pre` value ('' or undefined: llama.cpp's 'default'). */
export function preType(name: string | undefined): PreType {
  const t = BY_NAME.get(name === undefined || name === '' ? 'default' : name);
  if (!t) {
    throw new TensorOpsError('E_FORMAT', `tokenizer.ggml.pre '${name}' is not a pre-tokenizer this package implements (${SUPPORTED_PRE_TYPES.join(', ')})`);
  }
  return t;
}

// ---- the hand-written scanners: each splits the pieces [start, start + length) of `cps` ----

const OUT = -1;
const CR = 0x0d, LF = 0x0a, SPACE = 0x20, QUOTE = 0x27;

type Pieces = number[];  // piece lengths, in code points, covering the text in order

function isContraction(cps: Uint32Array, pos: number, end: number, fold: boolean): number {
  // Returns the contraction's length at pos ('s 't 'm 'd: 2; 're 've 'll: 3) or 0.
  if (cps[pos] !== QUOTE || pos + 1 >= end) return 0;
  const lower = fold ? asciiLower : (c: number) => c;
  const a = lower(cps[pos + 1]);
  if (a === 0x73 || a === 0x74 || a === 0x6d || a === 0x64) return 2;  // s t m d
  if (pos + 2 >= end) return 0;
  const b = lower(cps[pos + 2]);
  if ((a === 0x72 && b === 0x65) || (a === 0x76 && b === 0x65) || (a === 0x6c && b === 0x6c)) return 3;  // re ve ll
  return 0;
}

/** 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
function scanGpt2(cps: Uint32Array, pieces: Pieces): Pieces {
  const out: Pieces = [];
  let start = 0;
  for (const len of pieces) {
    const end = start + len;
    const fl = (i: number) => (i >= start && i < end ? cpFlags(cps[i]) : 0);
    const cp = (i: number) => (i >= start && i < end ? cps[i] : OUT);
    let pos = start;
    while (pos < end) {
      const from = pos;
      const c = cps[pos];
      const k = isContraction(cps, pos, end, false);
      if (k) { pos += k; out.push(k); continue; }
      let f = c === SPACE ? fl(pos + 1) : fl(pos);
      const run = (test: (f: number) => boolean) => {
        if (c === SPACE) pos++;
        while (test(f)) f = fl(++pos);
        out.push(pos - from);
      };
      if (f & F_LETTER) { run((g) => (g & F_LETTER) !== 0); continue; }
      if (f & F_NUMBER) { run((g) => (g & F_NUMBER) !== 0); continue; }
      const other = (g: number) => g !== 0 && (g & (F_WHITESPACE | F_LETTER | F_NUMBER)) === 0;
      if (other(f)) { run(other); continue; }
      let ws = 0;
      while (fl(pos + ws) & F_WHITESPACE) ws++;
      if (ws > 1 && cp(pos + ws) !== OUT) { pos += ws - 1; out.push(pos - from); continue; }
      if (ws > 0) { pos += ws; out.push(ws); continue; }
      pos++;
      out.push(1);
    }
    start = end;
  }
  return out;
}

/**
 * Llama 3's pattern and Qwen2's (the same with single digits; Qwen3.5's also keeps marks with letters):
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 */
function scanLlama3(cps: Uint32Array, pieces: Pieces, maxDigits: number, marks: boolean): Pieces {
  const out: Pieces = [];
  const LETTERISH = marks ? F_LETTER | F_MARK : F_LETTER;
  const NOT_OTHER = F_WHITESPACE | F_NUMBER | LETTERISH;
  let start = 0;
  for (const len of pieces) {
    const end = start + len;
    const fl = (i: number) => (i >= start && i < end ? cpFlags(cps[i]) : 0);
    const cp = (i: number) => (i >= start && i < end ? cps[i] : OUT);
    let pos = start;
    while (pos < end) {
      const from = pos;
      const c = cps[pos];
      const f = cpFlags(c);
      const k = isContraction(cps, pos, end, true);
      if (k) { pos += k; out.push(k); continue; }
      if (c !== CR && c !== LF && !(f & F_NUMBER) && ((f & LETTERISH) || (fl(pos + 1) & LETTERISH))) {
        pos++;
        while (fl(pos) & LETTERISH) pos++;
        out.push(pos - from);
        continue;
      }
      if (f & F_NUMBER) {
        let n = 0;
        while (fl(pos) & F_NUMBER) { pos++; if (++n === maxDigits) { out.push(n); n = 0; } }
        if (n > 0) out.push(n);
        continue;
      }
      let f2 = c === SPACE ? fl(pos + 1) : f;
      if (!(f2 & NOT_OTHER)) {
        if (c === SPACE) pos++;
        while (f2 !== 0 && !(f2 & NOT_OTHER)) f2 = fl(++pos);
        while (cp(pos) === CR || cp(pos) === LF) pos++;
        out.push(pos - from);
        continue;
      }
      let ws = 0;
      let afterNewline = 0;
      while (fl(pos + ws) & F_WHITESPACE) {
        const w = cps[pos + ws];
        ws++;
        if (w === CR || w === LF) afterNewline = pos + ws;
      }
      if (afterNewline > 0) { pos = afterNewline; out.push(pos - from); continue; }
      if (ws > 1 && cp(pos + ws) !== OUT) { pos += ws - 1; out.push(pos - from); continue; }
      if (ws > 0) { pos += ws; out.push(ws); continue; }
      pos++;
      out.push(1);
    }
    start = end;
  }
  return out;
}

/** [^\n]+|[\n]+ */
function scanNewlines(cps: Uint32Array, pieces: Pieces): Pieces {
  const out: Pieces = [];
  let start = 0;
  for (const len of pieces) {
    const end = start + len;
    let pos = start;
    while (pos < end) {
      const nl = cps[pos] === LF;
      const from = pos;
      while (pos < end && (cps[pos] === LF) === nl) pos++;
      out.push(pos - from);
    }
    start = end;
  }
  return out;
}

// ---- regular expressions, run as llama.cpp runs them ----

const CATEGORY_STANDIN: ReadonlyArray<readonly [string, number, string]> = [
  // [\p{..} spelling, stand-in character, the ASCII members of the category (as class contents)]
  ['\\p{N}', 0xd1, '0-9'], ['\\p{L}', 0xd2, 'A-Za-z'], ['\\p{Lu}', 0xd2, 'A-Za-z'], ['\\p{Ll}', 0xd2, 'A-Za-z'],
  ['\\p{Lt}', 0xd2, 'A-Za-z'], ['\\p{Lm}', 0xd2, 'A-Za-z'], ['\\p{Lo}', 0xd2, 'A-Za-z'],
  ['\\p{P}', 0xd3, '!-#%-*,-/:-;?-@\\[-\\]_\\{\\}'], ['\\p{M}', 0xd4, ''], ['\\p{S}', 0xd5, '\\$\\+<->^`\\|\\~'],
];

/** Each code point as one character: ASCII as itself, others by category (llama.cpp's collapsed text). */
function collapse(cps: Uint32Array): string {
  const codes = new Uint16Array(cps.length);
  for (let i = 0; i < cps.length; i++) {
    const c = cps[i];
    if (c < 128) { codes[i] = c; continue; }
    const f = cpFlags(c);
    codes[i] = f & F_WHITESPACE ? 0x0b
      : f & F_NUMBER ? 0xd1 : f & F_LETTER ? 0xd2 : f & F_PUNCTUATION ? 0xd3 : f & F_MARK ? 0xd4 : f & F_SYMBOL ? 0xd5
      : 0xd0;
  }
  let s = '';
  for (let i = 0; i < codes.length; i += 4096) s += String.fromCharCode(...codes.subarray(i, i + 4096));
  return s;
}

function usesCategories(re: string): boolean {
  return CATEGORY_STANDIN.some(([p]) => re.includes(p));
}

/** The regular expression with each \p{..} replaced by its stand-in character and ASCII members. */
function collapseRegex(re: string): string {
  let out = '';
  let inside = false;
  for (let i = 0; i < re.length; i++) {
    const ch = re[i];
    if (ch === '[' && (i === 0 || re[i - 1] !== '\\')) { out += ch; inside = true; continue; }
    if (inside && ch === ']' && re[i - 1] !== '\\') { out += ch; inside = false; continue; }
    if (ch === '\\' && re[i + 1] === 'p' && re[i + 2] === '{') {
      const close = re.indexOf('}', i + 3);
      const hit = close >= 0 ? CATEGORY_STANDIN.find(([p]) => p === re.slice(i, close + 1)) : undefined;
      if (hit) {
        const body = String.fromCharCode(hit[1]) + hit[2];
        out += inside ? body : `[${body}]`;
        i = close;
        continue;
      }
    }
    out += ch;
  }
  return out;
}

/** \s and \S as std::regex has them (ASCII whitespace only), for the expressions without categories. */
function asciiSpaces(re: string): string {
  let out = '';
  let inside = false;
  for (let i = 0; i < re.length; i++) {
    const ch = re[i];
    if (ch === '\\' && i + 1 < re.length) {
      const next = re[i + 1];
      if (next === 's') out += inside ? '\\t-\\r ' : '[\\t-\\r ]';
      else if (next === 'S' && !inside) out += '[^\\t-\\r ]';
      else out += ch + next;
      i++;
      continue;
    }
    if (ch === '[' && !inside) inside = true;
    else if (ch === ']' && inside) inside = false;
    out += ch;
  }
  return out;
}

const compiled = new Map<string, { re: RegExp; collapsed: boolean }>();

function compile(source: string): { re: RegExp; collapsed: boolean } {
  let c = compiled.get(source);
  if (!c) {
    const collapsed = usesCategories(source);
    c = collapsed ? { re: new RegExp(collapseRegex(source), 'g'), collapsed }
      : { re: new RegExp(asciiSpaces(source), 'gu'), collapsed };
    compiled.set(source, c);
  }
  return c;
}

interface TextViews {
  text: string;
  cps: Uint32Array;
  collapsed?: string;
  wide?: { text: string; toCp?: Int32Array; toUnit?: Int32Array };
}

/** The text as std::wregex sees it: code points, non-ASCII whitespace as \v (its \s knows ASCII only). */
function wideView(v: TextViews): NonNullable<TextViews['wide']> {
  if (v.wide) return v.wide;
  const { cps } = v;
  let spaces = false;
  for (let i = 0; i < cps.length && !spaces; i++) spaces = cps[i] > 0x7f && (cpFlags(cps[i]) & F_WHITESPACE) !== 0;
  const text = spaces ? fromCodePoints(cps.map((c) => (c > 0x7f && cpFlags(c) & F_WHITESPACE ? 0x0b : c))) : v.text;
  if (text.length === cps.length) return (v.wide = { text });
  const toCp = new Int32Array(text.length + 1);
  const toUnit = new Int32Array(cps.length + 1);
  let u = 0;
  for (let i = 0; i < cps.length; i++) { toUnit[i] = u; toCp[u] = i; u += cps[i] > 0xffff ? 2 : 1; }
  toUnit[cps.length] = u;
  toCp[u] = cps.length;
  return (v.wide = { text, toCp, toUnit });
}

function collapsedView(v: TextViews): string {
  if (v.collapsed === undefined) {
    let ascii = v.text.length === v.cps.length;
    for (let i = 0; i < v.cps.length && ascii; i++) ascii = v.cps[i] < 0x80;
    v.collapsed = ascii ? v.text : collapse(v.cps);
  }
  return v.collapsed;
}

function splitRegex(pieces: Pieces, source: string, views: TextViews): Pieces {
  const { re, collapsed } = compile(source);
  let text: string;
  let toCp: Int32Array | undefined, toUnit: Int32Array | undefined;
  if (collapsed) {
    text = collapsedView(views);  // one character per code point
  } else {
    ({ text, toCp, toUnit } = wideView(views));
  }
  const out: Pieces = [];
  let start = 0;
  for (const len of pieces) {
    const end = start + len;
    const base = toUnit ? toUnit[start] : start;
    const sub = text.slice(base, toUnit ? toUnit[end] : end);
    re.lastIndex = 0;
    let prev = start;
    for (let m = re.exec(sub); m; m = re.exec(sub)) {
      if (m[0].length === 0) { re.lastIndex++; continue; }
      const s = toCp ? toCp[base + m.index] : start + m.index;
      const e = toCp ? toCp[base + m.index + m[0].length] : start + m.index + m[0].length;
      if (s > prev) out.push(s - prev);
      out.push(e - s);
      prev = e;
    }
    if (prev < end) out.push(end - prev);
    start = end;
  }
  return out;
}

/** Splits text (well-formed: no lone surrogates) into the words BPE merges within. */
export function pretokenize(text: string, type: PreType): string[] {
  const cps = codePoints(text);
  let pieces: Pieces = cps.length > 0 ? [cps.length] : [];
  const views: TextViews = { text, cps };
  for (const step of type.steps) {
    if (step === 'gpt2') pieces = scanGpt2(cps, pieces);
    else if (step === 'llama3') pieces = scanLlama3(cps, pieces, 3, false);
    else if (step === 'qwen2') pieces = scanLlama3(cps, pieces, 1, false);
    else if (step === 'qwen35') pieces = scanLlama3(cps, pieces, 1, true);
    else if (step === 'newlines') pieces = scanNewlines(cps, pieces);
    else pieces = splitRegex(pieces, step.re, views);
  }
  const units = cps.length === text.length ? undefined : unitOffsets(text, cps.length);
  const words: string[] = new Array(pieces.length);
  let at = 0;
  for (let i = 0; i < pieces.length; i++) {
    const end = at + pieces[i];
    words[i] = units ? text.slice(units[at], units[end]) : text.slice(at, end);
    at = end;
  }
  return words;
}
