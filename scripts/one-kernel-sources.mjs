#!/usr/bin/env node
// Writes, for each shader library, the source the metal backend compiles for one of its kernels
// alone (core/shader_source.h one_kernel_source over the embedded text, the kernel's line from
// scripts/kernel-instances.mjs): the first kernel the dispatch plans name in it, else its first
// instance. The macOS workflow compiles each with Apple's `xcrun metal` at the library's std, so
// the per-kernel compile is proven by Apple's compiler, not only by clang's preprocessor
// (test/kernel-instances.test.ts). Needs the built addon.
//
//   node scripts/one-kernel-sources.mjs DIR     writes DIR/<stem>.one.metal, prints "FILE STD" lines
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { shaderLibraries, textWithIncludes } from './embed-shaders.mjs';
import { kernelInstances } from './kernel-instances.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { _internal: internal } = createRequire(import.meta.url)(join(root, 'build', 'Release', 'metal_tensorops.node'));

const dir = resolve(process.argv[2] ?? '');
if (!process.argv[2]) {
  console.error('usage: one-kernel-sources.mjs DIR');
  process.exit(2);
}
mkdirSync(dir, { recursive: true });
const files = Object.fromEntries(readdirSync(join(root, 'shaders')).filter((f) => /\.(metal|h)$/.test(f))
  .map((f) => [f, readFileSync(join(root, 'shaders', f), 'utf8')]));
const planned = internal.planLibraries();
for (const { stem, file, std } of shaderLibraries()) {
  const instances = kernelInstances(textWithIncludes(file));
  const wanted = planned.find((p) => p.library === stem && instances.some((k) => k.name === p.kernel));
  const instance = wanted ? instances.find((k) => k.name === wanted.kernel) : instances[0];
  const out = join(dir, `${stem}.one.metal`);
  writeFileSync(out, internal.oneKernelSource(internal.expandShader(file, files), instance?.line ?? ''));
  console.log(`${out} ${std}`);
}
