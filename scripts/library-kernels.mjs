#!/usr/bin/env node
// Which kernels a shader library really defines at the MSL version it is compiled at, from its
// preprocessed text: every MTO_KERNEL_INSTANCE (shaders/kernel_abi.h) leaves a
// `[[host_name("...")]]` behind, unless an `#if __METAL_VERSION__` or feature guard removed it. A
// library compiled below the version its kernels need compiles cleanly to nothing, so "it
// compiled" proves little; the macOS workflow runs this on `xcrun metal -E` output to check that
// every kernel the dispatch plans name is there.
//
//   node scripts/library-kernels.mjs PREPROCESSED STEM PLANNED
//     PLANNED: lines "library kernel" (the plans' choices, _internal.planLibraries()). Prints
//     what is present; exits 1 naming the planned kernels of STEM that are missing.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// Kernel names in preprocessed MSL: template instances by their host names (adjacent string
// literals such as "qlinear_gemm_" "mxfp4" "_f16" join), plain kernels by their function names.
export function hostNames(preprocessed) {
  const names = new Set();
  for (const m of preprocessed.matchAll(/host_name\(((?:\s*"[^"]*")+)\s*\)/g)) {
    names.add([...m[1].matchAll(/"([^"]*)"/g)].map((s) => s[1]).join(''));
  }
  for (const m of preprocessed.matchAll(/(?:\[\[\s*kernel\s*\]\]|\bkernel)\s+void\s+(\w+)\s*\(/g)) names.add(m[1]);
  return names;
}

// The planned kernels of library `stem` missing from `preprocessed`.
export function missingKernels(preprocessed, stem, plannedLines) {
  const present = hostNames(preprocessed);
  const planned = [...new Set(plannedLines.map((l) => l.trim().split(/\s+/)).filter(([lib, k]) => lib === stem && k)
    .map(([, k]) => k))];
  return { present: present.size, planned: planned.length, missing: planned.filter((k) => !present.has(k)) };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [file, stem, plannedFile] = process.argv.slice(2);
  if (!plannedFile) {
    console.error('usage: library-kernels.mjs PREPROCESSED STEM PLANNED');
    process.exitCode = 2;
  } else {
    const r = missingKernels(readFileSync(file, 'utf8'), stem, readFileSync(plannedFile, 'utf8').split('\n'));
    console.log(`${stem}: ${r.present} kernels defined, ${r.planned - r.missing.length} of ${r.planned} planned present`);
    if (r.missing.length > 0) {
      console.log(`${stem}: MISSING ${r.missing.join(', ')}`);
      process.exitCode = 1;
    }
  }
}
