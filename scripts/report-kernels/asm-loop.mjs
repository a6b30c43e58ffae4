// Finds a marked loop in AArch64 assembly (clang -S output) and counts what its body executes.
//
// The loop is the smallest natural loop (the blocks of a back edge's cycle, from the control flow
// graph of the basic blocks) that contains the marker comment MTO_COST_LOOP leaves
// (shaders/kernel_abi.h: "// mto-cost-loop TAG ELEMENTS BYTES"). Every instruction of its blocks
// is counted once: loops nested inside it count as if they ran one time, the path the report's
// reference cases take (one row of x; attention_decode's row loop for one query row), and
// branches not taken count too. Calls, loads, stores and stack accesses (spills) are
// counted apart, so a reader can see what a count is made of.

const BRANCH = /^(b(?:\.\w+)?|cbn?z|tbn?z)$/;

/** Lines of one function body: the instructions, labels and comments in order. */
function parse(text) {
  return text.split('\n').map((raw) => {
    const line = raw.replace(/\s+$/, '');
    const label = /^([.$\w]+):/.exec(line);
    if (label) return { kind: 'label', name: label[1] };
    const t = line.trim();
    if (t === '') return { kind: 'blank' };
    if (t.startsWith('//')) return { kind: 'comment', text: t };
    if (t.startsWith('.')) return { kind: 'directive', text: t };
    const [op, ...rest] = t.split(/\s+/);
    return { kind: 'insn', op: op.toLowerCase(), args: rest.join(' ').split('//')[0].trim(), text: t };
  });
}

/** Bytes one load instruction reads, from its mnemonic and first register. */
function loadBytes(op, args) {
  const regs = args.split(',').map((r) => r.trim());
  const width = (r) => {
    const c = r.replace(/^\{/, '')[0];
    return { x: 8, w: 4, q: 16, d: 8, s: 4, h: 2, b: 1 }[c] ?? 0;
  };
  if (op === 'ldrb' || op === 'ldurb' || op === 'ldrsb' || op === 'ldursb') return 1;
  if (op === 'ldrh' || op === 'ldurh' || op === 'ldrsh' || op === 'ldursh') return 2;
  if (op === 'ldrsw' || op === 'ldursw') return 4;
  if (op === 'ldp' || op === 'ldnp' || op === 'ldpsw') return 2 * width(regs[0]);
  if (/^ld[1-4]/.test(op)) return 0;  // vector structure loads: not produced with vectorization off
  return width(regs[0]);
}

/** Basic blocks of the parsed lines: { first, last, succs } (line indices; successor block ids). */
function blocks(lines) {
  const out = [];
  let cur = null;
  const close = () => { if (cur) out.push(cur); cur = null; };
  lines.forEach((l, i) => {
    if (l.kind === 'label') {
      close();
      cur = { first: i, last: i, labels: [l.name], global: !l.name.startsWith('.') };
      return;
    }
    if (l.kind !== 'insn' && l.kind !== 'comment') return;
    if (!cur) cur = { first: i, last: i, labels: [], global: false };
    cur.last = i;
    if (l.kind === 'insn' && (BRANCH.test(l.op) || l.op === 'ret' || l.op === 'br')) close();
  });
  close();
  const byLabel = new Map();
  out.forEach((b, id) => b.labels.forEach((n) => byLabel.set(n, id)));
  out.forEach((b, id) => {
    const end = lines[b.last];
    b.succs = [];
    const op = end.kind === 'insn' ? end.op : '';
    if (BRANCH.test(op)) {
      const t = byLabel.get(end.args.split(',').pop().trim());
      if (t !== undefined) b.succs.push(t);
    }
    const falls = op !== 'b' && op !== 'ret' && op !== 'br';
    if (falls && id + 1 < out.length && !out[id + 1].global) b.succs.push(id + 1);
  });
  return out;
}

/**
 * Immediate dominators of the blocks (Cooper, Harvey and Kennedy's iterative algorithm over a
 * reverse postorder), each function's entry (a global label) a root; -1 for a root and for a
 * block no root reaches.
 */
function dominators(bs) {
  const preds = bs.map(() => []);
  bs.forEach((b, u) => b.succs.forEach((v) => preds[v].push(u)));
  const order = [];  // reverse postorder from every root
  const seen = new Uint8Array(bs.length);
  bs.forEach((b, root) => {
    if (!b.global || seen[root]) return;
    const post = [];
    const stack = [[root, 0]];
    seen[root] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1];
      const succs = bs[top[0]].succs;
      if (top[1] < succs.length) {
        const v = succs[top[1]++];
        if (!seen[v]) { seen[v] = 1; stack.push([v, 0]); }
      } else {
        post.push(stack.pop()[0]);
      }
    }
    order.push(...post.reverse());
  });
  const rank = new Int32Array(bs.length).fill(-1);
  order.forEach((b, i) => { rank[b] = i; });
  const idom = new Int32Array(bs.length).fill(-1);
  const isRoot = (b) => bs[b].global;
  order.forEach((b) => { if (isRoot(b)) idom[b] = b; });
  const intersect = (a, b) => {
    while (a !== b) {
      while (rank[a] > rank[b]) a = idom[a];
      while (rank[b] > rank[a]) b = idom[b];
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (const b of order) {
      if (isRoot(b)) continue;
      let d = -1;
      for (const p of preds[b]) if (idom[p] !== -1) d = d === -1 ? p : intersect(p, d);
      if (d !== idom[b]) { idom[b] = d; changed = true; }
    }
  }
  order.forEach((b) => { if (isRoot(b)) idom[b] = -1; });
  return { preds, idom };
}

