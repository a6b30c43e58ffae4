// Probes run under limits the parent applies while they wait (limits.test.ts): it warms up, prints
// a `ready` line, waits for `go` on stdin, then runs its probe and prints one JSON line.
// Usage: node limits-child.cjs <dist/cjs/index.js> threads|memory
'use strict';
const fs = require('node:fs');
const readline = require('node:readline');
const [dist, probe] = process.argv.slice(2);
const { open } = require(dist);

const codeOf = (e) => (e && e.code) || String(e);
const tasks = () => fs.readdirSync('/proc/self/task').length;
const vmSize = () => Number(/VmSize:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;

function waitForGo() {
  return new Promise((resolve) => {
    readline.createInterface({ input: process.stdin }).on('line', (l) => { if (l === 'go') resolve(); });
  });
}

async function threads() {
  await fs.promises.readFile(__filename);  // libuv's pool is started before the limit applies
  process.stdout.write(JSON.stringify({ ready: true, tasks: tasks() }) + '\n');
  await waitForGo();
  const devices = [], opened = [];
  for (let i = 0; i < 4; i++) {
    try {
      const d = await open({ backend: 'cpu', threads: 8 });
      devices.push(d);
      opened.push(d.info.threads);
    } catch (e) {
      opened.push(codeOf(e));
    }
  }
  // A device that got fewer threads than asked computes like any other (a [4,256] x [64,256]^T
  // linear: each output is 256 * 1 * 0.5).
  const d = devices[0];
  const y = await d.linear(d.tensor(new Float32Array(4 * 256).fill(1), [4, 256]), d.tensor(new Float32Array(64 * 256).fill(0.5), [64, 256]));
  const values = [...new Set(await y.toFloat32())];
  // Closing returns the threads at once, so a new device gets them again.
  await Promise.all(devices.map((x) => x.close()));
  const again = await open({ backend: 'cpu', threads: 2 });
  const reopened = again.info.threads;
  await again.close();
  return { opened, values, reopened };
}

async function memory() {
  const dev = await open({ backend: 'cpu', threads: 2 });
  // Made on the device from small inputs, so that no large JS array is freed after the limit applies.
  const ones = dev.tensor(new Float32Array(2 ** 13).fill(1), [2 ** 13, 1]);
  const big = await dev.matmul(ones, dev.tensor(new Float32Array(2 ** 13).fill(1), [1, 2 ** 13]));  // 256 MiB
  const q = await dev.quantize(big, { format: 'mxfp8' });  // 64 MiB of codes
  // Two full collections before the limit applies: the marking that the tensors' external memory
  // starts would otherwise end after it, and V8 aborts the process when committing new-space pages
  // then fails ("NewSpace::EnsureCurrentCapacity": 8 runs in 36 under load, none in 64 with these).
  require('node:v8').setFlagsFromString('--expose-gc');
  const gc = require('node:vm').runInNewContext('gc');
  gc();
  gc();
  process.stdout.write(JSON.stringify({ ready: true, vmSize: vmSize() }) + '\n');
  await waitForGo();
  const reads = {};
  for (const [name, read] of [['data', () => big.data()], ['toFloat32', () => big.toFloat32()], ['codes', () => q.codes()]]) {
    try {
      const out = await read();
      reads[name] = `read ${out.length}`;
    } catch (e) {
      reads[name] = codeOf(e);
    }
  }
  // A run-time failure: the float16 output (32 MiB) is allocated at the call, but the float32
  // staging its kernel needs (64 MiB) is not there when it runs. The op and what is computed from
  // it fail with E_OOM at their reads.
  const x = dev.tensor(new Float32Array(8192 * 64).fill(1), [8192, 64]);
  const w = dev.tensor(new Float32Array(2048 * 64).fill(1), [2048, 64]);
  const half = dev.linear(x, w, { outDtype: 'float16' });
  const downstream = dev.linear(half, dev.tensor(new Float32Array(4 * 2048).fill(1), [4, 2048]));  // small
  const runtime = {};
  for (const [name, t] of [['op', half], ['downstream', downstream]]) {
    try {
      await t.data();
      runtime[name] = 'read';
    } catch (e) {
      runtime[name] = codeOf(e);
    }
  }
  half.dispose();
  downstream.dispose();
  // The device and the tensors are still usable: a small op and a small read work.
  const y = await dev.linear(dev.tensor([1, 2], [1, 2]), dev.tensor([3, 4], [1, 2]));
  const small = Array.from(await y.toFloat32());
  return { reads, runtime, small };
}

(async () => {
  const result = probe === 'threads' ? await threads() : await memory();
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exit(0);
})().catch((e) => { process.stdout.write(JSON.stringify({ fatal: String(e && e.stack || e) }) + '\n'); process.exit(3); });
