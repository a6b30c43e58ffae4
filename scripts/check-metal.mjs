#!/usr/bin/env node
// `npm run check:metal`: type-checks the Objective-C++ Metal host code (native/metal/*.mm) on a
// machine without Apple's SDK, following docs/design/VERIFY.md: clang targets macOS 14 on
// arm64, compiles against our declarations of the Metal and Foundation subset we use
// (test/metal-sdk/, each declaration with its macOS availability), and turns the two mistakes
// that otherwise only show on a Mac into errors: a selector that does not exist
// (-Werror=objc-method-access) and a macOS 26/27 API used outside `if (@available(...))`
// (-Werror=unguarded-availability-new). Each file is checked twice: at the deployment target
// (sources.json, macOS 14.0) and at the newest macOS the declarations model (27.0), where an API
// deprecated since the deployment target (fastMathEnabled: macOS 15) is an error unless the code
// keeps it out of that build. C++ standard headers come from Debian's arm64 cross packages so
// libstdc++'s architecture checks pass.
//
//   node scripts/check-metal.mjs                 check every native/metal/*.mm at both targets
//   node scripts/check-metal.mjs FILE.mm...      check these files (tests check modified copies)
//   node scripts/check-metal.mjs --macos 15.0 FILE.mm...
//                                                check at that deployment target only
//   node scripts/check-metal.mjs --extract-msl DIR
//                                                write the MSL sources embedded in native/metal
//                                                (marked `// msl-source: NAME std=metalX.Y`) to
//                                                DIR/NAME.metal plus DIR/manifest.json, for the
//                                                macOS workflow's offline `xcrun metal` compile
//
// Exit status: 0 when every file passes; 1 when any fails (the compiler's messages are printed);
// 2 when the toolchain is missing (the message says what to install).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { embeddedHeader } from './embed-shaders.mjs';
import { embeddedMslSources } from './msl-sources.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const metalDir = join(root, 'native', 'metal');
const sdkDir = join(root, 'test', 'metal-sdk');
const crossInclude = '/usr/aarch64-linux-gnu/include';
const crossCxx = `${crossInclude}/c++/12`;
// The addon's deployment target (binding.gyp and CMakeLists.txt read the same field), and the
// newest macOS test/metal-sdk declares (its __MAC_OS_X_VERSION_MAX_ALLOWED).
const deploymentTarget = JSON.parse(readFileSync(join(root, 'sources.json'), 'utf8')).macos_deployment_target;
const newestMacos = '27.0';
const INSTALL_HINT =
  'install it with: apt-get install -y clang-19 libc6-dev-arm64-cross libstdc++-12-dev-arm64-cross';

function findClang() {
  const candidates = process.env.CLANGXX ? [process.env.CLANGXX] : ['clang++-19', 'clang++-20', 'clang++-18', 'clang++'];
  for (const cc of candidates) {
    const r = spawnSync(cc, ['--version'], { encoding: 'utf8' });
    if (r.status === 0) return cc;
  }
  return undefined;
}

function clangArgs(file, generatedDir, macos) {
  return [
    '-x', 'objective-c++', '-std=c++17', '-fsyntax-only',
    '-target', `arm64-apple-macos${macos}`,
    '-fobjc-arc', '-fblocks', '-fexceptions',     // as binding.gyp / CMakeLists.txt build them
    '-nostdinc++', '-nostdlibinc',
    // With a darwin target clang predefines these as nullability keywords, which breaks glibc's
    // __nonnull((1)) macro; glibc's wide-char and locale declarations need _GNU_SOURCE.
    '-U__nonnull', '-U__nullable', '-D_GNU_SOURCE',
    '-isystem', crossCxx, '-isystem', `${crossCxx}/aarch64-linux-gnu`, '-isystem', crossInclude,
    '-I', sdkDir, '-I', join(root, 'native'), '-I', join(root, 'shaders'),
    '-I', generatedDir,                           // shaders_embedded.h, as the builds generate it
    '-Wall', '-Wextra', '-Werror',
    '-Werror=unguarded-availability', '-Werror=unguarded-availability-new',
    '-Werror=objc-method-access', '-Werror=deprecated-declarations',
    '-Wno-nullability-completeness',
    file,
  ];
}

