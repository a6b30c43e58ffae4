// The machine: what it is, and its limits as measured at the start of the run by the addon's
// measureRoofline (native/cpu/roofline.cc): FMA peak and streaming read bandwidth.
import * as fs from 'node:fs';
import * as os from 'node:os';

function osName() {
  try {
    const rel = fs.readFileSync('/etc/os-release', 'utf8');
    const pretty = /^PRETTY_NAME="?([^"\n]*)"?/m.exec(rel);
    if (pretty) return `${pretty[1]} (${os.type()} ${os.release()})`;
  } catch { /* not Linux */ }
  return `${os.type()} ${os.release()}`;
}

// x86 family / model / stepping from Linux's /proc/cpuinfo (null elsewhere): a virtual machine's
// model name can be as bare as "AMD EPYC" for Zen 3 and Zen 5 alike.
function cpuId() {
  try {
    const info = fs.readFileSync('/proc/cpuinfo', 'utf8');
    const field = (name) => {
      const m = new RegExp(`^${name}\\s*:\\s*(\\d+)`, 'm').exec(info);
      return m ? Number(m[1]) : null;
    };
    const family = field('cpu family');
    return family === null ? null : { family, model: field('model'), stepping: field('stepping') };
  } catch {
    return null;
  }
}

export function describeMachine() {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model?.trim() || `${process.arch} cpu`,
    cpuId: cpuId(),
    cores: os.availableParallelism?.() ?? cpus.length,
    arch: process.arch,
    platform: process.platform,
    os: osName(),
    node: process.version,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    // Other work on the machine skews every number: the 1-minute load average when the run began.
    loadAverage1m: Math.round(os.loadavg()[0] * 100) / 100,
    // A cap on our kernels (baseline | avx2 | avx512), to time the paths other CPUs take.
    cpuIsaCap: process.env.METAL_TENSOROPS_CPU_ISA || null,
  };
}

const round = (x, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

/**
 * Peaks with `threads` threads and with one. Synchronous (blocks the event loop for a few
 * seconds); the bench runs it before the cases and again after them (combinePeaks).
 */
export function measurePeaks(binding, threads, { seconds = 0.3, readMiB = 1024 } = {}) {
  if (typeof binding.measureRoofline !== 'function') {
    throw new Error('this build of the addon has no measureRoofline: rebuild it (npm run build:native)');
  }
  const opts = { seconds, readBytes: readMiB * 2 ** 20 };
  const shape = (r) => ({
    threads: r.threads,
    fmaGflops: round(r.fmaGflops),
    fmaIsa: r.fmaIsa,
    kernels: r.kernels,
    fmaByIsa: Object.fromEntries(r.fma.map((f) => [f.isa, round(f.gflops)])),
    readGBps: round(r.readGBps, 2),
    readBufferMiB: r.readBytes / 2 ** 20,
  });
  const all = shape(binding.measureRoofline(threads, opts));
  const one = threads === 1 ? all : shape(binding.measureRoofline(1, opts));
  return { ...all, oneThread: { fmaGflops: one.fmaGflops, fmaIsa: one.fmaIsa, readGBps: one.readGBps } };
}

/**
 * The machine's limits from measurements at the start and at the end of the run: the best of
 * each (a peak is what the machine reached; work of other processes only ever lowers it). Both
 * measurements are kept in `measured`.
 */
export function combinePeaks(list) {
  const best = (f) => list.reduce((a, b) => (f(b) > f(a) ? b : a));
  const fma = best((p) => p.fmaGflops);
  const read = best((p) => p.readGBps);
  const fma1 = best((p) => p.oneThread.fmaGflops);
  const read1 = best((p) => p.oneThread.readGBps);
  return {
    threads: fma.threads,
    fmaGflops: fma.fmaGflops,
    fmaIsa: fma.fmaIsa,
    kernels: fma.kernels,
    fmaByIsa: fma.fmaByIsa,
    readGBps: read.readGBps,
    readBufferMiB: read.readBufferMiB,
    oneThread: { fmaGflops: fma1.oneThread.fmaGflops, fmaIsa: fma1.oneThread.fmaIsa, readGBps: read1.oneThread.readGBps },
    measured: list.map(({ fmaGflops, readGBps, oneThread }) => ({ fmaGflops, readGBps, oneThread: { fmaGflops: oneThread.fmaGflops, readGBps: oneThread.readGBps } })),
  };
}
