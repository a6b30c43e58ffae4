// Builds dist/: TypeScript to CommonJS (dist/cjs) plus an ES module entry (dist/esm) that
// re-exports the same objects, so `import` and `require` share one instance of every class
// (instanceof TensorOpsError holds across both).
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync(join(root, 'dist'), { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json')], { stdio: 'inherit' });
writeFileSync(join(root, 'dist/cjs/package.json'), '{ "type": "commonjs" }\n');

// The ESM entry's export names are read from the CommonJS build, never listed by hand.
const cjs = createRequire(import.meta.url)(join(root, 'dist/cjs/index.js'));
const names = Object.keys(cjs).filter((n) => n !== 'default' && n !== '__esModule').sort();
mkdirSync(join(root, 'dist/esm'), { recursive: true });
writeFileSync(join(root, 'dist/esm/package.json'), '{ "type": "module" }\n');
writeFileSync(
  join(root, 'dist/esm/index.js'),
  `import cjs from '../cjs/index.js';\nexport const { ${names.join(', ')} } = cjs;\nexport default cjs;\n`,
);
// `import mto from 'metal-tensorops'` works at run time (the default export above): type it too.
writeFileSync(
  join(root, 'dist/esm/index.d.ts'),
  `export * from '../cjs/index.js';\nimport * as cjs from '../cjs/index.js';\nexport default cjs;\n`,
);
console.log(`dist/ built (${names.length} exports: ${names.join(', ')})`);
