// Terminates worker threads at random moments of their work with the addon: while the module
// loads, while a device opens, with ops and reads in flight, with tensors waiting for their
// finalizers. Run by worker-termination.test.ts; prints one JSON line when every round is done.
// Usage: node worker-terminate-child.cjs <dist/cjs/index.js> <rounds> <seed>
'use strict';
const { Worker } = require('node:worker_threads');
const [dist, roundsArg, seedArg] = process.argv.slice(2);

const WORK = `
const { workerData } = require('node:worker_threads');
const { open } = require(workerData.dist);
(async () => {
  const dev = await open({ backend: 'cpu', threads: 2 });
  const keep = [];
  const w = dev.tensor(new Float32Array(64 * 256).fill(0.5), [64, 256]);
  const q = await dev.quantize(w, { format: 'mxfp4' });
  const big = dev.tensor(new Float32Array(1 << 22), [1 << 22]);  // 16 MiB: read off the JS thread
  for (let i = 0; ; i++) {
    if (i % 20 === 0) big.toFloat32();  // a large read in flight when the worker goes
    keep.push(dev.tensor(new Float32Array(64), [8, 8]));     // finalizers pending at teardown
    if (keep.length > 2000) keep.splice(0, 1000);
    const x = dev.tensor(new Float32Array(64 * 256).fill(1), [64, 256]);
    dev.linear(x, i % 2 ? w : q).then((y) => y.toFloat32());  // ops and reads in flight
    dev.linear(dev.tensor(new Float32Array(32), [1, 32]), dev.tensor(new Float32Array(128), [4, 32]));
    if (i % 50 === 0) await new Promise((r) => setImmediate(r));
  }
})();
`;

let state = Number(seedArg) >>> 0;
const rand = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 4294967296);

(async () => {
  const rounds = Number(roundsArg);
  for (let r = 0; r < rounds; r++) {
    const worker = new Worker(WORK, { eval: true, workerData: { dist } });
    worker.on('error', () => {});  // a worker terminated while loading may report an error
    await new Promise((res) => setTimeout(res, rand() * 60));  // 0-60 ms: every phase of its life
    await worker.terminate();
  }
  // This thread's own device still works after all of that.
  const { open } = require(dist);
  const dev = await open({ backend: 'cpu', threads: 2 });
  const y = await dev.linear(dev.tensor([1, 2, 3, 4], [1, 4]), dev.tensor([1, 1, 1, 1, 2, 2, 2, 2], [2, 4]));
  const out = Array.from(await y.toFloat32());
  await dev.close();
  process.stdout.write(JSON.stringify({ rounds, out }) + '\n');
})();
