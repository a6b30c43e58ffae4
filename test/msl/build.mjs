// Builds the MSL suite driver (test/msl/build/msl-driver): the harness runtime, every
// shaders/*.metal compiled as C++ through the shim (plus each planted-fault variant of
// faults/faults.json), the dispatch plans and the cpu backend as the reference.
//
// Incremental: an object is rebuilt when it is missing, when its compile command changed, or when
// a file its dependency list (-MD) names is newer. Generated sources are rewritten only when their
// text changes. The build directory is disposable (test/msl/build/ is ignored by git).
//
//   node test/msl/build.mjs        prints the driver's path on success
// Environment: MSL_CXX (default clang++-19), MSL_JOBS (default: CPU count).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { libraryStd } from '../../scripts/embed-shaders.mjs';
import { embeddedMslSources } from '../../scripts/msl-sources.mjs';
import { generate } from '../../emulator/gen/gen_kernels.mjs';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
export const root = resolve(here, '../..');
export const buildDir = join(here, 'build');
export const driverPath = join(buildDir, 'msl-driver');
export const objectListPath = join(buildDir, 'driver-objects.json');
export const faults = JSON.parse(readFileSync(join(here, 'faults/faults.json'), 'utf8'));

const cxx = process.env.MSL_CXX || 'clang++-19';
const common = ['-O2', '-g0', '-pthread', '-fno-fast-math', '-Wall', '-Wno-unused-function'];
// Kernels: MSL 3.1 is C++14-based, so C++17 in a kernel is an error here too; unknown MSL
// attributes ([[buffer(n)]] ...) are read by the generator, not by clang. A thread-private array
// indexed out of its bounds traps (no sanitizer runtime: the trap ends the driver): undefined
// behaviour on the GPU that the guard pages around device memory cannot see.
const kernelFlags = [...common, '-std=c++14', '-Werror=c++17-extensions', '-Wno-unknown-attributes',
  '-Wno-unused-variable', '-fsanitize=array-bounds', '-fsanitize-trap=array-bounds',
  '-D__METAL_VERSION__=310', '-Iemulator/shim', '-Iemulator/runtime', '-Ishaders'];
const hostFlags = [...common, '-std=c++17', '-Inative', '-Ishaders', '-Iemulator/runtime'];
// MSL 4.0 (the tensorops tier): a .metal file that includes <metal_tensor> is compiled at
// __METAL_VERSION__=400 with the TensorOps shim. MSL 4 is C++17-based plus class-type template
// arguments (matmul2d<matmul2d_descriptor(...), ...>), which clang accepts as C++20.
const kernelFlagsAt = (version) => kernelFlags.map((f) => f === '-std=c++14' ? '-std=c++20'
  : f === '-Werror=c++17-extensions' ? '-Werror=c++23-extensions'
  : f === '-D__METAL_VERSION__=310' ? `-D__METAL_VERSION__=${version}` : f);
// MSL 4.1 (the tensorops-mx tier): the same, at __METAL_VERSION__=410, where the shim also offers
// what only the macOS 27 headers have (cooperative left inputs).
export const flagsByStd = { 'metal3.1': kernelFlags, 'metal4.0': kernelFlagsAt(400), 'metal4.1': kernelFlagsAt(410) };
/** The flags for one generated translation unit: by the MSL version its source asks for. */
const stdOf = new Map();
/** A planted fault in a header: the copy of shaders/ its translation unit includes instead. */
const shadersOf = new Map();
const flagsFor = (dest) => flagsByStd[stdOf.get(dest) ?? 'metal3.1']
  .map((f) => (f === '-Ishaders' && shadersOf.has(dest) ? `-I${relative(root, shadersOf.get(dest))}` : f));

const list = (dir, ext) => readdirSync(join(root, dir)).filter((f) => f.endsWith(ext)).sort().map((f) => `${dir}/${f}`);
/** Like list, with the files of every folder under `dir` too (paths with '/'). */
const listTree = (dir, ext) => readdirSync(join(root, dir), { encoding: 'utf8', recursive: true }).map((f) => f.split(sep).join('/'))
  .filter((f) => f.endsWith(ext)).sort().map((f) => `${dir}/${f}`);

function writeIfChanged(path, text) {
  if (existsSync(path) && readFileSync(path, 'utf8') === text) return;
  writeFileSync(path, text);
}

/**
 * The text of `file` with each `#include "X.metal"` replaced by X.metal's own text (a library made
 * of another one: shaders/attention_tensorops_mx.metal), #line directives keeping every line
 * traceable; the generator reads the kernels from this text.
 */
export function withMetalIncludes(file, base = root) {
  const text = readFileSync(join(base, file), 'utf8');
  const lines = text.split('\n');
  return lines.map((line, n) => {
    const m = /^\s*#\s*include\s*"([^"]+\.metal)"/.exec(line);
    if (!m) return line;
    const inner = `${dirname(file)}/${m[1]}`;
    return `#line 1 "${inner}"\n${withMetalIncludes(inner, base)}\n#line ${n + 2} "${file}"`;
  }).join('\n');
}

/**
 * build/faults/<name>/shaders: a copy of shaders/ with the fault's header mutated (its `find` must
 * occur exactly once). Files are rewritten only when their text changes, so the variant's object
 * stays up to date between builds.
 */
function faultShaders(f) {
  const dir = join(buildDir, 'faults', f.name, 'shaders');
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(join(root, 'shaders'))) {
    if (!statSync(join(root, 'shaders', name)).isFile()) continue;
    let text = readFileSync(join(root, 'shaders', name), 'utf8');
    if (`shaders/${name}` === f.file) {
      const count = text.split(f.find).length - 1;
      if (count !== 1) throw new Error(`planted fault '${f.name}': the text to replace occurs ${count} times in ${f.file} (must be once)`);
      text = text.replace(f.find, () => f.replace);
    }
    writeIfChanged(join(dir, name), text);
  }
  return dir;
}

