// The MSL sources embedded in native/metal (the tier probes of probe_sources.h), each marked
// `// msl-source: NAME std=metalX.Y` above its raw string literal. check-metal.mjs --extract-msl
// writes them out for the macOS workflow's offline `xcrun metal`; the MSL harness
// (test/msl/build.mjs) compiles and runs them against its shim.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const metalDir = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'native', 'metal');

/** [{ name, std, text, from }] in file order. */
export function embeddedMslSources() {
  const marker = /\/\/ msl-source: (\w+) std=(metal\d+\.\d+)\n(?:\/\/[^\n]*\n)*[^\n]*R"msl\(([\s\S]*?)\)msl"/g;
  const out = [];
  for (const name of readdirSync(metalDir).filter((f) => /\.(h|mm)$/.test(f)).sort()) {
    const text = readFileSync(join(metalDir, name), 'utf8');
    for (const m of text.matchAll(marker)) {
      out.push({ name: m[1], std: m[2], text: m[3].replace(/^\n/, ''), from: `native/metal/${name}` });
    }
  }
  return out;
}
