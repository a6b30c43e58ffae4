// Where a user kernel runs without Metal: its MSL source built into an emulator program (the MSL
// harness that tests our own shaders: emulator/build-kernel.mjs), once per source, in a cache
// folder, by a child process (nothing of it on the JS thread). The emulator is for testing
// kernels on machines without a Mac, not for speed: every thread runs as a fiber, twice.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

import { TensorOpsError } from '../errors';
import { packageRoot } from '../native';

const root = packageRoot;
const builder = join(root, 'emulator', 'build-kernel.mjs');

/** The folder of built kernels: METAL_TENSOROPS_CACHE_DIR/emulator, else ~/.cache/metal-tensorops. */
export function emulatorCacheDir(): string {
  const base = process.env.METAL_TENSOROPS_CACHE_DIR
    || (process.env.XDG_CACHE_HOME ? join(process.env.XDG_CACHE_HOME, 'metal-tensorops') : '')
    || (homedir() ? join(homedir(), '.cache', 'metal-tensorops') : join(tmpdir(), 'metal-tensorops'));
  return join(base, 'emulator');
}

/** The C++ compiler the emulator is built with: METAL_TENSOROPS_EMULATOR_CXX, else clang++-19 on Linux, clang++ elsewhere. */
export function emulatorCompiler(): string {
  return process.env.METAL_TENSOROPS_EMULATOR_CXX || (process.platform === 'linux' ? 'clang++-19' : 'clang++');
}

let emulatorVersion: string | undefined;
/** A hash of the emulator's own sources (main.cc, the harness runtime and shim): part of each program's key. */
function version(): string {
  if (emulatorVersion) return emulatorVersion;
  const hash = createHash('sha256');
  const dirs = ['emulator', 'emulator/runtime', 'emulator/shim', 'emulator/gen'];
  for (const dir of dirs) {
    for (const f of readdirSync(join(root, dir)).sort()) {
      if (/\.(cc|h|mjs)$|^metal_|^Metal/.test(f) && !f.endsWith('.md')) {
        const path = join(root, dir, f);
        try { hash.update(f).update(readFileSync(path)); } catch { /* a folder */ }
      }
    }
  }
  return (emulatorVersion = hash.digest('hex'));
}

// One build per source at a time in this process; the builder's renames cover other processes.
const building = new Map<string, Promise<string>>();

/**
 * The emulator program of a kernel's MSL text, compiled as MSL `std` (metal3.1, or metal4.0 for
 * the tensorops tier: the TensorOps shim needs it; metal4.1 for tensorops-mx), built on first use. Rejects with E_KERNEL.
 */
export function emulatorProgram(name: string, msl: string, std: 'metal3.1' | 'metal4.0' | 'metal4.1'): Promise<string> {
  const compiler = emulatorCompiler();
  const hash = createHash('sha256').update(version()).update(compiler).update('\0').update(std).update('\0').update(msl)
    .digest('hex').slice(0, 24);
  const dir = emulatorCacheDir();
  const exe = join(dir, `${name}-${hash}`);
  let build = building.get(exe);
  if (!build) {
    build = existsSync(exe) ? Promise.resolve(exe) : runBuilder(name, msl, std, exe, dir, compiler);
    building.set(exe, build);
    build.catch(() => building.delete(exe));
  }
  return build;
}

function runBuilder(name: string, msl: string, std: string, exe: string, dir: string, compiler: string): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const source = `${exe}.metal`;
  writeFileSync(source, msl);
  return new Promise((resolve, reject) => {
    const env = { ...process.env, METAL_TENSOROPS_EMULATOR_CXX: compiler };
    execFile(process.execPath, [builder, source, exe, dir, std], { maxBuffer: 16 << 20, env }, (err, _stdout, stderr) => {
      if (!err) return resolve(exe);
      const said = String(stderr).trim();
      if (/ENOENT|not found/.test(said) && !/error:/.test(said)) {
        return reject(new TensorOpsError('E_BACKEND', `user kernels on the cpu backend need clang 17 or later to build the emulator (on Debian/Ubuntu: apt install clang-19), or METAL_TENSOROPS_EMULATOR_CXX naming one; building '${name}' said: ${said}`));
      }
      reject(new TensorOpsError('E_KERNEL', `kernel '${name}' does not compile:\n${said}`));
    });
  });
}