/**
 * The generated translation units: one per shader library, one per planted fault (in the library
 * of the fault's `library`, default the stem of its `file`: the mutation applies to that file's
 * text wherever the library includes it) and one per tier probe of native/metal/probe_sources.h.
 */
function generateKernels() {
  const genDir = join(buildDir, 'gen');
  mkdirSync(genDir, { recursive: true });
  const out = [];
  const add = (dest, text, opts, std) => {
    stdOf.set(dest, std);
    writeIfChanged(dest, generate(text, { ...opts, rowPointers: true }));  // kernelFlags trap on array bounds
    out.push(dest);
  };
  // The product kernels, and the harness's own test kernels. The MSL version is the one each
  // embedded library gets (scripts/embed-shaders.mjs), from the text with its includes.
  for (const file of [...list('shaders', '.metal'), ...list('test/msl/selftest', '.metal')]) {
    const library = basename(file, '.metal');
    const text = withMetalIncludes(file);
    add(join(genDir, `${library}.cc`), text, { file, library, variant: '' }, libraryStd(text));
  }
  for (const f of faults) {
    const library = f.library ?? basename(f.file, '.metal');
    const file = `${dirname(f.file)}/${library}.metal`;
    const text = withMetalIncludes(file);
    const dest = join(genDir, `${library}__${f.name}.cc`);
    if (f.file.endsWith('.h')) {
      // A header the library includes (qlinear_decode.h): the mutation goes into a copy of
      // shaders/ that this variant alone includes, as mutants.mjs does for its mutants.
      shadersOf.set(dest, faultShaders(f));
      add(dest, text, { file, library, variant: f.name }, libraryStd(text));
    } else {
      add(dest, text, { file, library, variant: f.name, find: f.find, replace: f.replace }, libraryStd(text));
    }
  }
  // The probes open() compiles for each tier, at their own MSL version, as library probe_<tier>.
  for (const m of embeddedMslSources()) {
    const file = relative(root, join(genDir, `${m.name}.metal`));
    writeIfChanged(join(root, file), m.text);
    add(join(genDir, `${m.name}.cc`), m.text, { file, library: m.name, variant: '' }, m.std);
  }
  return out;
}

function upToDate(obj, cmdFile, cmd) {
  if (!existsSync(obj) || !existsSync(cmdFile) || readFileSync(cmdFile, 'utf8') !== cmd) return false;
  const dep = obj.replace(/\.o$/, '.d');
  if (!existsSync(dep)) return false;
  const built = statSync(obj).mtimeMs;
  const deps = readFileSync(dep, 'utf8').replace(/\\\n/g, ' ').split(':').slice(1).join(':').trim().split(/\s+/);
  return deps.every((d) => !d || (existsSync(resolve(root, d)) && statSync(resolve(root, d)).mtimeMs <= built));
}

async function compile(src, flags) {
  const rel = relative(root, resolve(root, src));
  const obj = join(buildDir, 'obj', rel.replace(/^test\/msl\/build\//, '').replace(/[/.]/g, '_') + '.o');
  // -MD, not -MMD: the shim headers are marked as system headers, which -MMD would leave out.
  const args = [...flags, '-MD', '-c', rel, '-o', obj];
  const cmdFile = obj.replace(/\.o$/, '.cmd');
  const cmd = [cxx, ...args].join(' ');
  if (upToDate(obj, cmdFile, cmd)) return { obj, built: false };
  const { stderr } = await run(cxx, args, { cwd: root, maxBuffer: 64 << 20 }).catch((e) => {
    throw new Error(`compiling ${rel} failed:\n${e.stderr || e.message}`);
  });
  if (stderr) process.stderr.write(stderr);  // warnings: shown, not fatal
  writeFileSync(cmdFile, cmd);
  return { obj, built: true };
}

/** Runs tasks with at most `n` in flight. */
async function pool(tasks, n) {
  const results = [];
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, tasks.length) }, async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]();
    }
  }));
  return results;
}

export async function build() {
  mkdirSync(join(buildDir, 'obj'), { recursive: true });
  const kernels = generateKernels();
  const host = [
    ...list('emulator/runtime', '.cc'), ...list('test/msl/driver', '.cc'),
    // The reference: the cpu backend, the host kernels it runs and the backend-neutral core,
    // dispatch plans included.
    ...listTree('native/core', '.cc'), ...listTree('native/kernels', '.cc'), ...list('native/cpu', '.cc'),
  ];
  const tasks = [
    // Biggest first, so the two cores stay busy to the end.
    ...kernels.map((k) => () => compile(k, flagsFor(k))),
    ...host.map((s) => () => compile(s, hostFlags)),
  ];
  const jobs = Number(process.env.MSL_JOBS) || availableParallelism();
  const objs = await pool(tasks, jobs);
  // What the driver is linked from (the obj directory may hold objects of files since removed):
  // mutants.mjs links its mutant drivers from the same list.
  writeIfChanged(objectListPath, `${JSON.stringify(objs.map((o) => o.obj), null, 1)}\n`);
  if (objs.some((o) => o.built) || !existsSync(driverPath)) {
    await run(cxx, ['-pthread', ...objs.map((o) => o.obj), '-o', driverPath], { cwd: root, maxBuffer: 64 << 20 })
      .catch((e) => { throw new Error(`linking the MSL driver failed:\n${e.stderr || e.message}`); });
  }
  return driverPath;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  build().then((p) => console.log(p), (e) => {
    console.error(e.message);
    process.exit(1);
  });
}
