// The metal backend compiles each kernel alone on first use (native/metal/shader_library.mm): the
// library's source with MTO_ONE_KERNEL defined and the kernel's MTO_KERNEL_INSTANCE_ONE line
// appended (core/shader_source.h one_kernel_source), the lines listed by
// scripts/kernel-instances.mjs, a small expander of the shaders' instance macros. Proven here
// against clang's own preprocessor, run over the real shaders at each library's MSL version with
// the harness's metal_stdlib (where an instance expands to a registration naming the kernel and
// its template): the expander lists exactly the kernels the library defines, and a one-kernel
// source defines that kernel alone, the same template specialisation as the whole library.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBinding } from '../lib/native';
import { shaderLibraries, textWithIncludes } from '../scripts/embed-shaders.mjs';
import { kernelInstances } from '../scripts/kernel-instances.mjs';

const root = resolve(__dirname, '..');
const missing = spawnSync('clang++-19', ['--version']).status !== 0;
const scratch = mkdtempSync(join(tmpdir(), 'mto-instances-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Internal {
  expandShader(name: string, files: Record<string, string>): string;
  oneKernelSource(library: string, instance: string): string;
}
const internal = (loadBinding() as unknown as { _internal: Internal })._internal;
const files: Record<string, string> = Object.fromEntries(
  readdirSync(join(root, 'shaders')).filter((f) => /\.(metal|h)$/.test(f))
    .map((f) => [f, readFileSync(join(root, 'shaders', f), 'utf8')]),
);

interface Library { stem: string; file: string; std: string }
interface Instance { name: string; line: string }

/** Kernel name -> the specialisation it instantiates, from clang -E of `path` at `std`. */
function preprocessed(path: string, std: string): Map<string, string> {
  const version = std === 'metal3.1' ? 310 : std === 'metal4.0' ? 400 : 410;
  const r = spawnSync('clang++-19', ['-E', '-P', '-x', 'c++', `-std=${version === 310 ? 'c++14' : 'c++20'}`,
    `-D__METAL_VERSION__=${version}`, '-Iemulator/shim', '-Iemulator/runtime', '-Ishaders', path],
  { cwd: root, encoding: 'utf8', maxBuffer: 256 << 20 });
  expect(r.status, r.stderr).toBe(0);
  // The harness's MTOH_KERNEL_INSTANCE: `template decltype(f<...>) f<...>; static ...Registrar<...>
  // mtoh_registrar_N(MTOH_LIBRARY, MTOH_VARIANT, "name" "pieces");`
  const out = new Map<string, string>();
  const re = /template decltype\(([^()]*)\)[^;]*;\s*static ::mtoh::KernelRegistrar<[^;]*?mtoh_registrar_\d+\(MTOH_LIBRARY, MTOH_VARIANT,((?:\s*"[^"]*")+)\)/g;
  for (const m of r.stdout.matchAll(re)) {
    const name = [...m[2].matchAll(/"([^"]*)"/g)].map((s) => s[1]).join('');
    expect(out.has(name), `${name} registered twice`).toBe(false);
    out.set(name, m[1].trim());
  }
  return out;
}

const libraries = shaderLibraries() as Library[];

describe.skipIf(missing)('kernel instances (one kernel per compile)', () => {
  for (const lib of libraries) {
    it(`${lib.stem}: the listed instances are the kernels the library defines, and one compiles alone`, () => {
      const whole = preprocessed(`shaders/${lib.file}`, lib.std);
      const listed = kernelInstances(textWithIncludes(lib.file)) as Instance[];
      expect(listed.map((k) => k.name).sort()).toEqual([...whole.keys()].sort());

      const source = internal.expandShader(lib.file, files);
      // The first, a middle and the last kernel (every kernel would take minutes of clang -E).
      const picks = listed.length === 0 ? [] : [...new Set([0, listed.length >> 1, listed.length - 1])].map((i) => listed[i]);
      for (const k of picks) {
        const path = join(scratch, `${lib.stem}-${k.name}.metal`);
        writeFileSync(path, internal.oneKernelSource(source, k.line));
        const alone = preprocessed(path, lib.std);
        expect([...alone.keys()], k.name).toEqual([k.name]);
        expect(alone.get(k.name)).toBe(whole.get(k.name));
      }
      // Without an instance line: no template kernel at all (plain kernels stay: group_rows).
      const path = join(scratch, `${lib.stem}-none.metal`);
      writeFileSync(path, internal.oneKernelSource(source, ''));
      expect(preprocessed(path, lib.std).size).toBe(0);
    });
  }

  it('the expander joins names, substitutes parameters and stringizes them as the preprocessor does', () => {
    const text = [
      '#define INNER(T, tname, D) MTO_KERNEL_INSTANCE("k_" tname "_d" #D, kern, T, D)',
      '#define OUTER(T, tname) INNER(T, tname, 64) \\',
      '  INNER(T, tname, 128)',
      '// OUTER(float, "no") in a comment is not an instance',
      'OUTER(float, "f32")',
      'MTO_KERNEL_INSTANCE("plain", other, half)',
    ].join('\n');
    expect(kernelInstances(text)).toEqual([
      { name: 'k_f32_d64', line: 'MTO_KERNEL_INSTANCE_ONE("k_f32_d64", kern, float, 64)' },
      { name: 'k_f32_d128', line: 'MTO_KERNEL_INSTANCE_ONE("k_f32_d128", kern, float, 128)' },
      { name: 'plain', line: 'MTO_KERNEL_INSTANCE_ONE("plain", other, half)' },
    ]);
    expect(() => kernelInstances('MTO_KERNEL_INSTANCE("a", f, int)\nMTO_KERNEL_INSTANCE("a", g, int)')).toThrow(/twice/);
  });
});
