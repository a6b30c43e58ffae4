// Builds the emulator program of one user kernel (dev.kernel() on the cpu backend, issue #30):
// the kernel's MSL source translated to C++ by gen/gen_kernels.mjs, compiled with clang against
// the metal_stdlib shim (shim/) and linked with the runtime (runtime/) and main.cc: the same
// emulator the MSL harness (test/msl) tests our own shaders with. Run
// by lib/kernels/emulator.ts as a child process (so nothing of it runs on the caller's JS thread):
//
//   node emulator/build-kernel.mjs SOURCE.metal EXE CACHE_DIR [STD]
//
// STD is the MSL version the source is written in: metal3.1 (default), metal4.0 (the tensorops
// tier, whose <metal_tensor> and MetalPerformancePrimitives shim headers need it) or metal4.1 (the
// tensorops-mx tier: the shim's scale-plane tensors, tensor_blockwise, exist from 4.1 on).
//
// The runtime's objects are built once per compiler and runtime version into CACHE_DIR. Every file
// is written under a temporary name and renamed, so processes building the same kernel at once
// never see half a file. Exit status 1 with the compiler's message on stderr when the source does
// not compile; the message names the user's lines as `NAME.metal:LINE`.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { generate } from './gen/gen_kernels.mjs';

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const shim = join(root, 'emulator/shim');
const runtime = join(root, 'emulator/runtime');

// What the harness compiles the MSL 3.1 libraries with (test/msl/build.mjs); a user kernel is
// C++14-based MSL too, so C++17 in it is an error here as on a Mac.
const common = ['-O1', '-g0', '-pthread', '-fno-fast-math', '-w'];
const kernelFlags = [...common, '-std=c++14', '-D__METAL_VERSION__=310', `-I${shim}`, `-I${runtime}`];
// MSL 4.0 is C++17-based with class-type template arguments (matmul2d<matmul2d_descriptor(...)>),
// which clang takes as C++20: the harness's own flags for the tensorops tier (test/msl/build.mjs),
// at __METAL_VERSION__ 400, or 410 for tensorops-mx.
function kernelFlagsAt(version) {
  return kernelFlags.map((f) => (f === '-std=c++14' ? '-std=c++20' : f === '-D__METAL_VERSION__=310' ? `-D__METAL_VERSION__=${version}` : f));
}
const flagsByStd = {
  'metal3.1': kernelFlags,
  'metal4.0': kernelFlagsAt(400),
  'metal4.1': kernelFlagsAt(410),
};
const hostFlags = [...common, '-std=c++17', `-I${runtime}`];

const unique = () => `.${process.pid}.${Date.now()}.tmp`;

async function compile(cxx, flags, source, object) {
  const tmp = object + unique();
  await run(cxx, [...flags, '-c', source, '-o', tmp], { maxBuffer: 16 << 20 });
  renameSync(tmp, object);
}

/** The runtime's objects for this compiler, built once. */
async function runtimeObjects(cxx, cacheDir) {
  const sources = [...readdirSync(runtime).filter((f) => f.endsWith('.cc')).map((f) => join(runtime, f)), join(root, 'emulator/main.cc')];
  const hash = createHash('sha256').update(cxx).update(JSON.stringify(hostFlags));
  // main.cc's own header (the scale-plane tensor arguments) is part of main.o too.
  const headers = [...readdirSync(runtime).filter((f) => f.endsWith('.h')).map((f) => join(runtime, f)), join(root, 'emulator/tensor_arg.h')];
  for (const f of [...sources, ...headers]) {
    hash.update(f).update(readFileSync(f));
  }
  const dir = join(cacheDir, `runtime-${hash.digest('hex').slice(0, 16)}`);
  mkdirSync(dir, { recursive: true });
  const objects = sources.map((s) => join(dir, `${basename(s, '.cc')}.o`));
  await Promise.all(sources.map((s, i) => (existsSync(objects[i]) ? null : compile(cxx, hostFlags, s, objects[i]))));
  return objects;
}

async function main() {
  const [source, exe, cacheDir, std = 'metal3.1'] = process.argv.slice(2);
  const flags = flagsByStd[std];
  if (!flags) throw new Error(`build-kernel: STD must be ${Object.keys(flagsByStd).join(' or ')}; got ${std}`);
  const cxx = process.env.METAL_TENSOROPS_EMULATOR_CXX;  // set by lib/kernels/emulator.ts
  const name = basename(source, '.metal');
  const generated = exe + '.cc';
  writeFileSync(generated, generate(readFileSync(source, 'utf8'), { file: `${name}.metal`, library: 'user', variant: '' }));
  const kernelObject = exe + '.o';
  try {
    await compile(cxx, flags, generated, kernelObject);
  } catch (err) {
    // The compiler's own words; the generated file's name says nothing to the user.
    process.stderr.write(String(err.stderr || err.message));
    process.exit(1);
  }
  const objects = await runtimeObjects(cxx, cacheDir);
  const tmp = exe + unique();
  await run(cxx, ['-pthread', kernelObject, ...objects, '-o', tmp], { maxBuffer: 16 << 20 });
  renameSync(tmp, exe);
  rmSync(kernelObject, { force: true });
}

main().catch((err) => {
  process.stderr.write(`${err.stderr || err.stack || err}\n`);
  process.exit(1);
});
