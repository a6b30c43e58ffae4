// The package as users get it: one source list for both builds, dual ESM/CJS entry points that
// share one set of classes, and a loader error that says what to do.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TensorOpsError } from '../lib/index';
import { loadBindingFrom } from '../lib/native';

const root = resolve(__dirname, '..');
const sources = JSON.parse(readFileSync(join(root, 'sources.json'), 'utf8')) as {
  sources: string[]; macos_sources: string[];
};

describe('build files', () => {
  it('sources.json lists every native source file, and only existing ones', () => {
    // Subfolders too (native/kernels/x86, arm, portable).
    const onDisk = ['addon', 'core', 'cpu', 'kernels', 'metal'].filter((dir) => existsSync(join(root, 'native', dir))).flatMap((dir) =>
      readdirSync(join(root, 'native', dir), { encoding: 'utf8', recursive: true }).map((f) => f.split(sep).join('/'))
        .filter((f) => /\.(cc|mm)$/.test(f)).map((f) => `native/${dir}/${f}`));
    expect([...sources.sources, ...sources.macos_sources].sort()).toEqual(onDisk.sort());
  });

  it('binding.gyp and CMakeLists.txt take their sources from sources.json only', () => {
    for (const file of ['binding.gyp', 'CMakeLists.txt']) {
      const text = readFileSync(join(root, file), 'utf8');
      expect(text, file).toContain('sources.json');
      expect(text, file).not.toMatch(/native\/\w+\/\w+\.(cc|mm)/);
    }
  });
});

describe('the npm package', () => {
  it('ships every script its install and build steps run (a build from the tarball needs them)', () => {
    const packed = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' })) as
      { files: { path: string }[] }[];
    const files = new Set(packed[0].files.map((f) => f.path));
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const used = new Set<string>();
    for (const text of [readFileSync(join(root, 'binding.gyp'), 'utf8'), readFileSync(join(root, 'CMakeLists.txt'), 'utf8'), pkg.scripts.install]) {
      for (const m of text.matchAll(/scripts\/[\w-]+\.mjs/g)) used.add(m[0]);
    }
    // and what those scripts import from each other
    for (const script of [...used]) {
      for (const m of readFileSync(join(root, script), 'utf8').matchAll(/from '\.\/([\w-]+\.mjs)'/g)) used.add(`scripts/${m[1]}`);
    }
    expect(used.size).toBeGreaterThanOrEqual(3);
    for (const script of used) expect(files.has(script), script).toBe(true);
    for (const file of ['package.json', 'binding.gyp', 'sources.json', 'dist/cjs/index.js', 'dist/esm/index.d.ts']) {
      expect(files.has(file), file).toBe(true);
    }
    expect([...files].filter((f) => f.startsWith('test/'))).toEqual([]);
  });
});

describe('the published types', () => {
  it('type-check a user\'s TypeScript: the default import, `using` and `await using`', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mto-types-'));
    const user = join(dir, 'user.mts');
    writeFileSync(user, [
      `import mto, { open, type Tensor } from ${JSON.stringify(join(root, 'dist/esm/index.js'))};`,
      'export async function run(): Promise<number> {',
      '  await using dev = await open({ backend: \'cpu\' });',
      '  using t = dev.tensor([1, 2], [2]);',
      '  const y: Tensor = dev.cast(t, \'float16\');',
      '  const opened: typeof open = mto.open;',
      '  return (await y.toFloat32()).length + (opened === open ? 0 : 1);',
      '}',
      '',
    ].join('\n'));
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    const r = spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'ES2022', '--module', 'nodenext',
      '--moduleResolution', 'nodenext', '--lib', 'ES2022,ESNext.Disposable', '--types', 'node', '--typeRoots', join(root, 'node_modules/@types'), user],
    { encoding: 'utf8' });
    expect(`${r.stdout}${r.stderr}`).toBe('');
    expect(r.status).toBe(0);
  });
});

describe('the API reference', () => {
  it('docs/api is what `npm run docs:api` generates from lib/ today', () => {
    const out = mkdtempSync(join(tmpdir(), 'mto-api-'));
    execFileSync(process.execPath, [join(root, 'node_modules/typedoc/bin/typedoc'), '--out', out, '--logLevel', 'Error'], { cwd: root, stdio: 'pipe' });
    const list = (dir: string): string[] => readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.md')).sort();
    const generated = list(out);
    expect(list(join(root, 'docs/api')), 'the same pages').toEqual(generated);
    for (const f of generated) {
      expect(readFileSync(join(root, 'docs/api', f), 'utf8'), `docs/api/${f}: run npm run docs:api`).toBe(readFileSync(join(out, f), 'utf8'));
    }
  });
});

describe('entry points', () => {
  it('require() and import() load the built package and share one set of classes', () => {
    const script = `
      const cjs = require(${JSON.stringify(join(root, 'dist/cjs/index.js'))});
      import(${JSON.stringify(join(root, 'dist/esm/index.js'))}).then(async (esm) => {
        const dev = await esm.open({ backend: 'cpu' });
        const t = dev.tensor(new Float32Array([1, 2]), [2]);
        let shared = false;
        try { t.dispose(); t.dispose(); } catch (e) { shared = e instanceof cjs.TensorOpsError && e.code === 'E_DISPOSED'; }
        console.log(JSON.stringify({ shared, same: esm.open === cjs.open, backend: dev.info.backend }));
      });`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }));
    expect(out).toEqual({ shared: true, same: true, backend: 'cpu' });
  });

  it('the metal-tensorops command prints the device as JSON, and fails plainly for a backend it cannot open', () => {
    const cli = join(root, 'dist/cjs/cli/cli.js');
    const info = JSON.parse(execFileSync(process.execPath, [cli, 'info', '--json', '--backend', 'cpu'], { encoding: 'utf8' }));
    expect(info).toMatchObject({ backend: 'cpu', tier: 'cpu', arch: process.arch });
    if (process.platform !== 'darwin') {
      let stderr = '';
      try {
        execFileSync(process.execPath, [cli, '--backend', 'metal'], { encoding: 'utf8', stdio: 'pipe' });
      } catch (e) {
        stderr = String((e as { stderr: string }).stderr);
      }
      expect(stderr).toMatch(/^TensorOpsError: backend 'metal' was asked for/);
    }
  });

  it('a missing binary gives E_LOAD naming platform, arch, Node-API version and the fixes', () => {
    const empty = mkdtempSync(join(tmpdir(), 'mto-empty-'));
    let err: unknown;
    try {
      loadBindingFrom(empty);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TensorOpsError);
    const e = err as TensorOpsError;
    expect(e.code).toBe('E_LOAD');
    expect(e.message).toContain(`${process.platform}-${process.arch}`);
    expect(e.message).toContain(`Node-API ${process.versions.napi}`);
    expect(e.message).toContain('--build-from-source');
    expect(e.message).toContain(empty);
  });
});
