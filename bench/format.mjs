// Renders the bench's JSON document as a text table (terminal) or a Markdown table (PERFORMANCE.md).

const fmtMs = (ms) => (ms === null || ms === undefined ? '-' : ms < 1 ? `${(ms * 1e3).toPrecision(3)} us` : ms < 100 ? `${ms.toPrecision(3)} ms` : `${Math.round(ms)} ms`);
const pct = (x) => (x === null || x === undefined ? '-' : `${Math.round(x * 100)}%`);
const times = (x) => (x === null || x === undefined ? '-' : `${x.toFixed(2)}x`);
const num = (x) => (x === null || x === undefined ? '-' : x >= 100 ? String(Math.round(x)) : x.toPrecision(3));

const SHORT = {
  'fraction of FMA peak': 'FMA',
  'fraction of read bandwidth (weight bytes)': 'BW',
  'fraction of read bandwidth (K/V bytes)': 'BW',
  'median call-to-resolved-Promise time (us)': 'latency',
};
const shortName = (what) => SHORT[what] ?? (what.startsWith('speed vs') ? 'vs ORT' : what.startsWith('speedup of') ? 'scaling' : what);

function targetsCell(targets) {
  if (!targets.length) return '-';
  const missed = targets.filter((t) => t.met === false);
  const unknown = targets.filter((t) => t.met === null);
  const parts = [];
  if (missed.length) parts.push(`missed ${missed.map((t) => `${shortName(t.what)} ${Number(t.value.toPrecision(3))} (${t.goal})`).join(', ')}`);
  if (targets.length - missed.length - unknown.length > 0) parts.push(`met ${targets.filter((t) => t.met).map((t) => shortName(t.what)).join(', ')}`);
  if (unknown.length) parts.push(`n/a ${unknown.map((t) => shortName(t.what)).join(', ')}`);
  return parts.join('; ');
}

function checkCell(check) {
  if (!check) return '-';
  const detail = check.maxAbsDiff !== undefined ? ` (max diff ${check.maxAbsDiff.toExponential(1)})`
    : check.oursVsPeerRelRms !== undefined && check.peerHasOurWeights ? ` (vs ORT ${check.oursVsPeerRelRms.toExponential(1)})`
      : check.oursRelRms !== undefined ? ` (err ${check.oursRelRms.toExponential(1)})`
        : check.relRms !== undefined ? ` (err ${check.relRms.toExponential(1)})` : '';
  return `${check.ok ? 'ok' : 'FAIL'}${detail}`;
}

const HEAD = ['case', 'ours', 'ORT', 'ORT/ours', 'ORT lvl4 (ratio)', 'OpenBLAS (ratio)', 'ggml (ratio)', 'GFLOP/s', 'GB/s', 'of limit', '1->N threads', 'check', 'targets'];
const LEFT = new Set([0, 11, 12]);

/** "time (ratio)" of a peer beside the main one, '-' where it did not run, 'error' where it failed. */
const peerCell = (p, ratio) => (!p ? '-' : p.error ? 'error' : `${fmtMs(p.medianMs)} (${times(ratio)})`);

/** ggml's decode is compared with ours on one copy of the data (both from the caches): shown. */
function ggmlCell(c) {
  const g = c.morePeers?.ggml;
  if (!g || g.error || g.ratioTo !== 'oursFromCache') return peerCell(g, g?.ratio);
  return `${fmtMs(g.medianMs)} vs ${fmtMs(c.oursFromCache.medianMs)} (${times(g.ratio)})`;
}

/** ORT at accuracy_level 4, against our int8 activations where they ran (else against ours). */
function int8Cell(c) {
  const p = c.peerInt8Activations;
  if (!c.oursInt8Activations) return peerCell(p, c.ratioInt8Activations);
  if (!p || p.error) return `${peerCell(p)}; ours int8 ${fmtMs(c.oursInt8Activations.medianMs)}`;
  return `${fmtMs(p.medianMs)} vs ours int8 ${fmtMs(c.oursInt8Activations.medianMs)} (${times(c.ratioInt8ToInt8)})`;
}

