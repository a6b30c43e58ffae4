// Mutation testing of shaders/ (issue #29): which lines of the kernels the MSL harness pins.
// Every mutant (mutants/enumerate.mjs: one mechanical edit of one line) is built into the harness
// as a variant of each library that includes the mutated file, and only the cases that run those
// libraries' kernels are run against it (the driver reports per case which libraries it used). A
// mutant is killed when a case fails (or crashes, or runs past its time), survives when every case
// passes, and is stillborn when it does not compile (not counted).
//
//   npm run test:mutants [-- options]
//   --files a,b        only mutants of these files (shaders/norm.metal, shaders/mx_formats.h, ...)
//   --match TEXT       only mutants whose mutated line contains TEXT (or whose id is TEXT); given
//                      again, those that match any of them
//   --survivors        only mutants the report lists as survived (after adding tests)
//   --unrun            only mutants the report has no result for (finishing a file run in part)
//   --sample N         N mutants drawn with --seed (default 1) instead of all of them
//   --budget SECONDS   start no mutant after this long (those left are reported as not run)
//   --jobs N           mutants built and run at once (default: CPU count)
//   --update           merge the results into test/msl/mutants.json (the committed report)
//   --check            exit 1 when a mutant the report says is killed survives now, unless
//                      test/msl/mutants-equivalent.json explains it (CI's sampled run)
//   --list             print the mutants and exit
//   --refresh          run nothing: rewrite the report for today's shaders and equivalents (the
//                      ids of edited lines drop out; survivors with a recorded reason become
//                      equivalent), after editing shaders/ or mutants-equivalent.json
//   --merge REPORT     run nothing: take another machine's results (its mutants.json, from a run
//                      over the same shaders/) for the mutants this report has no result for, or
//                      lists as survivors (killed there by a newer test or harness)
//
// Equivalent mutants (no behaviour can tell them apart) are reviewed by hand and recorded with
// the reason in mutants-equivalent.json; they are reported as such, never as survivors.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { libraryStd } from '../../scripts/embed-shaders.mjs';
import { build, buildDir, driverPath, flagsByStd, objectListPath, root, withMetalIncludes } from './build.mjs';
import { generate } from '../../emulator/gen/gen_kernels.mjs';
import { applyMutant, enumerateMutants } from './mutants/enumerate.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
export const reportPath = join(here, 'mutants.json');
export const equivalentPath = join(here, 'mutants-equivalent.json');
const cxx = process.env.MSL_CXX || 'clang++-19';
const VARIANT = 'mutant';

/** The shader files mutants are made of: kernels and the headers they share, not the params
 * structs the host shares (a changed layout is a binding error, not a kernel behaviour). */
export function mutableFiles() {
  return readdirSync(join(root, 'shaders')).filter((f) => /\.(metal|h)$/.test(f))
    .filter((f) => !f.endsWith('_params.h') && f !== 'kernel_abi.h').sort().map((f) => `shaders/${f}`);
}

function exec(cmd, args, options = {}) {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: root, maxBuffer: 256 << 20, ...options }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, signal: error?.signal ?? null, killed: !!error?.killed, stdout, stderr });
    });
  });
}

/** The `n` mutants whose ids hash lowest under `seed`: the same sample on every machine, and one
 * that an edit elsewhere in shaders/ leaves alone (only the edited lines' ids change). */
function sampleByHash(list, n, seed) {
  const key = (m) => createHash('sha1').update(`${seed}:${m.id}`).digest('hex');
  return list.map((m) => [key(m), m]).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).slice(0, n).map(([, m]) => m);
}

/** Per library: the shader files its text is made of (its .metal, included .metal files and the
 * shaders/ headers its compile depended on, from the base build's -MD files). */