/**
 * Natural loops: per back edge u -> h (an edge to a block h that dominates u, wherever the
 * compiler laid h out: a rotated loop is entered by a jump into its middle), the blocks that
 * reach u without passing through h, plus h; loops of one header are merged.
 */
function naturalLoops(bs) {
  const { preds, idom } = dominators(bs);
  const dominates = (h, u) => {
    for (let x = u; x !== -1; x = idom[x]) if (x === h) return true;
    return false;
  };
  const byHeader = new Map();
  bs.forEach((b, u) => b.succs.forEach((h) => {
    if (!dominates(h, u)) return;
    const body = byHeader.get(h) ?? new Set([h]);
    const stack = [u];
    while (stack.length) {
      const x = stack.pop();
      if (body.has(x)) continue;
      body.add(x);
      for (const p of preds[x]) stack.push(p);
    }
    byHeader.set(h, body);
  }));
  return [...byHeader.entries()].map(([header, body]) => ({ header, body }));
}

/**
 * Every marked loop of `asmText`: { fn (the function's symbol), tag, elements, bytes, insns,
 * perElement, loads, loadBytes, stores, stack, calls, branches, nested }.
 */
export function markedLoops(asmText) {
  const lines = parse(asmText);
  const bs = blocks(lines);
  const loops = naturalLoops(bs);
  const blockOf = (i) => bs.findIndex((b) => b.first <= i && i <= b.last);
  const found = new Map();
  lines.forEach((l, i) => {
    if (l.kind !== 'comment') return;
    const m = /mto-cost-loop\s+#?(-?\d+)\s+#?(\d+)\s+#?(\d+)/.exec(l.text);
    if (!m) return;
    const b = blockOf(i);
    const inside = loops.filter((lp) => lp.body.has(b)).sort((x, y) => x.body.size - y.body.size);
    if (inside.length === 0) throw new Error(`marker '${l.text}' is in no loop`);
    const loop = inside[0];
    if (found.has(loop.header)) {  // the loop was unrolled: several markers in one body
      found.get(loop.header).markers++;
      return;
    }
    // The function: the last global label (not .L...) before the loop.
    let fn = '';
    for (let j = bs[loop.header].first; j >= 0 && !fn; --j) if (lines[j].kind === 'label' && !lines[j].name.startsWith('.')) fn = lines[j].name;
    found.set(loop.header, { tag: Number(m[1]), elements: Number(m[2]), bytes: Number(m[3]), markers: 1, loop, fn });
  });
  return [...found.values()].map((f) => {
    const ids = [...f.loop.body].sort((a, b) => a - b);
    const body = ids.flatMap((id) => lines.slice(bs[id].first, bs[id].last + 1)).filter((l) => l.kind === 'insn');
    const loads = body.filter((l) => /^ld/.test(l.op));
    const stores = body.filter((l) => /^st/.test(l.op));
    const stack = [...loads, ...stores].filter((l) => /\[\s*(sp|x29)\b/.test(l.args));
    const nested = loops.filter((lp) => lp !== f.loop && [...lp.body].every((id) => f.loop.body.has(id))).length;
    const elements = f.elements * f.markers;
    return {
      fn: f.fn,
      tag: f.tag,
      elements,
      bytes: f.bytes * f.markers,
      insns: body.length,
      perElement: body.length / elements,
      loads: loads.length,
      loadBytes: loads.reduce((s, l) => s + loadBytes(l.op, l.args), 0),
      stores: stores.length,
      stack: stack.length,
      calls: body.filter((l) => l.op === 'bl' || l.op === 'blr').length,
      branches: body.filter((l) => BRANCH.test(l.op)).length,
      nested,
    };
  });
}

/**
 * The threadgroup memory a function declares: the sum of the "// mto-cost-tg BYTES" comments
 * (report-kernels.mjs puts one after each threadgroup array of the generated source) in the
 * functions whose symbol matches `fnPattern`, per function.
 */
export function threadgroupBytes(asmText, fnPattern) {
  const out = new Map();
  let fn = '';
  for (const l of parse(asmText)) {
    if (l.kind === 'label' && !l.name.startsWith('.')) fn = l.name;
    if (l.kind !== 'comment' || !fnPattern.test(fn)) continue;
    const m = /mto-cost-tg\s+#?(\d+)/.exec(l.text);
    if (m) out.set(fn, (out.get(fn) ?? 0) + Number(m[1]));
  }
  return [...out.values()];
}
