// The metal backend compiles its kernels from text embedded in the addon: scripts/embed-shaders.mjs
// writes every shaders/*.metal and *.h into a header, and core/shader_source.cc inlines our own
// headers into one source per library. Proven here on Linux: the header, compiled by a C++
// compiler, holds exactly the bytes of the files; and every line of an expanded library is the
// line of the file and line number its #line directives claim.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBinding } from '../lib/native';
import { shaderLibraries, textWithIncludes } from '../scripts/embed-shaders.mjs';
import { kernelInstances } from '../scripts/kernel-instances.mjs';

const root = resolve(__dirname, '..');
const shaderDir = join(root, 'shaders');
const scratch = mkdtempSync(join(tmpdir(), 'mto-embed-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const files: Record<string, string> = Object.fromEntries(
  readdirSync(shaderDir).filter((f) => /\.(metal|h)$/.test(f)).map((f) => [f, readFileSync(join(shaderDir, f), 'utf8')]),
);
interface Internal {
  expandShader(name: string, files: Record<string, string>): string;
  planLibraries(): { op: string; tier: string; library: string; kernel: string }[];
  mslVersion(tier: string): { version: string; raw: number };
}
const internal = (loadBinding() as unknown as { _internal: Internal })._internal;
const mslRaw = (version: string) => {
  const [major, minor] = version.split('.').map(Number);
  return major * 65536 + minor;
};

describe('embedded shaders', () => {
  it('the generated header, compiled as C++, holds every shader file byte for byte', () => {
    const header = join(scratch, 'shaders_embedded.h');
    let r = spawnSync(process.execPath, [join(root, 'scripts', 'embed-shaders.mjs'), header], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    // A program that writes each embedded entry to <dir>/<name>, so the compiler's reading of the
    // literals is what gets compared (escaping, raw-string delimiters, sizes).
    const program = join(scratch, 'dump.cc');
    writeFileSync(program, `#include <cstdio>
#include <cstring>
#include <string>
#include "shaders_embedded.h"
int main(int, char** argv) {
  for (const auto& f : mto::shaders::kEmbeddedFiles) {
    if (std::strlen(f.text) != f.size) return 3;
    std::FILE* out = std::fopen((std::string(argv[1]) + "/" + f.name).c_str(), "wb");
    if (!out || std::fwrite(f.text, 1, f.size, out) != f.size) return 2;
    std::fclose(out);
  }
  std::FILE* libs = std::fopen((std::string(argv[1]) + "/libraries.txt").c_str(), "wb");
  if (!libs) return 2;
  for (const auto& l : mto::shaders::kEmbeddedLibraries) std::fprintf(libs, "%s %d.%d\\n", l.stem, l.msl_major, l.msl_minor);
  std::fclose(libs);
  std::FILE* kernels = std::fopen((std::string(argv[1]) + "/kernels.txt").c_str(), "wb");
  if (!kernels) return 2;
  for (const auto& k : mto::shaders::kEmbeddedKernels) std::fprintf(kernels, "%s\\t%s\\t%s\\n", k.stem, k.name, k.instance);
  std::fclose(kernels);
  return 0;
}
`);
    const exe = join(scratch, 'dump');
    r = spawnSync('c++', ['-std=c++17', '-I', scratch, program, '-o', exe], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const outDir = mkdtempSync(join(scratch, 'out-'));
    r = spawnSync(exe, [outDir], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    const dumped = readdirSync(outDir).filter((f) => f !== 'libraries.txt' && f !== 'kernels.txt').sort();
    expect(dumped).toEqual(Object.keys(files).sort());
    for (const name of dumped) expect(readFileSync(join(outDir, name), 'utf8'), name).toBe(files[name]);
    for (const line of readFileSync(join(outDir, 'libraries.txt'), 'utf8').trim().split('\n')) {
      const [stem, version] = line.split(' ');
      embeddedLibraries[stem] = version;
    }
    // The one-kernel instance lines (native/metal/shader_library.mm), as the expander lists them.
    const expected = (shaderLibraries() as { stem: string; file: string }[]).flatMap(({ stem, file }) =>
      (kernelInstances(textWithIncludes(file)) as { name: string; line: string }[]).map((k) => `${stem}\t${k.name}\t${k.line}`));
    expect(readFileSync(join(outDir, 'kernels.txt'), 'utf8').trim().split('\n')).toEqual(expected);
  });

  // The MSL version each library is compiled at (run time and precompiled metallib alike), as
  // the header the addon is built with says; filled by the test above.
  const embeddedLibraries: Record<string, string> = {};

  // What a file needs, judged from the APIs it calls (not the markers the generator looks for):
  // scale-plane tensors are MSL 4.1, matmul2d and the other TensorOps MSL 4.0, the rest 3.1
  // (bfloat). Comments do not count (matmul.metal names matmul2d in one).
  function neededVersion(library: string): string {
    const text = [...closure(library)].map((f) => files[f]).join('\n')
      .replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');
    // Cooperative left inputs: not in the macOS 26.0/26.1 headers, in 27.0's (docs/design/VERIFY.md).
    if (/tensor_blockwise|tensor_plane_scales|get_left_input_cooperative_tensor|is_compatible_as_left_input/.test(text)) return '4.1';
    if (/mpp::tensor_ops|matmul2d/.test(text)) return '4.0';
    return '3.1';
  }

  it('every shaders/*.metal is an embedded library, at the MSL version its kernels need', () => {
    const metal = Object.keys(files).filter((f) => f.endsWith('.metal')).map((f) => f.replace(/\.metal$/, ''));
    expect(Object.keys(embeddedLibraries).sort()).toEqual(metal.sort());
    for (const stem of metal) expect(embeddedLibraries[stem], stem).toBe(neededVersion(`${stem}.metal`));
    // The three kinds, by name: a wrong rule cannot hide behind an empty set.
    expect(embeddedLibraries).toMatchObject({
      qlinear: '3.1', qlinear_tensorops: '4.0', qlinear_tensorops_mx: '4.1', attention_tensorops: '4.0',
      attention_tensorops_mx: '4.1',
    });
    // The macOS workflow and build-metallib.mjs read the same table.
    const r = spawnSync(process.execPath, [join(root, 'scripts', 'embed-shaders.mjs'), '--libraries'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n').sort()).toEqual(
      Object.entries(embeddedLibraries).map(([stem, v]) => `shaders/${stem}.metal metal${v}`).sort());
  });

  it('every library a dispatch plan picks is embedded, at a version its tier compiles', () => {
    const rows = internal.planLibraries();
    const used = new Set(rows.map((r) => r.library));
    // Every library is reachable from some plan (none embedded for nothing) ...
    expect([...used].sort()).toEqual(Object.keys(embeddedLibraries).sort());
    for (const r of rows) {
      // ... and a plan never asks a tier for a library above the MSL version the tier's probe
      // proved (simdgroup 3.1, tensorops 4.0, tensorops-mx 4.1).
      expect(embeddedLibraries[r.library], `${r.op} on ${r.tier}: ${r.library}`).toBeDefined();
      expect(mslRaw(embeddedLibraries[r.library]), `${r.op} on ${r.tier}: ${r.library}.${r.kernel}`)
        .toBeLessThanOrEqual(internal.mslVersion(r.tier).raw);
    }
    // The new kernels are planned where the brief puts them.
    const on = (tier: string, library: string) => rows.some((r) => r.tier === tier && r.library === library);
    expect(on('tensorops-mx', 'qlinear_tensorops_mx')).toBe(true);
    expect(on('tensorops', 'qlinear_tensorops_mx')).toBe(false);
    expect(on('simdgroup', 'matmul')).toBe(true);
    expect(on('tensorops', 'matmul_tensorops')).toBe(true);
    expect(on('tensorops', 'attention_tensorops')).toBe(true);
    // Cooperative left inputs (MSL 4.1) only where macOS 27 is certain: tensorops-mx.
    expect(on('tensorops-mx', 'attention_tensorops_mx')).toBe(true);
    expect(on('tensorops', 'attention_tensorops_mx')).toBe(false);
    expect(on('tensorops-mx', 'attention_tensorops')).toBe(false);
    // The model ops' kernels (MSL 3.1) run on every Metal tier, every dtype (copy: every element size).
    for (const tier of ['simdgroup', 'tensorops', 'tensorops-mx']) {
      for (const library of ['elementwise', 'norm', 'rope', 'softmax', 'copy']) expect(on(tier, library), `${tier} ${library}`).toBe(true);
    }
    const kernels = new Set(rows.map((r) => `${r.library} ${r.kernel}`));
    for (const dt of ['f32', 'f16', 'bf16']) {
      for (const k of [`elementwise elementwise_unary_${dt}`, `norm norm_rows_${dt}`, `rope rope_rows_${dt}`, `softmax softmax_rows_${dt}`]) {
        expect(kernels.has(k), k).toBe(true);
      }
      for (const b of ['f32', 'f16', 'bf16']) {
        expect(kernels.has(`elementwise elementwise_binary_${dt}_${b}`), `binary ${dt} ${b}`).toBe(true);
        expect(kernels.has(`elementwise elementwise_binary_strided_${dt}_${b}`), `strided binary ${dt} ${b}`).toBe(true);
      }
    }
    for (const bits of [8, 16, 32]) expect(kernels.has(`copy copy_strided_b${bits}`), `copy b${bits}`).toBe(true);
  });

  // Walks an expanded source and checks every line against the file and line the last #line
  // directive names. A line may differ only where the original is a quoted #include: the
  // expansion replaces it (the included file follows, or an empty line when already inlined).
  function checkLineMapping(expanded: string): Set<string> {
    const seen = new Set<string>();
    let file = '';
    let line = 0;
    for (const text of expanded.split('\n').slice(0, -1)) {
      const directive = /^#line (\d+) "([^"]+)"$/.exec(text);
      if (directive) {
        line = Number(directive[1]);
        file = directive[2];
        seen.add(file);
        continue;
      }
      const original = files[file].split('\n')[line - 1];
      if (/^\s*#\s*include\s*"/.test(original)) expect(text, `${file}:${line}`).toBe('');
      else expect(text, `${file}:${line}`).toBe(original);
      line += 1;
    }
    return seen;
  }

  // Every quoted include reachable from `name`, found from the files themselves.
  function closure(name: string, out = new Set<string>()): Set<string> {
    out.add(name);
    for (const m of files[name].matchAll(/^\s*#\s*include\s*"([^"]+)"/gm)) if (!out.has(m[1])) closure(m[1], out);
    return out;
  }

  for (const library of Object.keys(files).filter((f) => f.endsWith('.metal'))) {
    it(`${library}: our headers inlined, each once, every line traceable to its file and line`, () => {
      const expanded = internal.expandShader(library, files);
      expect(expanded).not.toMatch(/^\s*#\s*include\s*"/m);
      const seen = checkLineMapping(expanded);
      expect([...seen].sort()).toEqual([...closure(library)].sort());
      for (const header of closure(library)) {
        if (header === library) continue;
        expect(expanded.split(`#line 1 "${header}"\n`).length - 1, header).toBe(1);
      }
      expect(expanded).toContain('#include <metal_stdlib>');  // system headers stay for the compiler
    });
  }

  // The macOS workflow's check that a library compiled at its std really holds the planned kernels
  // (scripts/library-kernels.mjs over `xcrun metal -E`), run here over the C preprocessor with
  // empty system headers: <metal_tensor> defines __HAVE_TENSOR_MULTIPLANE__ from MSL 4.1 on, as
  // the macOS 27 toolchain does (test/msl/README.md).
  function preprocess(file: string, version: string): string {
    const inc = join(scratch, 'stub-include');
    mkdirSync(join(inc, 'MetalPerformancePrimitives'), { recursive: true });
    writeFileSync(join(inc, 'metal_stdlib'), '');
    writeFileSync(join(inc, 'metal_tensor'), '#if __METAL_VERSION__ >= 410\n#define __HAVE_TENSOR_MULTIPLANE__ 1\n#endif\n');
    writeFileSync(join(inc, 'MetalPerformancePrimitives', 'MetalPerformancePrimitives.h'), '');
    const r = spawnSync('c++', ['-E', '-P', '-x', 'c++', '-nostdinc', `-D__METAL_VERSION__=${version.replace('.', '')}0`,
      '-I', inc, '-I', shaderDir, join(shaderDir, file)], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    return r.stdout;
  }

  it('at its own MSL version each library defines every kernel the plans name; below it, the check says what is missing', async () => {
    const { missingKernels } = await import('../scripts/library-kernels.mjs');
    const planned = internal.planLibraries().map((r) => `${r.library} ${r.kernel}`);
    for (const [stem, version] of Object.entries(embeddedLibraries)) {
      const r = missingKernels(preprocess(`${stem}.metal`, version), stem, planned);
      expect(r.missing, `${stem} at MSL ${version}`).toEqual([]);
      expect(r.planned, stem).toBeGreaterThan(0);
    }
    // A TensorOps library at 3.1, or the scale-plane one at 4.0, preprocesses to no kernels:
    // the reason the workflow compiles each file only at its version and then looks inside.
    const low = missingKernels(preprocess('qlinear_tensorops.metal', '3.1'), 'qlinear_tensorops', planned);
    expect(low.present).toBe(0);
    expect(low.missing.length).toBe(low.planned);
    expect(missingKernels(preprocess('qlinear_tensorops_mx.metal', '4.0'), 'qlinear_tensorops_mx', planned).present).toBe(0);
  });

  it('precompiled metallibs are named by the hash the header embeds; without xcrun none are built', () => {
    const header = readFileSync(join(scratch, 'shaders_embedded.h'), 'utf8');
    const hash = /kShaderSetHash = "([0-9a-f]{16})"/.exec(header)?.[1];
    expect(hash).toBeDefined();
    const out = join(scratch, 'metallib');
    const r = spawnSync(process.execPath, [join(root, 'scripts', 'build-metallib.mjs'), out], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const manifest = readFileSync(join(out, 'manifest.txt'), 'utf8');
    expect(manifest.split('\n')[0]).toBe(`shader set ${hash}`);
    if (process.platform !== 'darwin') {
      expect(manifest).toContain(`not built: no Metal compiler on ${process.platform}`);
      expect(readdirSync(out).filter((f) => f.endsWith('.metallib'))).toEqual([]);
    }
  });

  // Each TensorOps tier's probe compiles every TensorOps API its libraries call, so that a macOS
  // whose headers lack one drops the tier at open() with the compiler's message, instead of
  // failing a library later (native/metal/probe_sources.h; tensorops-mx also needs the tensorops
  // probe, core/tiers.cc).
  const tensorOpsApi: [string, RegExp][] = [
    'matmul2d', 'matmul2d_descriptor', 'multiply_accumulate', 'execution_simdgroups', 'execution_simdgroup', 'dynamic_extent',
    'dynamic_length_v', 'tensor_inline', 'tensor_handle', 'dextents', 'get_destination_cooperative_tensor',
    'get_row_reduction_destination_cooperative_tensor', 'reduce_rows', 'reduction_operation', 'map_iterator', 'get_iterator',
    'get_multidimensional_index', 'is_valid_element', 'get_capacity', 'is_compatible_as_left_input',
    'get_left_input_cooperative_tensor', 'tensor_blockwise', 'tensor_plane_scales', 'metal_fp8_e4m3_format',
    'metal_fp8_e5m2_format', 'metal_fp4_e2m1_format', 'metal_fp8_ue8m0_format', 'data_handle_type',
  ].map((name): [string, RegExp] => [name, new RegExp(`\\b${name}\\b`)]);
  for (const member of ['slice', 'store', 'load']) tensorOpsApi.push([`.${member}()`, new RegExp(`\\.${member}\\s*\\(`)]);
  const codeOf = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');
  const apiMissing = (used: string, probe: string) =>
    tensorOpsApi.filter(([, re]) => re.test(codeOf(used)) && !re.test(codeOf(probe))).map(([name]) => name);

  it('each TensorOps tier\'s probe compiles every TensorOps API the libraries planned on that tier call', async () => {
    const { embeddedMslSources } = await import('../scripts/msl-sources.mjs');
    const probes = Object.fromEntries(embeddedMslSources().map((m: { name: string; text: string }) => [m.name, m.text]));
    const probeText: Record<string, string> = {
      tensorops: probes.probe_tensorops, 'tensorops-mx': `${probes.probe_tensorops}\n${probes.probe_tensorops_mx}`,
    };
    const rows = internal.planLibraries();
    for (const tier of ['tensorops', 'tensorops-mx']) {
      const libraries = [...new Set(rows.filter((r) => r.tier === tier).map((r) => r.library))]
        .filter((l) => embeddedLibraries[l] !== '3.1');
      expect(libraries.length, tier).toBeGreaterThanOrEqual(tier === 'tensorops' ? 3 : 4);
      for (const library of libraries) {
        const text = [...closure(`${library}.metal`)].map((f) => files[f]).join('\n');
        expect(apiMissing(text, probeText[tier]), `${library} on ${tier}`).toEqual([]);
      }
    }
    // The check bites: the probe as it was (one bare matmul2d into a device tensor) misses what
    // attention_tensorops calls.
    const bare = 'tensor<device half, dextents<int32_t, 2>, tensor_inline> t(a, dextents<int32_t, 2>(16, 16));\n' +
      'matmul2d<matmul2d_descriptor(16, 16, dynamic_length_v<int>), execution_simdgroups<4>> op; op.run(t, t, t);';
    const attention = [...closure('attention_tensorops.metal')].map((f) => files[f]).join('\n');
    expect(apiMissing(attention, bare)).toEqual(expect.arrayContaining(['reduce_rows', 'map_iterator',
      'get_row_reduction_destination_cooperative_tensor', 'execution_simdgroup', 'multiply_accumulate']));
    // ... and the tensorops probe alone misses what the tensorops-mx attention adds (cooperative
    // left inputs, K as a scale-plane tensor).
    expect(apiMissing([...closure('attention_tensorops_mx.metal')].map((f) => files[f]).join('\n'), probes.probe_tensorops))
      .toEqual(['tensor_handle', 'is_compatible_as_left_input', 'get_left_input_cooperative_tensor', 'tensor_blockwise',
        'tensor_plane_scales', 'metal_fp8_e4m3_format', 'metal_fp8_e5m2_format', 'metal_fp8_ue8m0_format']);
  });

  it('a missing include names the including file and the missing one', () => {
    let err: unknown;
    try {
      internal.expandShader('a.metal', { 'a.metal': '#include "b.h"\n', 'b.h': '#include "gone.h"\n' });
    } catch (e) {
      err = e;
    }
    expect((err as { code: string }).code).toBe('E_BACKEND');
    expect((err as Error).message).toBe("shader file 'b.h' includes 'gone.h', which is not embedded in this build");
  });
});
