// Turns one shaders/*.metal file into a C++ translation unit the harness can compile and run.
//
// The .metal source is kept as it is except for three line-preserving rewrites, so compiler
// messages and the barrier/SIMD-group call sites the runtime reports point at the real file:
//   1. A planted fault (optional): one exact text replacement, which must match exactly once.
//   2. Function-scope `threadgroup T name[A][B];` declarations (one per line, the only form the
//      kernels may use) become references to storage the runtime gives each threadgroup (or
//      pointers to its first row: rowPointers); plain C++ would make them per-thread locals (and
//      clang rejects address-space-qualified locals).
//   3. `1.5h` half literals become half(1.5).
//   4. `[[threadgroup(n)]]` parameter attributes become `[[mtoh_threadgroup(n)]]`: `threadgroup` is
//      the shim's address-space macro, which would expand inside the attribute.
// After the closing brace of every [[kernel]] function it appends (same line) a binder struct,
// mtoh_kernel_<name>, that calls the function with each argument bound from its MSL attribute:
// [[buffer(n)]], [[threadgroup(n)]] or a thread-position attribute, and exports the kernel's
// [[max_total_threads_per_threadgroup(n)]] (1024 without one). MTO_KERNEL_INSTANCE (via the
// shim's MTOH_KERNEL_INSTANCE) registers template instances with it; a non-template kernel is
// registered under its own name here.
//
// Usage: node gen_kernels.mjs <file.metal> <out.cc> [--variant NAME --find TEXT --replace TEXT]
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, relative, resolve } from 'node:path';

const POSITION_ATTRS = new Set([
  'thread_position_in_grid', 'thread_position_in_threadgroup', 'threadgroup_position_in_grid',
  'threads_per_threadgroup', 'threadgroups_per_grid', 'threads_per_grid',
  'thread_index_in_threadgroup', 'simdgroup_index_in_threadgroup', 'thread_index_in_simdgroup',
  'simdgroups_per_threadgroup', 'threads_per_simdgroup',
]);

/** The source with comments and string/char literals blanked (same length), for scanning. */
export function maskSource(src) {
  let out = '';
  let i = 0;
  while (i < src.length) {
    const two = src.slice(i, i + 2);
    if (two === '//') {
      const end = src.indexOf('\n', i);
      const stop = end < 0 ? src.length : end;
      out += ' '.repeat(stop - i);
      i = stop;
    } else if (two === '/*') {
      const end = src.indexOf('*/', i + 2);
      const stop = end < 0 ? src.length : end + 2;
      out += src.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
    } else if (src[i] === '"' || src[i] === "'") {
      const q = src[i];
      let j = i + 1;
      while (j < src.length && src[j] !== q) j += src[j] === '\\' ? 2 : 1;
      out += q + ' '.repeat(j - i - 1) + q;
      i = j + 1;
    } else {
      out += src[i++];
    }
  }
  return out;
}

/**
 * Rewrites 2 and 3 (line by line; never changes the number of lines). With `rowPointers` (for a
 * build with -fsanitize=array-bounds, which would trap on an index past A of a T[A][B]) a
 * threadgroup array becomes a pointer to its first row, T (*)[B]: an index past A is left to the
 * guard region, which reports it as out_of_bounds, as for device memory; sizeof(name) is then a
 * pointer's, so the reference (the default) is kept where nothing traps (users' kernels).
 */
