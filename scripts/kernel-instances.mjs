// The kernel instances of a shader library, one per host name, for compiling one kernel at a time
// (native/metal/shader_library.mm): every MTO_KERNEL_INSTANCE(name, function, template arguments)
// the library's instance macros expand to (shaders/kernel_abi.h), with its name joined into one
// string literal. The host compiles the library with MTO_ONE_KERNEL defined, which makes those
// macros expand to nothing, and appends the one MTO_KERNEL_INSTANCE_ONE line it needs: Metal
// then generates code for one kernel, not for every instance (attention.metal has 81), as MLX
// compiles each kernel on first use.
//
// A small expander of the function-like `#define`s the instance lists are written with (parameter
// substitution, `#` stringizing, adjacent string literals joined), not a C preprocessor: `#if`
// blocks are not evaluated, so a library lists every instance it could define, and the host only
// asks for kernels its plans chose. test/kernel-instances.test.ts checks the lists against
// clang's own preprocessor at each library's MSL version.

const stripComments = (text) =>
  text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/\/\/[^\n]*/g, '');

/** The function-like macros `text` defines: name -> { params, body }. */
function functionMacros(text) {
  const macros = new Map();
  const joined = text.replace(/\\\n/g, ' ');
  for (const m of joined.matchAll(/^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)(.*)$/gm)) {
    macros.set(m[1], { params: m[2].split(',').map((p) => p.trim()).filter(Boolean), body: m[3].trim() });
  }
  return macros;
}

/** The arguments of the invocation whose '(' is at `open`: { args, end } (end: after ')'). */
function invocationArgs(text, open) {
  const args = [];
  let depth = 0;
  let cur = '';
  for (let i = open; i < text.length; i += 1) {
    const c = text[i];
    if (c === '"') {
      const close = text.indexOf('"', i + 1);
      cur += text.slice(i, close + 1);
      i = close;
      continue;
    }
    if (c === '(') {
      depth += 1;
      if (depth === 1) continue;
    } else if (c === ')') {
      depth -= 1;
      if (depth === 0) {
        args.push(cur.trim());
        return { args, end: i + 1 };
      }
    } else if (c === ',' && depth === 1) {
      args.push(cur.trim());
      cur = '';
      continue;
    }
    cur += c;
  }
  throw new Error(`unbalanced parentheses after: ${text.slice(open - 40, open + 40)}`);
}

/** `body` with each parameter replaced by its argument (`#param`: the argument as a literal). */
function substitute(body, params, args) {
  const value = new Map(params.map((p, i) => [p, args[i] ?? '']));
  return body.replace(/(#\s*)?\b([A-Za-z_]\w*)\b/g, (all, hash, id) => {
    if (!value.has(id)) return all;
    return hash ? JSON.stringify(value.get(id)) : value.get(id);
  });
}

/** One instance from MTO_KERNEL_INSTANCE's arguments. */
function instanceOf(args) {
  const [nameText, fn, ...templateArgs] = args;
  const pieces = [...nameText.matchAll(/"([^"]*)"/g)].map((m) => m[1]);
  if (pieces.length === 0 || nameText.replace(/"[^"]*"/g, '').trim() !== '') {
    throw new Error(`MTO_KERNEL_INSTANCE's name is not string literals: ${nameText}`);
  }
  const name = pieces.join('');
  return { name, line: `MTO_KERNEL_INSTANCE_ONE("${name}", ${[fn, ...templateArgs].join(', ')})` };
}

/** Expands the invocations in `text` of MTO_KERNEL_INSTANCE and of `macros`, into `out`. */
function expand(text, macros, out, depth = 0) {
  if (depth > 16) throw new Error('instance macros nest too deep');
  const re = /\b([A-Za-z_]\w*)\s*\(/g;
  let m;
  while ((m = re.exec(text))) {
    const id = m[1];
    if (id !== 'MTO_KERNEL_INSTANCE' && !macros.has(id)) continue;
    const { args, end } = invocationArgs(text, m.index + m[0].length - 1);
    if (id === 'MTO_KERNEL_INSTANCE') {
      out.push(instanceOf(args));
    } else {
      const { params, body } = macros.get(id);
      expand(substitute(body, params, args), macros, out, depth + 1);
    }
    re.lastIndex = end;
  }
}

/** The instances of one library: `text` is its .metal file followed by the shaders/ headers it
 * includes (their macros), as the library is compiled. [{ name, line }], in source order. */
export function kernelInstances(text) {
  const code = stripComments(text);
  const all = functionMacros(code);
  // Only macros whose expansion reaches MTO_KERNEL_INSTANCE: the instance lists, not helpers
  // such as MTO_U64 that kernels use in their bodies.
  const reaches = new Map();
  const leadsToInstance = (name, seen = new Set()) => {
    if (reaches.has(name)) return reaches.get(name);
    if (seen.has(name)) return false;
    seen.add(name);
    const { body } = all.get(name);
    const r = /\bMTO_KERNEL_INSTANCE\s*\(/.test(body) ||
      [...body.matchAll(/\b(\w+)\s*\(/g)].some(([, id]) => all.has(id) && leadsToInstance(id, seen));
    reaches.set(name, r);
    return r;
  };
  const macros = new Map([...all].filter(([name]) => !name.startsWith('MTO_KERNEL_INSTANCE') && leadsToInstance(name)));
  // The invocations outside #define lines (a define's body is expanded only where it is used).
  const body = code.replace(/\\\n/g, ' ').split('\n').filter((l) => !/^\s*#/.test(l)).join('\n');
  const out = [];
  expand(body, macros, out);
  const seen = new Set();
  for (const { name } of out) {
    if (seen.has(name)) throw new Error(`kernel ${name} is instantiated twice`);
    seen.add(name);
  }
  return out;
}
