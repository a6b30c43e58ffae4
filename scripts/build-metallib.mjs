#!/usr/bin/env node
// macOS builds: compiles each shaders/<stem>.metal offline with `xcrun metal` into
// OUTDIR/<stem>-<hash>.metallib, next to the addon, so the metal backend loads machine-independent
// AIR instead of compiling MSL text at run time. <hash> is the hash of the exact shader sources
// embedded in the same build (embed-shaders.mjs shaderSetHash), so a stale metallib is never
// loaded. An optimisation only: without `xcrun metal`, or for a language version this Xcode does
// not have, nothing is written for that library and the addon compiles the embedded source.
//
//   node scripts/build-metallib.mjs OUTDIR
// Always exits 0; OUTDIR/manifest.txt says what was built and what was not, and why.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { shaderLibraries, shaderSetHash } from './embed-shaders.mjs';

const root = resolve(fileURLToPath(import.meta.url), '..', '..');

function xcrun(args) {
  return spawnSync('xcrun', ['-sdk', 'macosx', ...args], { encoding: 'utf8' });
}

export function buildMetallibs(outDir) {
  mkdirSync(outDir, { recursive: true });
  for (const f of readdirSync(outDir)) if (f.endsWith('.metallib')) rmSync(join(outDir, f));
  const hash = shaderSetHash();
  const lines = [`shader set ${hash}`];
  const probe = process.platform === 'darwin' ? xcrun(['metal', '--version']) : undefined;
  if (!probe || probe.status !== 0) {
    lines.push(`not built: ${process.platform === 'darwin' ? 'xcrun metal is not available' : `no Metal compiler on ${process.platform}`}; the addon compiles the embedded sources at run time`);
  } else {
    // Each library at the std the embedded table gives it (embed-shaders.mjs libraryStd), the
    // version the run-time compile of the same source uses.
    for (const { stem, file, std } of shaderLibraries()) {
      const air = join(outDir, `${stem}.air`);
      const lib = join(outDir, `${stem}-${hash}.metallib`);
      // -fno-fast-math: the kernels rely on -inf and exact exp2 (as the run-time compile does,
      // and as MLX builds its metallibs). A library the running OS cannot load is compiled from
      // the embedded source instead.
      let r = xcrun(['metal', `-std=${std}`, '-fno-fast-math',
        '-I', join(root, 'shaders'), '-c', join(root, 'shaders', file), '-o', air]);
      if (r.status === 0) r = xcrun(['metallib', air, '-o', lib]);
      rmSync(air, { force: true });
      lines.push(r.status === 0 ? `built ${stem} (${std})`
        : `not built ${stem} (${std}): ${(r.stderr || r.error?.message || '').trim().split('\n')[0]}`);
    }
  }
  writeFileSync(join(outDir, 'manifest.txt'), `${lines.join('\n')}\n`);
  return lines;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!process.argv[2]) {
    console.error('usage: build-metallib.mjs OUTDIR');
    process.exitCode = 2;
  } else {
    for (const line of buildMetallibs(resolve(process.argv[2]))) console.log(`metallib: ${line}`);
  }
}
