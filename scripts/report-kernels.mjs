// Kernel cost report (issue #27): for each hot Metal kernel, the figures of its inner loop in an
// arm64 -O2 compile of the MSL harness build (the real shaders/*.metal as C++ against
// emulator/shim), and the threadgroups the dispatch plans launch for reference shapes on 8-, 38-
// and 80-core GPUs; beside them MLX's qmv_fast and sdpa_vector, measured the same way once by hand
// (report-kernels/mlx-reference.json says how). These are proxies: a CPU's instruction count for
// one lane's work, not a GPU measurement; nothing here ran on Metal.
//
//   npm run report:kernels              writes docs/kernel-costs.md and docs/kernel-costs.json
//   npm run report:kernels -- --check   exit 1 when the committed files differ from a fresh run,
//                                       2 when the toolchain is missing or not the one recorded
//
// Needs clang++-19 and Debian's arm64 cross headers (libc6-dev-arm64-cross,
// libstdc++-12-dev-arm64-cross), and a host C++ compiler for the plans.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { generate } from '../emulator/gen/gen_kernels.mjs';
import { flagsByStd, withMetalIncludes } from '../test/msl/build.mjs';
import { markedLoops, threadgroupBytes } from './report-kernels/asm-loop.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outMd = join(root, 'docs', 'kernel-costs.md');
const outJson = join(root, 'docs', 'kernel-costs.json');
const mlx = JSON.parse(readFileSync(join(root, 'scripts', 'report-kernels', 'mlx-reference.json'), 'utf8'));
const cxx = process.env.MSL_CXX || 'clang++-19';
const hostCxx = process.env.CXX || 'g++';

// GPU profiles: the core counts of a base, a Max and an Ultra chip (MLX's device classes 'g',
// 's', 'd', whose sdpa block counts mlx-reference.json lists).
export const profiles = [8, 38, 80];

// The flags of the harness build (test/msl/build.mjs) for arm64, with the loop vectorizers off (a
// GPU lane runs scalar code, and NEON would pack one lane's loop four wide, which no GPU does)
// and native float16 arithmetic (ARMv8.2 FP16, as Apple GPUs have: without it every half
// operation would cost conversions a GPU does not make). Loops of a constant trip count are
// unrolled whole (a raised unroll threshold, as GPU compilers do), so that the loop measured is
// straight-line code whose every instruction runs once per iteration. MTO_COST_LOOP becomes an
// assembly comment carrying its numbers (shaders/kernel_abi.h). The harness's array-bounds traps
// are left out: Metal compiles no such checks.
export const proxyFlags = [
  '--target=aarch64-linux-gnu', '-march=armv8.2-a+fp16',
  ...flagsByStd['metal3.1'].filter((f) => f !== '-pthread' && !f.startsWith('-fsanitize')),
  '-fno-vectorize', '-fno-slp-vectorize', '-mllvm', '-unroll-threshold=4000', '-mllvm', '-inline-threshold=4000', '-DMTOH_COST_PROXY',
  '-DMTO_COST_LOOP(tag,elements,bytes)=__asm__ __volatile__("// mto-cost-loop %0 %1 %2" :: "i"(tag), "i"(elements), "i"(bytes))',
];

/** `#define NAME <integer>` of a params header. */
function define(header, name) {
  const m = new RegExp(`#define ${name} (\\d+)`).exec(readFileSync(join(root, 'shaders', header), 'utf8'));
  if (!m) throw new Error(`${name} is not defined in shaders/${header}`);
  return Number(m[1]);
}

const formatId = { mxfp4: 'MTO_FORMAT_MXFP4', mxfp8: 'MTO_FORMAT_MXFP8_E4M3', affine4: 'MTO_FORMAT_AFFINE4' };
const cType = { f32: 'float', f16: 'half' };

