// npm's install step. A prebuilt addon for this platform (prebuilds/) or an existing build
// (build/Release) is used as it is; otherwise the addon is compiled from source with node-gyp on
// every core, saying so first (a silent two-minute compile looks like a hang).
// `npm install --build-from-source` (or npm_config_build_from_source=true) always compiles.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const fromSource = process.env.npm_config_build_from_source === 'true';

if (!fromSource) {
  try {
    require('node-gyp-build').path(root);  // throws when nothing fits this platform and Node-API
    process.exit(0);
  } catch {
    // compile below
  }
}

const jobs = availableParallelism();
const why = fromSource ? 'building from source as asked' : `no prebuilt addon for ${process.platform}-${process.arch}`;
console.error(
  `metal-tensorops: ${why}; compiling the native addon with node-gyp on ${jobs} ` +
    `${jobs === 1 ? 'core' : 'cores'} (about 2 minutes on 2 cores; needs python3, make and a C++17 compiler)`,
);
// node-gyp: ours when installed (a clone), else the copy npm ships with and names in the
// environment of install scripts, else whatever is on PATH.
let command = [];
try {
  command = [process.execPath, join(dirname(require.resolve('node-gyp/package.json')), 'bin', 'node-gyp.js')];
} catch {
  command = process.env.npm_config_node_gyp ? [process.execPath, process.env.npm_config_node_gyp] : ['node-gyp'];
}
const child = spawn(command[0], [...command.slice(1), 'rebuild', `--jobs=${jobs}`], {
  cwd: root,
  stdio: 'inherit',
  shell: command[0] === 'node-gyp' && process.platform === 'win32',
});
child.on('exit', (code, signal) => {
  if (code === 0) console.error('metal-tensorops: native addon built (build/Release/metal_tensorops.node)');
  process.exit(code ?? (signal ? 1 : 0));
});