function rows(doc) {
  return doc.cases.map((c) => [
    c.id,
    fmtMs(c.ours.medianMs),
    c.peer ? (c.peer.error ? 'error' : fmtMs(c.peer.medianMs)) : '-',
    times(c.ratio),
    int8Cell(c),
    peerCell(c.morePeers?.openblas, c.morePeers?.openblas?.ratio),
    ggmlCell(c),
    num(c.ours.gflops),
    num(c.ours.gbps),
    c.fractionOfLimit === null ? '-' : `${pct(c.fractionOfLimit)} ${c.limit === 'fma' ? 'FMA' : 'BW'}` +
      (c.limit === 'bandwidth' && c.kernelFractionOfLimit ? ` (kernel ${pct(c.kernelFractionOfLimit)})` : ''),
    c.scaling ? times(c.scaling.speedup) : '-',
    checkCell(c.check),
    targetsCell(c.targets),
  ]);
}

function machineLines(doc) {
  const m = doc.machine;
  const p = m.peaks;
  const peer = doc.peer.available
    ? `onnxruntime-node ${doc.peer.version}, CPU, intra-op threads ${doc.peer.intraOpThreads}, MatMulNBits accuracy_level ${doc.peer.matMulNBitsAccuracyLevel}`
    : `missing (${doc.peer.reason})`;
  return [
    `${m.cpu}${m.cpuId ? ` (family ${m.cpuId.family} model ${m.cpuId.model})` : ''}, ${m.cores} cores, ${m.os}, Node ${m.node}; load average ${m.loadAverage1m} at start, ${m.loadAverage1mAtEnd ?? '?'} at end`,
    `measured: FMA peak ${p.fmaGflops} GFLOP/s with ${p.threads} threads (${p.fmaIsa}; one thread ${p.oneThread.fmaGflops}), ` +
      `read bandwidth ${p.readGBps} GB/s (one thread ${p.oneThread.readGBps})`,
    `ours: ${doc.threads} threads${p.kernels ? `, ${p.kernels} kernels` : ''}${m.cpuIsaCap ? ` (METAL_TENSOROPS_CPU_ISA=${m.cpuIsaCap})` : ''}; peer: ${peer}`,
    ...moreLines(doc),
    `${doc.date}, mode ${doc.mode}${doc.source ? `, commit ${doc.source.commit.slice(0, 7)}${doc.source.modified ? ' with local changes' : ''}` : ''}`,
  ];
}

function moreLines(doc) {
  const b = doc.morePeers?.openblas;
  const g = doc.morePeers?.ggml;
  const lines = [];
  if (b) {
    lines.push(b.available
      ? `OpenBLAS ${b.version} (float32 linear), ${b.core} kernels${b.coretype ? ` (OPENBLAS_CORETYPE=${b.coretype})` : ''}, ${b.threads} threads`
      : `OpenBLAS: missing (${b.reason})`);
  }
  if (g?.available) lines.push(`ggml ${g.commit.slice(0, 12)}, CPU backend, ${g.threads} threads, timed by ${g.tool}`);
  return lines;
}

function summaryLine(doc) {
  const s = doc.summary;
  return `targets: ${s.targetsMet} met, ${s.targetsMissed} missed, ${s.targetsUnknown} not measurable; checks: ${s.checksFailed === 0 ? 'all ok' : `${s.checksFailed} FAILED`}`;
}

const peerOps = (doc) => [...new Set(doc.cases.flatMap((c) => [
  c.peer?.op, c.peerInt8Activations?.op,
  ...Object.entries(c.morePeers ?? {}).map(([name, p]) => p.op && `${name === 'openblas' ? 'OpenBLAS' : name}: ${p.op}`),
]).filter(Boolean))];