/** The kernels measured: one instance each, the loop tagged `tag`, and its plan's shapes. */
function targets() {
  const out = [];
  for (const format of ['mxfp4', 'mxfp8', 'affine4']) {
    for (const x of ['f16', 'f32']) {
      out.push({
        id: `qlinear_decode_${format}_${x}`, fn: 'qlinear_decode', family: 'decode GEMV', file: 'shaders/qlinear.metal',
        drop: /^MTO_QLINEAR_FORMAT\(/, tag: 1,
        instance: `MTO_KERNEL_INSTANCE("qlinear_decode_${format}_${x}", qlinear_decode, ${cType[x]}, ${cType[x]}, ${formatId[format]})`,
        shapes: [['linear', format, x, 1, 4096, 4096], ['linear', format, x, 1, 14336, 4096]],
        rows: 1,  // the loop for one row of x (tag 1)
        mlx: `${format === 'affine4' ? 'affine_qmv_fast' : `fp_qmv_fast_${format}`}_${x}`,
      });
    }
  }
  // The decode key loop (shaders/attention_decode.h) tagged 64 * masked + 16 * KV + rows: one query row (no GQA,
  // MLX's sdpa_vector case) and four (GQA 4, the first reference shape), without a mask.
  for (const [kv, KV, arg] of [['dense', 0, 'ATTN_KV_DENSE'], ['mxfp8', 1, 'ATTN_KV_MXFP8_E4M3']]) {
    for (const rows of kv === 'dense' ? [1, 4] : [1]) {
      out.push({
        id: `attention_decode_f16_${kv}_d128${rows === 1 ? '' : `_r${rows}`}`, fn: 'attention_decode', family: 'attention decode',
        file: 'shaders/attention.metal', drop: /^MTO_ATTN_DTYPE\(/, tag: 16 * KV + rows,
        instance: `MTO_KERNEL_INSTANCE("attention_decode_f16_${kv}_d128", attention_decode, half, half, ${arg}, 128)`,
        shapes: [['attention', 'f16', kv, 1, 32, 8, 1, 4096, 128], ['attention', 'f16', kv, 1, 32, 32, 1, 1024, 128]],
        rows,
        mlx: 'sdpa_vector_f16_d128',
      });
    }
  }
  return out;
}

/** The arm64 assembly of one kernel instance of the harness build. */
function compileProxy(t, dir) {
  const text = withMetalIncludes(t.file).split('\n').filter((l) => !t.drop.test(l)).join('\n') + `\n${t.instance}\n`;
  const src = join(dir, `${t.id}.cc`);
  // After each threadgroup array the generator made (gen_kernels.mjs: a reference to runtime
  // storage), a comment with its size, so the report reads the kernel's threadgroup memory from
  // the compiler rather than from a formula of its own.
  const cc = generate(text, { file: t.file, library: t.id, variant: '' }).replace(
    /(::mtoh::threadgroup_array\(&mtoh_key_\w+, "\w+", sizeof\((.*?)\), alignof\(.*?\)\);)/g,
    (all, decl, type) => `${decl} __asm__ __volatile__("// mto-cost-tg %0" :: "i"(sizeof(${type})));`);
  writeFileSync(src, cc);
  const asm = join(dir, `${t.id}.s`);
  const r = spawnSync(cxx, [...proxyFlags, '-S', src, '-o', asm], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`compiling ${t.id} for arm64 failed:\n${r.stderr}`);
  return readFileSync(asm, 'utf8');
}

/** Dispatch geometry of every shape, from the dispatch plans (report-kernels/plans.cc). */
function plans(shapes, dir) {
  const exe = join(dir, 'plans');
  const sources = ['scripts/report-kernels/plans.cc', 'native/core/dispatch_plan.cc', 'native/core/plan/linear.cc',
    'native/core/plan/attention.cc', 'native/core/formats.cc',
    'native/core/dtype.cc', 'native/core/capabilities.cc', 'native/core/tiers.cc', 'native/core/pipeline_key.cc',
    'native/core/scale_plane.cc', 'native/core/tensor.cc'];
  // Sections the plans never reach (the formats' codecs and their host kernels) are dropped, so
  // the kernels they call need not be linked.
  const r = spawnSync(hostCxx, ['-std=c++17', '-O1', '-Inative', '-ffunction-sections', '-fdata-sections',
    '-Wl,--gc-sections', ...sources, '-o', exe], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`building the plans tool failed:\n${r.stderr}`);
  const args = shapes.flatMap((s, i) => [...(i ? ['--'] : []), ...s.map(String)]);
  return JSON.parse(execFileSync(exe, args, { encoding: 'utf8' }));
}

const round = (v, d = 2) => Math.round(v * 10 ** d) / 10 ** d;

/** A shape's dimensions, as MLX's parallelism is keyed (report-kernels/mlx-reference.json). */
function shapeKey(s) {
  const names = s[0] === 'linear' ? ['M', 'N', 'K'] : ['B', 'Hq', 'Hkv', 'Lq', 'Lk', 'D'];
  const dims = s.slice(s[0] === 'linear' ? 3 : 3);
  return names.map((n, i) => `${n}=${dims[i]}`).join(' ');
}

export function measure() {
  const dir = mkdtempSync(join(tmpdir(), 'mto-kernel-costs-'));
  try {
    const ts = targets();
    const shapes = [...new Map(ts.flatMap((t) => t.shapes).map((s) => [s.join(' '), s])).values()];
    // Every shape planned for every profile (the core count is the last argument).
    const runs = shapes.flatMap((sh) => profiles.map((c) => [...sh, c]));
    const planned = new Map(plans(runs, dir).map((p, i) => [runs[i].join(' '), p]));
    // A shape's passes, each with its threadgroups per profile (null where a profile does not run
    // that pass).
    const passesOf = (sh) => {
      const byProfile = profiles.map((c) => planned.get([...sh, c].join(' ')).passes);
      const most = byProfile.reduce((a, b) => (b.length > a.length ? b : a));
      return most.map((p, i) => ({
        library: p.library, kernel: p.kernel, threads: p.threads,
        threadgroups: Object.fromEntries(profiles.map((c, j) => [String(c), byProfile[j][i]?.kernel === p.kernel ? byProfile[j][i].threadgroups : null])),
      }));
    };
    const kernels = ts.map((t) => {
      // The library's own functions (the kernel, or a helper the compiler kept out of line), not
      // the harness binder that holds an inlined copy of the kernel.
      const own = /^_ZN\d+mtoh_lib_\w+_base\d+(?!\d|mtoh_kernel_)/;
      const asm = compileProxy(t, dir);
      const loops = markedLoops(asm).filter((l) => l.tag === t.tag && own.test(l.fn));
      if (loops.length !== 1) throw new Error(`${t.id}: ${loops.length} loops tagged ${t.tag} (want 1)`);
      const l = loops[0];
      const tg = threadgroupBytes(asm, new RegExp(`^_ZN\\d+mtoh_lib_\\w+_base\\d+${t.fn}I`));
      return {
        kernel: t.id, family: t.family, mlx: t.mlx,
        loop: { ...l, rows: t.rows, perElement: round(l.perElement), bytesPerElement: round(l.bytes / l.elements) },
        threadgroupBytes: tg.length ? tg[0] : 0,
        shapes: t.shapes.map((s) => ({ shape: shapeKey(s), passes: passesOf(s) })),
      };
    });
    const version = execFileSync(cxx, ['--version'], { encoding: 'utf8' }).split('\n')[0];
    return { compiler: version, flags: proxyFlags, profiles, kernels, mlx };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const dash = (v) => (v === null || v === undefined ? '–' : String(v));

export function markdown(r) {
  const lines = [
    '# Kernel costs (an arm64 proxy, not a GPU measurement)',
    '',
    'Generated by `npm run report:kernels` (scripts/report-kernels.mjs); do not edit. Issue #27\'s',
    'kernel cost report: what one lane of each hot kernel executes per iteration of its inner loop,',
    'and how many threadgroups the dispatch plans launch for reference shapes.',
    '',
    '**What these numbers are.** The real `shaders/*.metal`, as the MSL harness compiles them (C++',
    'against emulator/shim), compiled for AArch64 (ARMv8.2 with float16 arithmetic, as a GPU has) at',
    '-O2 with the loop vectorizers off (a GPU lane runs scalar code; NEON would pack one lane\'s loop',
    'four wide, which no GPU does), constant-trip loops unrolled and functions inlined as a GPU',
    'compiler does (raised thresholds), the harness\'s barriers and SIMD-group functions kept as one',
    'call each. The loop is the one the kernel marks with `MTO_COST_LOOP` (shaders/kernel_abi.h): the',
    'smallest natural loop of the control-flow graph around the marker, every instruction of its',
    'blocks counted once (code for rows a case does not take included). A CPU instruction is not a',
    'GPU instruction: Apple\'s compiler, registers (a GPU lane has far more than AArch64\'s 32, so the',
    'stack accesses below are CPU spills), memory instructions and',
    'scheduling differ, and a SIMD-group function here costs a call plus the harness\'s call-site',
    'arguments. The figures compare kernels compiled the same way, MLX\'s included; they say nothing',
    'about time. Nothing here ran on Metal.',
    '',
    `Compiler: \`${r.compiler}\`; flags: \`proxyFlags\` in scripts/report-kernels.mjs.`,
    '',
    '## Inner loops',
    '',
    'Per iteration of the marked loop, for one lane: instructions; the weight (or K and V) elements it',
    'handles; the rows of x (query rows) whose code the loop holds; instructions per element; load',
    'instructions and the bytes they read (decode tables included); stack accesses (spills: a CPU',
    'artifact at 32 registers); the bytes of device memory it reads per element (codes, scales, x or',
    'K/V, from the kernel\'s layout) and the threadgroup memory of a threadgroup.',
    '',
    '| kernel | insns | elements | rows | insns / element | loads (bytes) | stack | device bytes / element | threadgroup memory |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const row = (name, l, tg) => `| ${name} | ${l.insns} | ${l.elements} | ${l.rows} | **${l.perElement}** | ${l.loads} (${l.loadBytes}) | ${l.stack} | ${l.bytesPerElement} | ${tg} B |`;
  for (const k of r.kernels) {
    lines.push(row(`\`${k.kernel}\``, k.loop, k.threadgroupBytes));
    const m = r.mlx.kernels[k.mlx];
    lines.push(row(`MLX \`${k.mlx}\``, m.loop, m.threadgroupBytes));
  }
  lines.push('', '## Parallelism', '',
    'Threadgroups per pass for reference shapes, and per GPU core on GPUs of ' + profiles.join(', ') + ' cores. Ours',
    'from the dispatch plans (native/core/plan/) given each core count as their',
    'DeviceProfile (the decode GEMV reads none; the attention decode sizes its key split by it; the',
    'same for every weight format); MLX\'s from its host code, which picks the sdpa kernel and its',
    'block count by device class (– where a profile does not run that pass).',
    '',
    '| shape | kernel | threads / threadgroup | threadgroups (' + profiles.join(' / ') + ') | per core (' + profiles.join(' / ') + ') |',
    '|---|---|---:|---:|---:|');
  const seen = new Set();
  for (const k of r.kernels) {
    for (const s of k.shapes) {
      if (seen.has(`${k.family} ${s.shape}`)) continue;
      seen.add(`${k.family} ${s.shape}`);
      const perProfile = (name, p) => {
        const groups = profiles.map((c) => p.threadgroups[String(c)]);
        const per = groups.map((g, i) => (g === null ? '–' : String(round(g / profiles[i], 1)))).join(' / ');
        // One number where every profile launches the same.
        const all = new Set(groups).size === 1 ? String(groups[0]) : groups.map(dash).join(' / ');
        lines.push(`| ${s.shape} | ${name} | ${p.threads} | ${all} | ${per} |`);
      };
      for (const p of s.passes) perProfile(`\`${p.kernel}\``, p);
      for (const p of r.mlx.parallelism[s.shape] ?? []) perProfile(`MLX \`${p.kernel}\``, p);
    }
  }
  // What the tables say, from their own numbers.
  const of = (id) => r.kernels.find((k) => k.kernel === id);
  const gemv = ['mxfp4', 'mxfp8', 'affine4'].map((f) => of(`qlinear_decode_${f}_f16`));
  const att = of('attention_decode_f16_dense_d128');
  const att4 = of('attention_decode_f16_dense_d128_r4');
  const attMx = of('attention_decode_f16_mxfp8_d128');
  const perRow = (k) => round(k.loop.insns / (k.loop.elements * k.loop.rows));
  // The first pass of ours against MLX's first pass (sdpa_vector or sdpa_vector_2pass_1), shape by
  // shape and profile by profile.
  const first = (sh, c) => Math.max(...(r.mlx.parallelism[sh.shape] ?? []).filter((p) => p.kernel !== 'sdpa_vector_2pass_2')
    .map((p) => p.threadgroups[String(c)] ?? 0));
  const versus = att.shapes.map((sh) => `${sh.shape}: ${profiles.map((c) => sh.passes[0].threadgroups[String(c)]).join(' / ')} against ` +
    `${profiles.map((c) => first(sh, c)).join(' / ')}`);
  const behind = att.shapes.flatMap((sh) => profiles.filter((c) => sh.passes[0].threadgroups[String(c)] < first(sh, c)).map((c) => `${sh.shape} on ${c} cores`));
  lines.push('', '## Reading', '',
    `- Decode GEMV, float16 x: ${gemv.map((k) => `${k.kernel.split('_')[2]} ${k.loop.perElement}`).join(', ')} instructions`,
    `  per weight element against MLX's ${gemv.map((k) => r.mlx.kernels[k.mlx].loop.perElement).join(', ')}; the same threadgroups as`,
    '  qmv_fast for one row of x (2 SIMD-groups of 4 weight rows each).',
    `- Attention decode, the key loop without a mask: ${perRow(att)} instructions per K/V element for one query row`,
    `  (mxfp8 K/V ${perRow(attMx)}) against sdpa_vector's ${r.mlx.kernels[att.mlx].loop.perElement}; ${perRow(att4)} per element and row for four rows (GQA 4:`,
    '  each K/V element read once for the four), and',
    `  its first pass launches on the ${profiles.join(' / ')}-core profiles (threadgroups of 4 SIMD-groups, where`,
    '  MLX\'s 2pass_1 has one SIMD-group per query row; ours against MLX\'s first pass):',
    ...versus.map((v) => `  ${v};`),
    behind.length ? `  fewer than MLX's on ${behind.join(', ')}.` : '  at least MLX\'s on every profile.',
    '- The decode key loop is sdpa_vector\'s step (fmax and two exp2 per key and row, the running',
    '  maximum starting at the lowest finite float). The NaN/Inf rule both backends keep (a hidden key\'s',
    '  non-finite V must not reach the output) costs nothing in it: a SIMD-group whose accumulators end',
    '  non-finite reruns its keys with hidden keys skipped, outside the measured loop.');
  lines.push('', '## MLX, measured by hand', '', ...r.mlx.method, '');
  return `${lines.join('\n')}\n`;
}

function toolchainMissing() {
  if (spawnSync(cxx, ['--version']).status !== 0) return cxx;
  if (!existsSync('/usr/aarch64-linux-gnu/include/stdlib.h')) return "Debian's arm64 cross headers";
  if (spawnSync(hostCxx, ['--version']).status !== 0) return hostCxx;
  return undefined;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  const missing = toolchainMissing();
  if (missing) {
    console.error(`report-kernels: needs ${missing}`);
    process.exit(2);
  }
  const r = measure();
  const json = `${JSON.stringify(r, null, 1)}\n`;
  const md = markdown(r);
  if (check) {
    const committed = existsSync(outJson) ? JSON.parse(readFileSync(outJson, 'utf8')) : undefined;
    if (committed && committed.compiler !== r.compiler) {
      console.error(`report-kernels: the committed report was made by '${committed.compiler}', this machine has '${r.compiler}'`);
      process.exit(2);
    }
    const stale = [[outJson, json], [outMd, md]].filter(([p, text]) => !existsSync(p) || readFileSync(p, 'utf8') !== text);
    if (stale.length) {
      console.error(`report-kernels: not current: ${stale.map(([p]) => p).join(', ')} (run npm run report:kernels)`);
      process.exit(1);
    }
    console.log('report-kernels: docs/kernel-costs.{md,json} are current');
  } else {
    mkdirSync(dirname(outMd), { recursive: true });
    writeFileSync(outJson, json);
    writeFileSync(outMd, md);
    for (const k of r.kernels) console.log(`${k.kernel}: ${k.loop.insns} insns / ${k.loop.elements} elements = ${k.loop.perElement}`);
  }
}
