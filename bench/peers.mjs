// Where the bench's peers (onnxruntime-node, protobufjs, koffi) load from. They are not
// dependencies of metal-tensorops: onnxruntime-node's install script downloads GPU binaries from a
// host a machine may not reach, and none of them is needed to build, test or use the package. They
// are pinned in bench/peers/package.json (+ its package-lock.json) and installed on demand:
//
//   npm run bench:peers     (in a clone: npm ci --ignore-scripts --prefix bench/peers)
//
// --ignore-scripts is enough: onnxruntime-node's CPU binaries and koffi's prebuilt module ship in
// their npm packages. METAL_TENSOROPS_BENCH_PEERS names another folder holding such a
// node_modules/. Resolution then walks up from that folder as Node's always does, so peers
// installed next to metal-tensorops in a project (npm install onnxruntime-node ...) load too.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder whose node_modules/ holds the peers. */
export const PEERS_DIR = process.env.METAL_TENSOROPS_BENCH_PEERS
  ? resolve(process.env.METAL_TENSOROPS_BENCH_PEERS)
  : fileURLToPath(new URL('./peers/', import.meta.url));

/** The npm peers the bench uses and the versions bench/peers/package.json pins. */
export const PINNED = { 'onnxruntime-node': '1.30.0', protobufjs: '8.8.1', koffi: '3.3.4' };

/** How to install the peers, for messages. */
export const INSTALL_HINT =
  'the bench\'s peers install with `npm run bench:peers` in a clone of metal-tensorops, or with ' +
  `\`npm ci --ignore-scripts --prefix ${fileURLToPath(new URL('./peers', import.meta.url))}\``;

const requireFromPeers = createRequire(join(PEERS_DIR, 'package.json'));

/**
 * { module, version, path } for the npm package `name`, or { missing: reason, notInstalled: true }
 * when it is not installed, or { missing: reason } when it fails to load (the error's first line).
 */
export function loadPeerModule(name) {
  let path;
  try {
    path = requireFromPeers.resolve(name);
  } catch {
    return { missing: `${name} is not installed (npm run bench:peers)`, notInstalled: true };
  }
  try {
    const module = requireFromPeers(name);
    return { module, version: versionOf(name, path), path };
  } catch (err) {
    return { missing: `${name} could not be loaded from ${path}: ${String(err?.message ?? err).split('\n')[0]}` };
  }
}

/** The version in the package.json of `name` above its resolved entry (koffi's exports map hides it). */
function versionOf(name, entry) {
  for (let dir = dirname(entry); dirname(dir) !== dir; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8'));
    if (pkg.name === name) return pkg.version;
  }
  return null;
}
