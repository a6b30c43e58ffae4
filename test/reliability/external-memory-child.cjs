// Counts V8's major collections while a loop makes large outputs (external-memory.test.ts).
// Usage: node external-memory-child.cjs <dist/cjs/index.js> dispose|drop <steps>
//   dispose: each step adds two 64 MiB tensors, normalises the sum and disposes both outputs;
//   drop:    each step makes a 64 MiB output and drops it undisposed (only collection frees it).
// Prints one JSON line: { majors, maxRss, steps }.
'use strict';
const { PerformanceObserver, constants } = require('node:perf_hooks');
const [dist, mode, stepsArg] = process.argv.slice(2);
const { open } = require(dist);

async function main() {
  const steps = Number(stepsArg);
  const n = 4096;
  const dev = await open({ backend: 'cpu' });
  const a = dev.tensor(new Float32Array(n * n).fill(1), [n, n]);
  const b = dev.tensor(new Float32Array(n * n).fill(2), [n, n]);
  const g = dev.tensor(new Float32Array(n).fill(1), [n]);
  await dev.synchronize();
  let majors = 0;
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
  });
  obs.observe({ entryTypes: ['gc'] });
  let maxRss = 0;
  for (let i = 0; i < steps; i++) {
    if (mode === 'dispose') {
      const s = dev.add(a, b);
      const y = dev.rmsNorm(s, g, { eps: 1e-6 });
      s.dispose();
      await dev.synchronize();
      y.dispose();
    } else {
      dev.add(a, b);
      await dev.synchronize();
    }
    await new Promise((r) => setImmediate(r));  // a turn for GC tasks and finalizers
    maxRss = Math.max(maxRss, process.memoryUsage.rss());
  }
  await new Promise((r) => setTimeout(r, 50));  // the observer's last entries
  obs.disconnect();
  process.stdout.write(JSON.stringify({ majors, maxRss, steps }) + '\n');
  await dev.close();
}
main().catch((e) => {
  process.stdout.write(JSON.stringify({ error: String(e && e.stack || e) }) + '\n');
  process.exitCode = 1;
});