const LEGEND = [
  "ORT/ours: onnxruntime's median time over ours (above 1: ours is faster); for MatMulNBits at its default",
  'accuracy_level 0, which the targets use. ORT lvl4: the same op at accuracy_level 4 (int8 activations).',
  'of limit: our GFLOP/s over the measured FMA peak (prefill), or our GB/s of weight (K/V) bytes over the',
  'measured read bandwidth (decode); "kernel": the same for our median time in the kernel alone, without the trips',
  'between the JS thread and the pool threads. 1->N threads: our 1-thread time over our N-thread time.',
  "OpenBLAS: its time on the float32 cases (cblas_sgemv for decode, over as many weight copies as ours; cblas_sgemm for prefill) and its median over ours.",
  "ggml (where run): its mean time from test-backend-ops on the same shape (weights: f32, f16, mxfp4, q8_0 for mxint8, q4_1 for affine4;",
  'K/V: f32, q8_0 for mxfp8) and its time over ours. It repeats each op on the same tensors, so its decode reads from the caches where',
  'they fit: a decode cell compares it with ours timed on one copy of the data too ("ggml vs ours (ratio)"; oursFromCache in the JSON).',
];

/** The decode step's lines (decode-step.mjs), or none when it did not run. */
export function decodeStepLines(doc) {
  const d = doc.decodeStep;
  if (!d) return [];
  const s = d.shape;
  const what = {
    layer: 'whole layer on the device (20 ops)',
    queued: 'device ops, queued (one read a token)',
    awaited: 'device ops, awaited one by one (0.1)',
  };
  return [
    `decode step: ${s.layers} layers of width ${s.d}, GQA ${s.Hq}/${s.Hkv} heads of ${s.D}, MLP ${s.ff}, ${s.weights} weights, ` +
      `${s.kvCache} KV cache of ${s.context}; JS cost of queueing an op: ${d.queueCallUs.median} us (median)`,
    ...(d.queueCost
      ? [`  JS cost of queueing a ${d.queueCost.op} (${d.queueCost.threads} thread): ${d.queueCost.medianUs} us median, ${d.queueCost.meanUs} us mean`]
      : []),
    ...Object.entries(d.variants).map(([name, v]) =>
      `  ${(what[name] ?? name).padEnd(40)} ${String(v.tokensPerSecond).padStart(7)} tokens/s  ${String(v.stepMs).padStart(8)} ms a token, ${v.ops} ops` +
      (v.kernelSumMs !== null ? `  kernels ${v.kernelSumMs} ms (x${v.overKernels})  ${v.perOpOverheadUs} us an op beyond its kernel` : '')),
  ];
}

export function renderText(doc) {
  const body = rows(doc);
  const widths = HEAD.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (r) => r.map((cell, i) => (LEFT.has(i) ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ').trimEnd();
  const ops = peerOps(doc);
  return [
    ...machineLines(doc),
    '',
    line(HEAD),
    line(widths.map((w) => '-'.repeat(w))),
    ...body.map(line),
    '',
    ...LEGEND,
    'peer ops:',
    ...ops.map((o) => `  ${o}`),
    ...(doc.decodeStep ? ['', ...decodeStepLines(doc)] : []),
    summaryLine(doc),
  ].join('\n');
}

export function renderMarkdown(doc) {
  const esc = (s) => s.replace(/\|/g, '\\|');
  const ops = peerOps(doc);
  return [
    ...machineLines(doc).map((l) => `${l}  `),
    '',
    `| ${HEAD.join(' | ')} |`,
    `|${HEAD.map((_, i) => (LEFT.has(i) ? '---' : '---:')).join('|')}|`,
    ...rows(doc).map((r) => `| ${r.map(esc).join(' | ')} |`),
    '',
    LEGEND.join(' '),
    '',
    'Peer ops: ' + ops.map((o) => `${o}`).join('; ') + '.',
    '',
    summaryLine(doc) + '.',
  ].join('\n');
}

// PERFORMANCE.md holds the Markdown table between these two lines (bench/table.mjs --update-performance).
export const TABLE_BEGIN = '<!-- bench-table:begin (generated by node bench/table.mjs --update-performance) -->';
export const TABLE_END = '<!-- bench-table:end -->';

/** `text` with the lines between its table markers replaced by `table`. */
export function replaceTable(text, table) {
  const b = text.indexOf(TABLE_BEGIN);
  const e = text.indexOf(TABLE_END);
  if (b < 0 || e < b) throw new Error(`no ${TABLE_BEGIN} ... ${TABLE_END} block`);
  return `${text.slice(0, b + TABLE_BEGIN.length)}\n${table}\n${text.slice(e)}`;
}