function libraryFiles() {
  const out = new Map();
  for (const f of readdirSync(join(root, 'shaders')).filter((x) => x.endsWith('.metal'))) {
    const library = basename(f, '.metal');
    const files = new Set([`shaders/${f}`]);
    const text = readFileSync(join(root, 'shaders', f), 'utf8');
    for (const m of text.matchAll(/^\s*#\s*include\s*"([^"]+\.metal)"/gm)) files.add(`shaders/${m[1]}`);
    const dep = join(buildDir, 'obj', `gen_${library}_cc.d`);
    if (existsSync(dep)) {
      for (const d of readFileSync(dep, 'utf8').replace(/\\\n/g, ' ').split(/\s+/)) {
        const m = /(?:^|\/)shaders\/([\w.]+\.h)$/.exec(d);
        if (m) files.add(`shaders/${m[1]}`);
      }
    }
    out.set(library, files);
  }
  return out;
}

/** Which cases run which libraries, and how long each takes: from one run of the base driver,
 * cached until the driver changes. Cases that fail on the base build are left out. */
async function caseLibraries(jobs, log, baseReport) {
  const cache = join(buildDir, 'case-libraries.json');
  const stamp = statSync(driverPath).mtimeMs;
  if (!baseReport && existsSync(cache)) {
    const c = JSON.parse(readFileSync(cache, 'utf8'));
    if (c.stamp === stamp) return c.cases;
  }
  let doc = baseReport;
  if (!doc) {
    log('running the base suite once to learn which cases use which libraries');
    doc = JSON.parse((await exec(driverPath, ['--jobs', String(jobs)])).stdout);
  }
  const cases = {};
  for (const c of doc.cases) if (c.ok && c.libraries?.length) cases[c.name] = { libraries: c.libraries, ms: c.ms };
  writeFileSync(cache, JSON.stringify({ stamp, cases }));
  return cases;
}

// A mutant's libraries are compiled at -O0 first (a twentieth of -O2's compile time): most mutants
// fail one of their first cases, and the run stops there. One that passes its first EARLY_CASES is
// compiled again at -O2 for the rest: at -O0 the kernels run about sixteen times slower, and a
// survivor runs every case of its libraries (the attention files' took over 20 minutes a mutant).
// Like the suite's, they trap on an index past a thread-private array (build.mjs kernelFlags),
// which ends the driver and kills the mutant.
const EARLY_CASES = 40;
const SLOWDOWN = { '-O0': 40, '-O2': 10 };  // time-outs: this many times a case's -O2 time, plus a floor
const mutantFlags = (text, dir, level) =>
  flagsByStd[libraryStd(text)].map((f) => (f === '-Ishaders' ? `-I${join(dir, 'shaders')}` : f === '-O2' ? level : f));

/** Builds the mutated libraries at `level` and links a driver; returns { driver } or a stillborn
 * result. */
async function buildMutant(libraries, dir, ctx, level) {
  const objs = [];
  for (const library of libraries) {
    const file = `shaders/${library}.metal`;
    const text = withMetalIncludes(file, dir);
    const src = join(dir, `${library}.cc`);
    writeFileSync(src, generate(text, { file, library, variant: VARIANT, rowPointers: true }));
    const obj = join(dir, `${library}${level}.o`);
    const c = await exec(cxx, [...mutantFlags(text, dir, level), '-c', src, '-o', obj]);
    if (c.code !== 0) return { status: 'stillborn', by: (c.stderr.split('\n').find((l) => l.includes('error')) ?? c.stderr.slice(0, 200)).trim() };
    objs.push(obj);
  }
  const driver = join(dir, `driver${level}`);
  const l = await exec(cxx, ['-pthread', ...ctx.baseObjects, ...objs, '-o', driver]);
  if (l.code !== 0) return { status: 'stillborn', by: `link: ${l.stderr.slice(0, 300)}` };
  return { driver };
}

/** Runs `cases` ([name, { ms }] with their -O2 times, cheapest first) on a mutant's driver:
 * killed at the first failure, crash or time-out, survived when every case passes. The cases run
 * in batches of 8, 32, 128, ... cases, each under its own time-out, so that a mutant that never
 * ends (a loop that no longer stops) is killed by the time-out of the batch that reaches it, not
 * by the whole suite's. */
async function runCases(driver, cases, slowdown) {
  let done = 0;
  for (let at = 0, size = 8; at < cases.length; at += size, size *= 4) {
    const r = await runBatch(driver, cases.slice(at, at + size), slowdown);
    if (r.status !== 'survived') return r;
    done += r.cases;
  }
  return { status: 'survived', cases: done };
}

async function runBatch(driver, cases, slowdown) {
  const ms = cases.reduce((s, [, c]) => s + c.ms, 0);
  const timeout = Math.round(30_000 + slowdown * ms);
  // Each case under its own limit too (the driver's watchdog): an endless loop costs its case's.
  const limits = cases.map(([, c]) => Math.round(10_000 + slowdown * c.ms));
  const r = await exec(driver, ['--variant', VARIANT, '--jobs', '1', '--fail-fast', '--filter', cases.map(([n]) => n).join(','),
    '--limits', limits.join(',')], { timeout });
  if (r.killed) return { status: 'killed', by: `time-out after ${timeout} ms` };
  if (r.signal) return { status: 'killed', by: `signal ${r.signal}` };
  let doc;
  try {
    doc = JSON.parse(r.stdout);
  } catch {
    return { status: 'killed', by: `driver exit ${r.code} without a report: ${r.stderr.trim().split('\n').pop() ?? ''}`.trim() };
  }
  const failed = doc.cases.find((c) => !c.ok);
  if (failed) return { status: 'killed', by: `${failed.name}: ${failed.error?.kind ?? ''}` };
  if (doc.cases.length < cases.length) return { status: 'killed', by: `${cases.length - doc.cases.length} cases missing from the report` };
  return { status: 'survived', cases: doc.cases.length };
}

/** Builds and runs one mutant; returns { status, by? }. */
async function runMutant(m, k, ctx) {
  const libraries = [...ctx.libraryFiles].filter(([, files]) => files.has(m.file)).map(([lib]) => lib);
  const cases = Object.entries(ctx.cases).filter(([, c]) => c.libraries.some((l) => libraries.includes(l)))
    .sort(([, a], [, b]) => a.ms - b.ms);
  if (cases.length === 0) return { status: 'uncovered', libraries };
  const dir = join(buildDir, 'mutants', String(k));
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  try {
    // A copy of shaders/ with the one file mutated: quoted includes between headers resolve there.
    cpSync(join(root, 'shaders'), join(dir, 'shaders'), { recursive: true });
    writeFileSync(join(dir, m.file), applyMutant(readFileSync(join(root, m.file), 'utf8'), m));
    // Awaited before returning: the finally removes the drivers.
    const early = await buildMutant(libraries, dir, ctx, '-O0');
    if (!early.driver) return early;
    const first = await runCases(early.driver, cases.slice(0, EARLY_CASES), SLOWDOWN['-O0']);
    if (first.status !== 'survived' || cases.length <= EARLY_CASES) return first;
    const fast = await buildMutant(libraries, dir, ctx, '-O2');
    if (!fast.driver) return fast;
    const rest = await runCases(fast.driver, cases.slice(EARLY_CASES), SLOWDOWN['-O2']);
    return rest.status === 'survived' ? { status: 'survived', cases: first.cases + rest.cases } : rest;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function parseArgs(argv) {
  const a = { files: null, match: null, survivors: false, unrun: false, sample: null, seed: 1, budget: Infinity, jobs: availableParallelism(), update: false, check: false, list: false, refresh: false, merge: null };
  for (let i = 0; i < argv.length; i++) {
    const v = () => argv[++i];
    switch (argv[i]) {
      case '--files': a.files = v().split(',').filter(Boolean); break;
      case '--match': a.match = [...(a.match ?? []), v()]; break;
      case '--survivors': a.survivors = true; break;
      case '--unrun': a.unrun = true; break;
      case '--sample': a.sample = Number(v()); break;
      case '--seed': a.seed = Number(v()); break;
      case '--budget': a.budget = Number(v()); break;
      case '--jobs': a.jobs = Math.max(1, Number(v())); break;
      case '--update': a.update = true; break;
      case '--check': a.check = true; break;
      case '--list': a.list = true; break;
      case '--refresh': a.refresh = true; break;
      case '--merge': a.merge = v(); break;
      default: throw new Error(`unknown option ${argv[i]} (see the comment at the top of test/msl/mutants.mjs)`);
    }
  }
  return a;
}

const readJson = (path, fallback) => (existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : fallback);

/** Every mutant of the selected files, sampled and ordered as the options say. */
export function selectMutants({ files = null, match = null, survivors = false, unrun = false, sample = null, seed = 1 } = {}) {
  let all = [];
  for (const file of files ?? mutableFiles()) all.push(...enumerateMutants(file, readFileSync(join(root, file), 'utf8')));
  if (match !== null) {
    const texts = [match].flat();
    all = all.filter((m) => texts.some((t) => m.id === t || m.mutated.includes(t)));
  }
  if (survivors) {
    const report = readJson(reportPath, { files: {} });
    const ids = new Set(Object.values(report.files).flatMap((f) => (f.survived ?? []).map((x) => x.id)));
    all = all.filter((m) => ids.has(m.id));
  }
  if (unrun) {
    const report = readJson(reportPath, { files: {} });
    const ids = new Set(Object.values(report.files).flatMap((f) => [
      ...(f.killed ?? []), ...(f.stillborn ?? []), ...(f.uncovered ?? []),
      ...(f.survived ?? []).map((x) => x.id), ...(f.equivalent ?? []).map((x) => x.id)]));
    all = all.filter((m) => !ids.has(m.id));
  }
  return sample === null ? all : sampleByHash(all, sample, seed);
}

/** Merges `results` (by id) into the committed report and writes it. */
function writeReport(report, mutants, results, equivalent, log) {
  for (const file of new Set(mutants.map((m) => m.file))) {
    const ofFile = enumerateMutants(file, readFileSync(join(root, file), 'utf8'));
    const prev = report.files[file] ?? {};
    const status = new Map();
    for (const id of prev.killed ?? []) status.set(id, 'killed');
    for (const id of prev.stillborn ?? []) status.set(id, 'stillborn');
    for (const id of prev.uncovered ?? []) status.set(id, 'uncovered');
    for (const s of prev.survived ?? []) status.set(s.id, 'survived');
    for (const s of prev.equivalent ?? []) status.set(s.id, 'equivalent');
    for (const m of ofFile) if (results.has(m.id)) status.set(m.id, results.get(m.id).status);
    for (const m of ofFile) if (status.get(m.id) === 'survived' && equivalent[m.id]) status.set(m.id, 'equivalent');
    const pick = (st) => ofFile.filter((m) => status.get(m.id) === st);
    const detail = (m) => ({ id: m.id, line: m.line, edit: `${m.from} -> ${m.to}`, mutated: m.mutated.trim() });
    report.files[file] = {
      mutants: ofFile.length,
      run: ofFile.filter((m) => status.has(m.id)).length,
      killed: pick('killed').map((m) => m.id),
      stillborn: pick('stillborn').map((m) => m.id),
      uncovered: pick('uncovered').map((m) => m.id),
      survived: pick('survived').map(detail),
      equivalent: pick('equivalent').map((m) => ({ ...detail(m), reason: equivalent[m.id] })),
    };
  }
  report.files = Object.fromEntries(Object.entries(report.files).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(reportPath, `${JSON.stringify(report, null, 1)}\n`);
  log(`updated ${reportPath}`);
}

/** `baseReport`: the base driver's report of every case when the caller has one (msl.test.ts). */
export async function main(argv, log = (s) => process.stderr.write(`${s}\n`), { baseReport = null } = {}) {
  const opts = parseArgs(argv);
  let mutants = selectMutants(opts);
  if (opts.check) {
    // Only a mutant the report has killed, or has no result for, can fail the check: equivalent
    // and listed survivors are not run (at -O0 each costs its libraries' whole suite).
    const report = readJson(reportPath, { files: {} });
    const equivalentIds = readJson(equivalentPath, {});
    const known = new Set(Object.values(report.files).flatMap((f) => (f.survived ?? []).map((x) => x.id)));
    mutants = mutants.filter((m) => !equivalentIds[m.id] && !known.has(m.id));
  }
  if (opts.refresh) {
    writeReport(readJson(reportPath, { files: {} }), mutants, new Map(), readJson(equivalentPath, {}), log);
    return 0;
  }
  if (opts.merge) {
    // A status by id; equivalence is decided here again, from mutants-equivalent.json.
    const results = new Map();
    for (const f of Object.values(readJson(opts.merge, { files: {} }).files)) {
      for (const st of ['killed', 'stillborn', 'uncovered']) for (const id of f[st] ?? []) results.set(id, { status: st });
      for (const x of [...(f.survived ?? []), ...(f.equivalent ?? [])]) results.set(x.id, { status: 'survived' });
    }
    const open = [...selectMutants({ ...opts, unrun: true }), ...selectMutants({ ...opts, survivors: true })]
      .filter((m) => results.has(m.id));
    log(`${open.length} results taken from ${opts.merge}`);
    writeReport(readJson(reportPath, { files: {} }), open, new Map(open.map((m) => [m.id, results.get(m.id)])), readJson(equivalentPath, {}), log);
    return 0;
  }
  if (opts.list) {
    for (const m of mutants) console.log(`${m.id}\t${m.file}:${m.line}\t${m.from} -> ${m.to}\t${m.mutated.trim()}`);
    return 0;
  }
  await build();
  const ctx = {
    libraryFiles: libraryFiles(),
    cases: await caseLibraries(opts.jobs, log, baseReport),
    baseObjects: JSON.parse(readFileSync(objectListPath, 'utf8')),
  };
  const equivalent = readJson(equivalentPath, {});
  const report = readJson(reportPath, { files: {} });
  const killedBefore = new Set(Object.values(report.files).flatMap((f) => f.killed ?? []));
  const t0 = Date.now();
  const results = new Map();
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(opts.jobs, mutants.length) }, async () => {
    while (next < mutants.length && (Date.now() - t0) / 1000 < opts.budget) {
      const k = next++;
      const m = mutants[k];
      const r = await runMutant(m, k, ctx);
      if (r.status === 'survived' && equivalent[m.id]) r.status = 'equivalent';
      results.set(m.id, r);
      log(`[${results.size}/${mutants.length}] ${r.status.padEnd(10)} ${m.file}:${m.line} ${m.from} -> ${m.to}${r.by ? `  (${r.by})` : ''}`);
      // Written as results come, so a run stopped part way keeps what it found.
      if (opts.update) writeReport(report, mutants, results, equivalent, () => {});
    }
  }));

  const counts = {};
  for (const r of results.values()) counts[r.status] = (counts[r.status] ?? 0) + 1;
  const survivors = mutants.filter((m) => results.get(m.id)?.status === 'survived');
  log(`\n${results.size} of ${mutants.length} mutants run in ${((Date.now() - t0) / 1000).toFixed(0)} s: ${JSON.stringify(counts)}`);
  for (const m of survivors) log(`survived: ${m.file}:${m.line}  ${m.from} -> ${m.to}  ${m.mutated.trim()}  [${m.id}]`);
  if (opts.update) writeReport(report, mutants, results, equivalent, log);

  if (opts.check) {
    const regressions = survivors.filter((m) => killedBefore.has(m.id));
    const unknown = survivors.filter((m) => !killedBefore.has(m.id) && !(report.files[m.file]?.survived ?? []).some((s) => s.id === m.id));
    for (const m of regressions) log(`REGRESSION: the report has this mutant killed; it survives now: ${m.file}:${m.line} ${m.mutated.trim()}`);
    for (const m of unknown) log(`NEW SURVIVOR (not in the report): ${m.file}:${m.line} ${m.mutated.trim()}`);
    return regressions.length + unknown.length === 0 ? 0 : 1;
  }
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2)).then((code) => process.exit(code), (e) => {
    console.error(e.stack || e.message);
    process.exit(1);
  });
}