export function rewriteLines(src, { rowPointers = false } = {}) {
  const masked = maskSource(src).split('\n');
  return src.split('\n').map((line, n) => {
    const code = masked[n];
    const decl = /^(\s+)threadgroup\s+([A-Za-z_][\w:<>, ]*?)\s+([A-Za-z_]\w*)\s*((?:\[[^\]]+\])+)\s*;/.exec(code);
    if (decl) {
      const [, indent, type, name, dims] = decl;
      const t = `${type}${dims}`;
      const inner = dims.slice(dims.indexOf(']') + 1);
      const declared = rowPointers ? `(*${name})${inner}` : `(&${name})${dims}`;
      const cast = rowPointers ? `(threadgroup ${type} (*)${inner})` : `*(threadgroup ${type} (*)${dims})`;
      return `${indent}static const char mtoh_key_${name} = 0; ` +
        `threadgroup ${type} ${declared} = ${cast}::mtoh::threadgroup_array(` +
        `&mtoh_key_${name}, "${name}", sizeof(${t}), alignof(${t}));` + line.slice(decl[0].length);
    }
    if (/^\s+threadgroup\s/.test(code) && /;\s*$/.test(code) && !/[*&(]/.test(code)) {
      throw new Error(`line ${n + 1}: function-scope threadgroup declarations must be one array per line: ${line.trim()}`);
    }
    // Half literals, outside comments and strings only.
    return line.replace(/(?<![\w.])((?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)[hH]\b/g, (m, num, offset) =>
      code.slice(offset, offset + m.length) === m ? `half(${num})` : m);
  }).join('\n');
}

/** Index of the bracket closing the one at `open` in masked text. */
function matching(masked, open) {
  const pairs = { '(': ')', '{': '}', '[': ']' };
  const close = pairs[masked[open]];
  let depth = 0;
  for (let i = open; i < masked.length; i++) {
    if (masked[i] === masked[open]) depth++;
    else if (masked[i] === close && --depth === 0) return i;
  }
  throw new Error(`unbalanced ${masked[open]} at offset ${open}`);
}

/** Top-level comma split of a parameter list. */
function splitParams(text) {
  const out = [];
  let depth = 0, start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if ('([<{'.includes(c)) depth++;
    else if (')]>}'.includes(c)) depth--;
    else if (c === ',' && depth === 0) {
      out.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (text.slice(start).trim()) out.push(text.slice(start));
  return out;
}

/** The [[kernel]] functions of a source: name, parameters' bindings, body end, templated or not. */
export function findKernels(src) {
  const masked = maskSource(src);
  const kernels = [];
  const re = /(?:\[\[\s*kernel\s*\]\]|\bkernel\b)\s*void\s+(\w+)\s*\(/g;
  for (let m; (m = re.exec(masked));) {
    const name = m[1];
    const open = m.index + m[0].length - 1;
    const close = matching(masked, open);
    const bodyOpen = masked.indexOf('{', close);
    if (bodyOpen < 0 || masked.slice(close + 1, bodyOpen).includes(';')) continue;  // a declaration
    const bodyClose = matching(masked, bodyOpen);
    const before = masked.slice(Math.max(masked.lastIndexOf(';', m.index), masked.lastIndexOf('}', m.index)) + 1, m.index);
    const bindings = splitParams(src.slice(open + 1, close)).map((p) => {
      const attr = /\[\[\s*(\w+)\s*(?:\(([^)]*)\))?\s*\]\]/.exec(p);
      if (!attr) throw new Error(`kernel ${name}: parameter without an attribute: ${p.trim()}`);
      const [, kind, arg] = attr;
      if (kind === 'buffer') return { call: `a.buffer(${arg})`, buffer: arg };
      if (kind === 'mtoh_threadgroup') return { call: `a.threadgroup_memory(${arg})`, threadgroup: arg };
      if (POSITION_ATTRS.has(kind)) return { call: `a.attr(::mtoh::Attr::${kind})` };
      throw new Error(`kernel ${name}: attribute [[${kind}]] is not supported by the harness`);
    });
    // [[max_total_threads_per_threadgroup(n)]] before [[kernel]]: Metal refuses a dispatch with
    // more threads per threadgroup, so the harness does too (the binder exports n).
    const limit = /\[\[\s*max_total_threads_per_threadgroup\s*\(/.exec(before);
    let maxThreads = '1024';
    if (limit) {
      const at = m.index - before.length + limit.index + limit[0].length - 1;
      maxThreads = src.slice(at + 1, matching(masked, at));
    }
    kernels.push({ name, bodyClose, templated: /\btemplate\s*</.test(before), bindings, maxThreads });
    re.lastIndex = bodyClose;
  }
  return kernels;
}

function binder(k) {
  const list = (key) => k.bindings.filter((b) => b[key] !== undefined).map((b) => b[key]).join(', ');
  const calls = k.bindings.map((b) => b.call).join(', ');
  let text = ` template <class MtohFn, MtohFn* MtohF> struct mtoh_kernel_${k.name} {` +
    ` static void entry(const ::mtoh::ThreadArgs& a) { MtohF(${calls}); }` +
    ` static std::vector<int> buffers() { return {${list('buffer')}}; }` +
    ` static std::vector<int> threadgroup_buffers() { return {${list('threadgroup')}}; }` +
    ` static unsigned max_total_threads() { return (${k.maxThreads}); } };`;
  if (!k.templated) {
    text += ` static ::mtoh::KernelRegistrar<mtoh_kernel_${k.name}<decltype(${k.name}), &${k.name}>>` +
      ` mtoh_registrar_${k.name}(MTOH_LIBRARY, MTOH_VARIANT, "${k.name}");`;
  }
  return text;
}

/** The whole generated translation unit. */
export function generate(src, { file, library, variant, find, replace, rowPointers = false }) {
  if (find !== undefined) {
    const count = src.split(find).length - 1;
    if (count !== 1) throw new Error(`planted fault '${variant}': the text to replace occurs ${count} times in ${file} (must be once)`);
    src = src.replace(find, () => replace);
  }
  src = rewriteLines(src, { rowPointers }).replace(/\[\[(\s*)threadgroup(\s*\()/g, '[[$1mtoh_threadgroup$2');
  const kernels = findKernels(src);
  if (kernels.length === 0) throw new Error(`${file}: no [[kernel]] functions found`);
  for (const k of [...kernels].reverse()) src = src.slice(0, k.bodyClose + 1) + binder(k) + src.slice(k.bodyClose + 1);
  const ns = `mtoh_lib_${library}_${variant || 'base'}`.replace(/\W/g, '_');
  return [
    `// Generated by emulator/gen/gen_kernels.mjs from ${file}${variant ? ` (planted fault '${variant}')` : ''}. Do not edit.`,
    '#include "launch.h"',
    '#include <metal_stdlib>',
    `#define MTOH_LIBRARY "${library}"`,
    `#define MTOH_VARIANT "${variant}"`,
    // A namespace per library and variant: fault variants redefine the same kernels.
    `namespace ${ns} {`,
    `#line 1 "${file}"`,
    src,
    '}',
    '',
  ].join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  const [input, output, ...rest] = process.argv.slice(2);
  const opt = {};
  for (let i = 0; i < rest.length; i += 2) opt[rest[i].replace(/^--/, '')] = rest[i + 1];
  const file = relative(process.cwd(), resolve(input));
  const text = generate(readFileSync(input, 'utf8'), {
    file, library: basename(input).replace(/\.metal$/, ''), variant: opt.variant ?? '',
    find: opt.find, replace: opt.replace,
  });
  writeFileSync(output, text);
}
