// The mutants of one shader source: mechanical, line-local edits of the kinds issue #29 names
// (arithmetic and comparison operator flips, += / -=, off-by-one bounds, dropped barriers,
// swapped min/max, constant 0/1 swaps, && / ||). Only code is mutated: comments, strings and
// preprocessor lines (macro bodies included) are left alone, since the kernels' macros only name
// template instances. Binary operators are recognised by the spaces around them (clang-format's
// style in shaders/), which tells `a < b` from `vec<T, 4>` and `a * b` from `float* p`.
//
// A mutant's id stays the same when unrelated lines move: file, a hash of the line's trimmed text,
// which of that line's identical copies it is, the column and the edit.
import { createHash } from 'node:crypto';
import { maskSource } from '../../../emulator/gen/gen_kernels.mjs';

/** [pattern on masked code, replacement, kind]: each match is one mutant. */
const RULES = [
  // Compound assignment first, so `+=` is not also read as ` + `.
  [/(?<=\s)\+=(?=\s)/g, '-=', 'compound'],
  [/(?<=\s)-=(?=\s)/g, '+=', 'compound'],
  [/(?<=\s)\*=(?=\s)/g, '/=', 'compound'],
  [/(?<=\s)\/=(?=\s)/g, '*=', 'compound'],
  [/(?<=\s)\+(?=\s)/g, '-', 'arithmetic'],
  [/(?<=\s)-(?=\s)/g, '+', 'arithmetic'],
  [/(?<=\s)\*(?=\s)/g, '/', 'arithmetic'],
  [/(?<=\s)\/(?=\s)/g, '*', 'arithmetic'],
  [/(?<=\s)%(?=\s)/g, '/', 'arithmetic'],
  [/(?<=\s)<(?=\s)/g, '<=', 'bound'],
  [/(?<=\s)<=(?=\s)/g, '<', 'bound'],
  [/(?<=\s)>(?=\s)/g, '>=', 'bound'],
  [/(?<=\s)>=(?=\s)/g, '>', 'bound'],
  [/(?<=\s)==(?=\s)/g, '!=', 'comparison'],
  [/(?<=\s)!=(?=\s)/g, '==', 'comparison'],
  [/(?<=\s)&&(?=\s)/g, '||', 'logical'],
  [/(?<=\s)\|\|(?=\s)/g, '&&', 'logical'],
  [/(?<=\s)<<(?=\s)/g, '>>', 'shift'],
  [/(?<=\s)>>(?=\s)/g, '<<', 'shift'],
  [/\b(?<![\w.])(fmin|fmax|min|max|simd_min|simd_max)(?=\s*\()/g, (m) => ({ fmin: 'fmax', fmax: 'fmin', min: 'max', max: 'min', simd_min: 'simd_max', simd_max: 'simd_min' })[m], 'minmax'],
  // Integer and float literals 0 and 1 (not digits of a larger literal).
  [/(?<![\w.])0(?:\.0*)?[fuU]?(?![\w.])/g, (m) => m.replace('0', '1'), 'constant'],
  [/(?<![\w.])1(?:\.0*)?[fuU]?(?![\w.])/g, (m) => m.replace('1', '0'), 'constant'],
  // A barrier statement dropped (with its namespace, where a header names it).
  [/(?:\bmetal::)?\b(?:threadgroup_barrier|simdgroup_barrier)\s*\([^;]*\)\s*;/g, ';', 'barrier'],
];

/** Lines that belong to a preprocessor directive (a #line and its backslash continuations). */
function directiveLines(lines) {
  const out = new Set();
  let continuing = false;
  lines.forEach((line, i) => {
    if (continuing || /^\s*#/.test(line)) {
      out.add(i);
      continuing = /\\\s*$/.test(line);
    }
  });
  return out;
}

const hash = (text) => createHash('sha1').update(text).digest('hex').slice(0, 10);

/**
 * The mutants of `text` (the file's own text): { id, file, line (1-based), column, kind, from, to,
 * original (the line), mutated (the line after the edit) }.
 */
export function enumerateMutants(file, text) {
  const lines = text.split('\n');
  const masked = maskSource(text).split('\n');
  const skip = directiveLines(masked);
  const seen = new Map();  // trimmed line text -> copies so far
  const out = [];
  lines.forEach((line, n) => {
    if (skip.has(n)) return;
    const code = masked[n];
    if (!code.trim()) return;
    const key = line.trim();
    const copy = seen.get(key) ?? 0;
    seen.set(key, copy + 1);
    for (const [pattern, replacement, kind] of RULES) {
      for (const m of code.matchAll(pattern)) {
        const to = typeof replacement === 'function' ? replacement(m[0]) : replacement;
        const mutated = line.slice(0, m.index) + to + line.slice(m.index + m[0].length);
        out.push({
          id: `${file}:${hash(key)}.${copy}:${m.index}:${kind}`,
          file, line: n + 1, column: m.index + 1, kind, from: m[0], to, original: line, mutated,
        });
      }
    }
  });
  return out;
}

/** `text` with mutant `m` applied (its line replaced). */
export function applyMutant(text, m) {
  const lines = text.split('\n');
  if (lines[m.line - 1] !== m.original) throw new Error(`mutant ${m.id}: line ${m.line} of ${m.file} changed`);
  lines[m.line - 1] = m.mutated;
  return lines.join('\n');
}
