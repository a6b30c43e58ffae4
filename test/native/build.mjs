// Builds test/native/cpu_kernels_check for one target from the cpu backend's own sources
// (sources.json's native/core, native/kernels and native/cpu entries, with the addon's compile
// flags), so that the kernels can run without Node: natively, for arm64 under qemu-user (NEON
// paths), and for 64-bit Windows under wine (the x86-64 code as built against Windows headers,
// LLP64 and its C runtime).
// A compile-only target (win64-clang) builds every addon source, native/addon included.
//
// Incremental: an object is rebuilt when it is missing, when its compile command changed, or when
// a file its dependency list (-MD) names is newer. Output under build/native-check/<target>/.
//
//   node test/native/build.mjs [native|arm64|win64]     prints the program's path on success
//   node test/native/build.mjs win64-clang              compiles only; prints the object folder
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const require = createRequire(import.meta.url);
const config = JSON.parse(readFileSync(join(root, 'sources.json'), 'utf8'));

export const targets = {
  native: { cxx: 'g++', runner: [] },
  // Debian: g++-aarch64-linux-gnu and qemu-user (.ci/run installs both).
  arm64: { cxx: 'aarch64-linux-gnu-g++', runner: ['qemu-aarch64', '-L', '/usr/aarch64-linux-gnu'] },
  // Stands in for the win32-x64 prebuild, which MSVC compiles: Windows headers, LLP64 and the
  // Windows C runtime, and MTO_PORTABLE_ONLY (core/portable.h) for the code paths MSVC takes (no
  // GNU vector types, no target-attribute kernels). -Wpedantic -Wvla: no GNU-only syntax;
  // -Wframe-larger-than: no large stack frames (Windows threads get 1 MiB stacks, Linux 8 MiB).
  // Debian: g++-mingw-w64-x86-64-posix (std::thread needs the posix thread model) and wine64.
  // Linked statically, so wine needs none of mingw's DLLs.
  win64: {
    cxx: 'x86_64-w64-mingw32-g++-posix',
    cflags: ['-DMTO_PORTABLE_ONLY', '-Wpedantic', '-Wvla', '-Wframe-larger-than=65536', '-Werror'],
    ldflags: ['-static'],
    exe: '.exe',
    runner: ['/usr/lib/wine/wine64'],
  },
  // What the win32-x64 prebuild runs (clang-cl: core/portable.h's MTO_X86_KERNELS): the AVX2 and
  // AVX-512 kernels under the Windows x64 calling convention (callee-saved xmm6-15, 16-byte stack
  // alignment realigned for spilled vectors) chosen by our CPUID detection, built by clang for
  // mingw-w64 (its linker and C runtime are here; MSVC's are not) and run under wine.
  'win64-kernels': {
    cxx: 'clang++-19',
    cflags: ['--target=x86_64-w64-windows-gnu', '-Wpedantic', '-Wframe-larger-than=65536', '-Werror'],
    ldflags: ['--target=x86_64-w64-windows-gnu', '-static'],
    exe: '.exe',
    runner: ['/usr/lib/wine/wine64'],
  },
  // The thread pool alone under ThreadSanitizer (Debian's g++ brings libtsan): data races and
  // use of a parallel_for's job after it returned, in the checks of thread_pool_check.cc.
  tsan: {
    cxx: 'g++',
    cflags: ['-O1', '-g', '-fsanitize=thread'],
    ldflags: ['-fsanitize=thread'],
    units: ['native/cpu/thread_pool.cc', 'test/native/thread_pool_check.cc', 'test/native/thread_pool_main.cc'],
    program: 'thread_pool_check',
    runner: [],
  },
  // clang on Windows (mingw-w64 flavour, Debian's mingw-w64 headers), on clang's own paths (GNU
  // vector types, target-attribute kernels), and the addon's Node-API glue against Windows
  // headers. Compile-only (so -O0): nothing here can load a .node for Windows.
  'win64-clang': {
    cxx: 'clang++-19',
    cflags: ['--target=x86_64-w64-windows-gnu', '-O0', '-Wpedantic', '-Werror',
      ...config.defines.map((d) => `-D${d}`),
      `-I${require('node-addon-api').include_dir}`, `-I${require('node-api-headers').include_dir}`],
    addon: true,
  },
};

const flags = ['-std=c++17', '-O3', '-fexceptions', '-pthread', '-Wall', '-Inative', '-Ishaders'];

function stale(obj, cmdFile, cmd) {
  if (!existsSync(obj) || !existsSync(cmdFile) || readFileSync(cmdFile, 'utf8') !== cmd) return true;
  const built = statSync(obj).mtimeMs;
  const deps = readFileSync(obj.replace(/\.o$/, '.d'), 'utf8').replace(/\\\n/g, ' ').split(/\s+/).slice(1);
  // resolve, not join: system headers are listed by absolute path.
  return deps.some((d) => d && (!existsSync(resolve(root, d)) || statSync(resolve(root, d)).mtimeMs > built));
}

/** Builds the check program for `target`; resolves to its path (an addon target: its folder). */
export async function build(target) {
  const { cxx, cflags = [], ldflags = [], exe: suffix = '', addon = false, units: only } = targets[target];
  const out = join(root, 'build', 'native-check', target);
  mkdirSync(out, { recursive: true });
  const { sources } = config;
  const units = only ?? (addon ? sources
    : [...sources.filter((s) => /^native\/(core|kernels|cpu)\//.test(s)), 'test/native/cpu_kernels_check.cc', 'test/native/thread_pool_check.cc']);
  const objects = units.map((s) => join(out, s.replace(/[/.]/g, '_') + '.o'));
  const queue = units.map((src, i) => ({ src, obj: objects[i] }));
  const worker = async () => {
    for (let job = queue.shift(); job; job = queue.shift()) {
      const args = [...flags, ...cflags, '-MD', '-c', job.src, '-o', job.obj];
      const cmdFile = job.obj.replace(/\.o$/, '.cmd');
      const cmd = [cxx, ...args].join(' ');
      if (!stale(job.obj, cmdFile, cmd)) continue;
      await run(cxx, args, { cwd: root, maxBuffer: 1 << 24 });
      writeFileSync(cmdFile, cmd);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, availableParallelism()) }, worker));
  if (addon) return out;
  const exe = join(out, (targets[target].program ?? 'cpu_kernels_check') + suffix);
  await run(cxx, ['-pthread', ...ldflags, '-o', exe, ...objects], { cwd: root });
  return exe;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  build(process.argv[2] ?? 'native').then((exe) => console.log(exe), (e) => {
    console.error(e.stderr || e.message);
    process.exit(1);
  });
}