function extractMsl(outDir) {
  mkdirSync(outDir, { recursive: true });
  const manifest = [];
  for (const m of embeddedMslSources()) {
    const file = `${m.name}.metal`;
    writeFileSync(join(outDir, file), m.text);
    manifest.push({ name: m.name, std: m.std, file, from: m.from });
  }
  writeFileSync(join(outDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  for (const e of manifest) console.log(`${e.file}  (-std=${e.std}, from ${e.from})`);
  return manifest.length > 0 ? 0 : 1;
}

/** Runs `clang args`, resolving to its exit status and its stdout and stderr together. */
function compile(clang, args) {
  return new Promise((done) => {
    const child = spawn(clang, args);
    let output = '';
    child.stdout.on('data', (b) => { output += b; });
    child.stderr.on('data', (b) => { output += b; });
    child.on('error', (e) => done({ status: -1, output: e.message }));
    child.on('close', (status) => done({ status, output }));
  });
}

/** Runs the tasks with at most `n` in flight; the results in task order. */
async function runAll(tasks, n) {
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

async function main(args) {
  let argv = args;
  const at = argv.indexOf('--extract-msl');
  if (at >= 0) {
    if (!argv[at + 1]) {
      console.error('check:metal: --extract-msl needs a directory');
      return 2;
    }
    return extractMsl(resolve(argv[at + 1]));
  }
  const clang = findClang();
  if (!clang) {
    console.error(`check:metal: no clang++ found; ${INSTALL_HINT}`);
    return 2;
  }
  if (!existsSync(`${crossCxx}/vector`) || !existsSync(`${crossInclude}/stdlib.h`)) {
    console.error(`check:metal: the arm64 C and C++ headers are missing (${crossCxx}); ${INSTALL_HINT}`);
    return 2;
  }
  const macosAt = argv.indexOf('--macos');
  let targets = [deploymentTarget, newestMacos];
  if (macosAt >= 0) {
    if (!/^\d+\.\d+$/.test(argv[macosAt + 1] ?? '')) {
      console.error('check:metal: --macos needs a version such as 15.0');
      return 2;
    }
    targets = [argv[macosAt + 1]];
    argv = [...argv.slice(0, macosAt), ...argv.slice(macosAt + 2)];
  }
  const files = argv.length > 0
    ? argv.map((f) => resolve(f))
    : readdirSync(metalDir).filter((f) => f.endsWith('.mm')).sort().map((f) => join(metalDir, f));
  if (files.length === 0) {
    console.error('check:metal: no .mm files to check');
    return 1;
  }
  // The header binding.gyp / CMakeLists.txt generate before compiling native/metal.
  const generatedDir = mkdtempSync(join(tmpdir(), 'mto-check-metal-gen-'));
  writeFileSync(join(generatedDir, 'shaders_embedded.h'), embeddedHeader());
  // Every (file, target) compile, as many at once as there are cores; reported in file order.
  const jobs = files.flatMap((file) => targets.map((macos) => ({ file, macos })));
  const results = await runAll(jobs.map(({ file, macos }) => () => compile(clang, clangArgs(file, generatedDir, macos))),
    Math.max(1, Number(process.env.CHECK_METAL_JOBS) || availableParallelism()));
  let failed = 0;
  for (const file of files) {
    const shown = relative(process.cwd(), file) || file;
    const problems = [];
    jobs.forEach(({ file: f, macos }, i) => {
      if (f !== file) return;
      const r = results[i];
      const output = r.output.trim();
      if (r.status !== 0 || output !== '') {
        problems.push(`at macOS ${macos}:\n${output || `${clang} exited with ${r.status}`}`);
      }
    });
    if (problems.length === 0) {
      console.log(`ok      ${shown}`);
    } else {
      failed += 1;
      console.log(`FAILED  ${shown}`);
      console.error(problems.join('\n'));
    }
  }
  rmSync(generatedDir, { recursive: true, force: true });
  const summary = `check:metal: ${files.length - failed} of ${files.length} files type-check ` +
    `(${clang}, arm64-apple-macos ${targets.join(' and ')}, declarations from test/metal-sdk)`;
  if (failed > 0) {
    console.error(`${summary}; ${failed} FAILED`);
    return 1;
  }
  console.log(summary);
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
