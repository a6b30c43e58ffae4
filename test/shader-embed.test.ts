// The metal backend compiles its kernels from text embedded in the addon: scripts/embed-shaders.mjs
// writes every shaders/*.metal and *.h into a header, and core/shader_source.cc inlines our own
// headers into one source per library. Proven here on Linux: the header, compiled by a C++
// compiler, holds exactly the bytes of the files; and every line of an expanded library is the
// line of the file and line number its #line directives claim.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBinding } from '../lib/native';

const root = resolve(__dirname, '..');
const shaderDir = join(root, 'shaders');
const scratch = mkdtempSync(join(tmpdir(), 'mto-embed-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const files: Record<string, string> = Object.fromEntries(
  readdirSync(shaderDir).filter((f) => /\.(metal|h)$/.test(f)).map((f) => [f, readFileSync(join(shaderDir, f), 'utf8')]),
);
const internal = (loadBinding() as unknown as { _internal: { expandShader(name: string, files: Record<string, string>): string } })._internal;

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
  return 0;
}
`);
    const exe = join(scratch, 'dump');
    r = spawnSync('c++', ['-std=c++17', '-I', scratch, program, '-o', exe], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const outDir = mkdtempSync(join(scratch, 'out-'));
    r = spawnSync(exe, [outDir], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    const dumped = readdirSync(outDir).sort();
    expect(dumped).toEqual(Object.keys(files).sort());
    for (const name of dumped) expect(readFileSync(join(outDir, name), 'utf8'), name).toBe(files[name]);
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
