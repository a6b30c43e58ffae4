// Every cpu dispatch path gives the same results: a subset of the correctness checks runs in child
// processes with METAL_TENSOROPS_CPU_ISA=baseline (the portable code), =avx2, =avx512 (AVX-512
// without the VBMI byte-permute kernels) and unset (the best this CPU has: AVX-512 with VBMI on our
// CI machines), and each must pass on its own and agree bit for bit with the others. (On a CPU
// without some of these the capped runs fall back to what it has.)
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ORACLE_DIR } from './helpers/oracle';

const root = resolve(__dirname, '..');
const dist = join(root, 'dist', 'cjs', 'index.js');  // built by `npm test`'s pretest (build:ts)

// The child: plain CommonJS against the built package, so it runs under `node` with its own env.
const CHILD = String.raw`
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { open } = require(process.env.MTO_DIST);
const ORACLE = process.env.MTO_ORACLE;

function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
function randn(n, seed) {
  const r = rng(seed), out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = r() + r() + r() + r() - 2;
  return out;
}
// FNV-1a over bytes: a digest to compare bits across processes.
function digest(view) {
  const b = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  let h = 0x811c9dc5;
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i], 0x01000193) >>> 0;
  return h.toString(16);
}
function arr(ref, Ctor) {
  const b = readFileSync(join(ORACLE, ref.file));
  return new Ctor(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}
// Exact float16 -> float64 (independent of the addon).
function halfValue(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
  if (e === 31) return m ? NaN : s * Infinity;
  return e ? s * 2 ** (e - 15) * (1 + m / 1024) : s * m * 2 ** -24;
}

(async () => {
  const dev = await open({ backend: 'cpu' });
  const out = { failures: [], digests: {}, linearError: {} };
  // The kernels this process chose (conversion/fused dot), as the addon reports them to the bench.
  out.kernels = require('node-gyp-build')(process.env.MTO_ROOT).measureRoofline(1, { seconds: 0.01, readBytes: 1 << 22 }).kernels;
  const fail = (what) => out.failures.push(what);

  // 1. Oracle MX quantize -> dequantize, bit-exact.
  const manifest = JSON.parse(readFileSync(join(ORACLE, 'manifest.json'), 'utf8'));
  const MX = { mxfp8_e4m3: 'mxfp8', mxfp8_e5m2: 'mxfp8_e5m2', mxfp6_e3m2: 'mxfp6_e3m2',
    mxfp6_e2m3: 'mxfp6_e2m3', mxfp4_e2m1: 'mxfp4', mxint8: 'mxint8' };
  for (const c of manifest.cases.filter((c) => c.kind === 'mx_quantize')) {
    const q = await dev.quantize(dev.tensor(arr(c.input, Float32Array), c.input.shape), { format: MX[c.format] });
    const got = await (await q.dequantize()).toFloat32(), want = arr(c.dequantized, Float32Array);
    for (let i = 0; i < want.length; i++) {
      if (Number.isNaN(want[i]) ? !Number.isNaN(got[i]) : !Object.is(got[i], want[i])) {
        fail(c.format + ' dequantized[' + i + '] = ' + got[i] + ', want ' + want[i]);
        break;
      }
    }
  }

  // 2. Random codes and scales (extreme scale bytes and float16 scales and biases) for every format:
  // the digest of the dequantized bits must not depend on the dispatch path.
  const BITS = { mxfp8: 8, mxfp8_e5m2: 8, mxfp6_e3m2: 6, mxfp6_e2m3: 6, mxfp4: 4, mxint8: 8,
    mxint4: 4, mxint2: 2, affine4: 4, affine8: 8 };
  for (const [format, bits] of Object.entries(BITS)) {
    for (const blockSize of format.startsWith('affine') ? [32, 64, 128] : [32]) {
      const rows = 6, cols = 384, r = rng(bits * 1000 + blockSize);
      const codes = Uint8Array.from({ length: (rows * cols * bits) / 8 }, () => Math.floor(r() * 256));
      const groups = (rows * cols) / blockSize;
      let opts;
      if (format.startsWith('affine')) {
        const half = () => { let h = Math.floor(r() * 65536); if (r() < 0.05) h |= 0x7800; return (h & 0x7c00) === 0x7c00 ? h ^ 0x400 : h; };
        opts = { format, shape: [rows, cols], codes, blockSize,
          scales: Uint16Array.from({ length: groups }, half), biases: Uint16Array.from({ length: groups }, half) };
      } else {
        const byte = () => { const x = r(); return x < 0.1 ? 0 : x < 0.2 ? 254 : Math.floor(r() * 255); };
        opts = { format, shape: [rows, cols], codes, scales: Uint8Array.from({ length: groups }, byte) };
      }
      const d = await (await dev.fromQuantized(opts).dequantize()).toFloat32();
      out.digests[format + '/' + blockSize] = digest(d);
    }
    if (!format.startsWith('affine')) {  // a NaN block (scale byte 0xFF) among finite ones
      const x = randn(4 * 128, bits);
      x[70] = NaN;
      const q = await dev.quantize(dev.tensor(x, [4, 128]), { format });
      out.digests[format + '/nan'] = digest(await (await q.dequantize()).toFloat32());
    }
  }

  // 2b. Quantization: codes, scales (and biases) of values over many binades, with exact ties,
  // signed zeros, subnormals, values past every element's range, inf and NaN (MX only: affine
  // takes finite values), in rows of 1, 3 and 5 blocks (the MX quantizers find 4 blocks' scales at
  // once): the digest must not depend on the dispatch path.
  const specials = [0, -0, 1e-45, -1e-40, 0.25, 0.75, 1.25, 2.5, 6, 448, 57344, 1e30, Infinity, -Infinity, NaN, 3e-3];
  for (const format of Object.keys(BITS)) {
    const affine = format.startsWith('affine');
    for (const cols of [32, 96, 160]) {
      const r = rng(cols + BITS[format]), x = new Float32Array(3 * cols);
      for (let i = 0; i < x.length; i++) {
        x[i] = i % 7 === 3 ? specials[(i / 7 | 0) % 16] : (r() - 0.5) * 2 ** ((i % 41) - 20);
        if (affine && (!Number.isFinite(x[i]) || Math.abs(x[i]) > 1e4)) x[i] = 1;
      }
      const q = await dev.quantize(dev.tensor(x, [3, cols]), { format, blockSize: 32 });
      const parts = [await q.codes(), await q.scales()];
      if (affine) parts.push(await q.biases());
      out.digests['quantize ' + format + ' ' + cols] = parts.map(digest).join('/');
      q.dispose();
    }
  }

  // 3. float16 round trips: every code decodes exactly; every finite value re-encodes to itself;
  // float32 -> float16 of random bits (NaN payloads, subnormals, ties) has a path-independent digest.
  const all = Uint16Array.from({ length: 65536 }, (_, i) => i);
  const dec = await dev.tensor(all, [65536], 'float16').toFloat32();
  for (let i = 0; i < 65536; i++) {
    const want = halfValue(i);
    if (Number.isNaN(want) ? !Number.isNaN(dec[i]) : !Object.is(dec[i], Math.fround(want))) {
      fail('float16 ' + i.toString(16) + ' decodes to ' + dec[i] + ', want ' + want);
      break;
    }
  }
  const finite = dec.filter((v) => Number.isFinite(v));
  const codesBack = await dev.tensor(finite, [finite.length], 'float16').data();
  const codesFinite = all.filter((h) => (h & 0x7c00) !== 0x7c00);
  for (let i = 0; i < codesFinite.length; i++) {
    if (codesBack[i] !== codesFinite[i]) { fail('float16 ' + codesFinite[i].toString(16) + ' does not round-trip'); break; }
  }
  const r = rng(99), bitsIn = new Uint32Array(1 << 16);
  for (let i = 0; i < bitsIn.length; i++) {
    let u = Math.floor(r() * 2 ** 32) >>> 0;
    const k = i & 3;
    if (k === 1) u = ((u & 0x80ffffff) | 0x38000000) >>> 0;  // near the float16 subnormal range
    if (k === 2) u = ((u & 0x807fffff) | 0x7f800000) >>> 0;  // inf / NaN with payloads
    bitsIn[i] = u;
  }
  const f16 = await dev.tensor(new Float32Array(bitsIn.buffer), [bitsIn.length], 'float16').data();
  out.digests.float32_to_float16 = digest(f16);
  out.digests.float16_to_float32 = digest(dec);

  // 4. Linear (quantized and dense weights) against a float64 reference of the dequantized weights.
  // N not a multiple of the fused kernels' row groups; K of 19 blocks (partial scale runs and
  // 128-code steps); M = 1, 3, 8 take the fused decode-and-dot kernels, 9 the gemm.
  const LINEAR = [['mxfp4', 32, 608], ['mxint4', 32, 608], ['mxint8', 32, 608], ['mxfp8', 32, 608],
    ['mxfp8_e5m2', 32, 608], ['mxfp6_e2m3', 32, 608], ['affine4', 32, 608], ['affine8', 32, 608],
    ['affine4', 64, 704], ['affine8', 128, 640]];
  for (const [format, blockSize, K] of LINEAR) {
    const N = 43;
    const w = await dev.quantize(dev.tensor(randn(N * K, 11), [N, K]), { format, blockSize });
    const wd = await (await w.dequantize()).toFloat32();
    let worst = 0;
    for (const M of [1, 3, 8, 9]) {
      const x = randn(M * K, M + 100);
      const y = await (await dev.linear(dev.tensor(x, [M, K]), w)).toFloat32();
      for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
        let s = 0;
        for (let k = 0; k < K; k++) s += x[m * K + k] * wd[n * K + k];
        worst = Math.max(worst, Math.abs(y[m * N + n] - s) / (1 + Math.abs(s)));
      }
    }
    out.linearError[format + '/' + blockSize] = worst;
  }
  // FP8 E4M3 weights whose codes hold no NaN (quantize, or fromQuantized after its scan) skip the
  // kernels' per-block NaN check: the same codes with one NaN code added (checked path) must give
  // the same bits in every other row, and NaN in that one.
  {
    const N = 43, K = 608, M = 3;
    const w = await dev.quantize(dev.tensor(randn(N * K, 13), [N, K]), { format: 'mxfp8' });
    const codes = await w.codes(), scales = await w.scales();
    const withNan = Uint8Array.from(codes);
    withNan[17 * K + 300] = 0xff;  // row 17
    const x = dev.tensor(randn(M * K, 14), [M, K]);
    const ys = [];
    for (const c of [codes, withNan]) {
      const wq = dev.fromQuantized({ format: 'mxfp8', shape: [N, K], codes: c, scales });
      ys.push(await (await dev.linear(x, wq)).toFloat32());
    }
    const y0 = await (await dev.linear(x, w)).toFloat32();
    for (let i = 0; i < M * N; i++) {
      const nanRow = i % N === 17;
      if (!Object.is(ys[0][i], y0[i]) || (nanRow ? !Number.isNaN(ys[1][i]) : !Object.is(ys[1][i], y0[i]))) {
        fail('mxfp8 NaN-free fast path: y[' + i + '] = ' + ys[0][i] + ' / ' + ys[1][i] + ', quantized ' + y0[i]);
        break;
      }
    }
    // That row written into w (the quantizer's, known NaN-free until then): its kernels look for
    // the NaN code from then on.
    const row = dev.fromQuantized({ format: 'mxfp8', shape: [1, K], codes: withNan.slice(17 * K, 18 * K), scales: scales.slice((17 * K) / 32, (18 * K) / 32) });
    dev.write(w, row, { axis: 0, offset: 17 });
    const yw = await (await dev.linear(x, w)).toFloat32();
    for (let i = 0; i < M * N; i++) {
      if (!Object.is(yw[i], ys[1][i])) { fail('mxfp8 NaN code written into NaN-free weights: y[' + i + '] = ' + yw[i] + ', want ' + ys[1][i]); break; }
    }
  }
  // Centred affine biases (GGUF's Q4_0 / Q8_0: every bias -8 or -128 times its scale) are computed
  // from the scales instead of read: the same bits as the same planes with one group's bias moved
  // (read from the plane) in every other row, float32 and int8 activations alike.
  for (const [format, centre] of [['affine4', 8], ['affine8', 128]]) {
    const N = 43, K = 608, G = K / 32;
    const r = rng(77);
    const codes = Uint8Array.from({ length: N * (format === 'affine4' ? K / 2 : K) }, () => Math.floor(r() * 256));
    const scales = await dev.tensor(Float32Array.from({ length: N * G }, () => 0.002 + 0.05 * r()), [N * G], 'float16').data();
    const sv = await dev.tensor(scales, [N * G], 'float16').toFloat32();
    const biases = await dev.tensor(sv.map((v) => -centre * v), [N * G], 'float16').data();
    const moved = Uint16Array.from(biases);
    moved[5 * G + 3] = (await dev.tensor(new Float32Array([-centre * sv[5 * G + 3] + 0.25]), [1], 'float16').data())[0];
    const centred = dev.fromQuantized({ format, shape: [N, K], blockSize: 32, codes, scales, biases });
    const plain = dev.fromQuantized({ format, shape: [N, K], blockSize: 32, codes, scales, biases: moved });
    const wd = await (await centred.dequantize()).toFloat32();
    let worst = 0;
    for (const activations of ['float32', 'int8']) {
      for (const M of [1, 3, 8, 9]) {
        const xv = randn(M * K, M + 300);
        const x = dev.tensor(xv, [M, K]);
        const y1 = await (await dev.linear(x, centred, { activations })).toFloat32();
        const y2 = await (await dev.linear(x, plain, { activations })).toFloat32();
        for (let i = 0; i < M * N; i++) {
          if (i % N !== 5 && !Object.is(y1[i], y2[i])) { fail(format + ' centred biases (' + activations + ', M ' + M + '): y[' + i + '] = ' + y1[i] + ', read ' + y2[i]); break; }
        }
        if (activations === 'float32') {
          for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
            let s = 0;
            for (let k = 0; k < K; k++) s += xv[m * K + k] * wd[n * K + k];
            worst = Math.max(worst, Math.abs(y1[m * N + n] - s) / (1 + Math.abs(s)));
          }
        }
      }
    }
    out.linearError[format + ' centred biases'] = worst;
  }
  // Dense weights (fused kernels for M <= 8): K = 70 leaves a tail shorter than a vector.
  for (const dtype of ['float32', 'float16', 'bfloat16']) {
    const N = 43, K = 70;
    const w = dev.tensor(randn(N * K, 12), [N, K], dtype);
    const wd = await w.toFloat32();
    let worst = 0;
    for (const M of [1, 3, 8, 9]) {
      const x = randn(M * K, M + 200);
      const y = await (await dev.linear(dev.tensor(x, [M, K]), w)).toFloat32();
      for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
        let s = 0;
        for (let k = 0; k < K; k++) s += x[m * K + k] * wd[n * K + k];
        worst = Math.max(worst, Math.abs(y[m * N + n] - s) / (1 + Math.abs(s)));
      }
    }
    out.linearError[dtype] = worst;
  }

  // 5. The packed GEMM on shapes with M, N and K tails (K past one depth block of 256, N past a
  // 32-column strip, M past every micro-kernel height), many-task and row-split cases, on one
  // thread and on two, against float64 references: linear (with bias) and matmul (batched b).
  const dense = [[37, 70, 300], [130, 33, 520], [15, 97, 64], [600, 24, 300], [29, 1100, 40]];
  for (const threads of [1, 2]) {
    const d = await open({ backend: 'cpu', threads });
    let worst = 0;
    const track = (got, want) => {
      for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]) / (1 + Math.abs(want[i])));
    };
    for (const [M, N, K] of dense) {
      const x = randn(M * K, M), w = randn(N * K, N), bias = randn(N, K);
      const y = await (await d.linear(d.tensor(x, [M, K]), d.tensor(w, [N, K]), { bias: d.tensor(bias, [N]) })).toFloat32();
      const want = new Float64Array(M * N);
      for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
        let s = bias[n];
        for (let k = 0; k < K; k++) s += x[m * K + k] * w[n * K + k];
        want[m * N + n] = s;
      }
      track(y, want);
    }
    const [B, M, K, N] = [3, 21, 270, 45];
    const a = randn(B * M * K, 7), b = randn(B * K * N, 8);
    const c = await (await d.matmul(d.tensor(a, [B, M, K]), d.tensor(b, [B, K, N]))).toFloat32();
    const want = new Float64Array(B * M * N);
    for (let t = 0; t < B; t++) for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += a[(t * M + m) * K + k] * b[(t * K + k) * N + n];
      want[(t * M + m) * N + n] = s;
    }
    track(c, want);
    out.linearError['dense gemm, threads ' + threads] = worst;
  }

  // 6. Attention (float32, causal, GQA) against float64: decode shapes whose query rows per kv
  // head (1, 3, 6) and head sizes (48, 64, 128) exercise every register block and tail of the
  // decode kernels, Lk with a partial tile, and one prefill shape.
  const attn = [[1, 4, 4, 1, 300, 64], [1, 6, 2, 1, 700, 48], [2, 12, 2, 1, 129, 128], [1, 8, 2, 2, 200, 64],
    [1, 4, 2, 37, 90, 32]];
  let attnWorst = 0;
  for (const [B, Hq, Hkv, Lq, Lk, D] of attn) {
    const q = randn(B * Hq * Lq * D, Lk), k = randn(B * Hkv * Lk * D, Lk + 1), v = randn(B * Hkv * Lk * D, Lk + 2);
    const o = await (await dev.attention(dev.tensor(q, [B, Hq, Lq, D]), dev.tensor(k, [B, Hkv, Lk, D]),
      dev.tensor(v, [B, Hkv, Lk, D]), { causal: true })).toFloat32();
    const G = Hq / Hkv, scale = 1 / Math.sqrt(D);
    for (let b = 0; b < B; b++) for (let h = 0; h < Hq; h++) for (let i = 0; i < Lq; i++) {
      const kv = (b * Hkv + Math.floor(h / G)) * Lk, qi = ((b * Hq + h) * Lq + i) * D;
      const seen = i + Lk - Lq + 1, s = new Float64Array(seen);
      let m = -Infinity, l = 0;
      for (let j = 0; j < seen; j++) {
        let dot = 0;
        for (let d = 0; d < D; d++) dot += q[qi + d] * k[(kv + j) * D + d];
        s[j] = dot * scale;
        m = Math.max(m, s[j]);
      }
      for (let j = 0; j < seen; j++) { s[j] = Math.exp(s[j] - m); l += s[j]; }
      for (let d = 0; d < D; d++) {
        let acc = 0;
        for (let j = 0; j < seen; j++) acc += s[j] * v[(kv + j) * D + d];
        attnWorst = Math.max(attnWorst, Math.abs(o[qi + d] - acc / l));
      }
    }
  }
  out.linearError['attention'] = attnWorst;
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`;

interface ChildResult { failures: string[]; digests: Record<string, string>; linearError: Record<string, number>; kernels: string }

function runChild(isa: string | undefined): ChildResult {
  const env: NodeJS.ProcessEnv = { ...process.env, MTO_DIST: dist, MTO_ORACLE: ORACLE_DIR, MTO_ROOT: root };
  delete env.METAL_TENSOROPS_CPU_ISA;
  if (isa) env.METAL_TENSOROPS_CPU_ISA = isa;
  const stdout = execFileSync(process.execPath, ['-e', CHILD], {
    cwd: root, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 100_000, maxBuffer: 16 << 20,
  });
  return JSON.parse(stdout) as ChildResult;
}

const PATHS = ['baseline', 'avx2', 'avx512', undefined] as const;

describe.skipIf(!existsSync(dist))('every cpu dispatch path (METAL_TENSOROPS_CPU_ISA)', () => {
  const results = new Map<string, ChildResult>();
  beforeAll(() => {
    for (const isa of PATHS) results.set(isa ?? 'default', runChild(isa));
  }, PATHS.length * 100_000);  // each child may take up to its own timeout on a loaded machine

  for (const isa of PATHS) {
    const name = isa ?? 'default';
    it(`${name}: oracle dequantization bit-exact, float16 round trips exact, quantized and dense linear, attention vs float64`, () => {
      const r = results.get(name)!;
      expect(r.failures).toEqual([]);
      for (const [format, err] of Object.entries(r.linearError)) {
        expect(err, `${name} ${format} linear`).toBeLessThanOrEqual(1e-4);
      }
    });
  }

  // Each cap must change the kernels the process runs, or the runs above would all test one path.
  it.skipIf(process.arch !== 'x64')('each cap selects its kernels (this CPU permitting)', () => {
    const k = (isa: string) => results.get(isa)!.kernels;
    expect(k('baseline')).toBe('baseline/none');
    const best = k('default');
    if (best.startsWith('avx')) expect(k('avx2')).toBe('avx2/avx2');
    if (best.startsWith('avx512')) expect(k('avx512')).toBe('avx512/avx512');
    else expect(k('avx512')).toBe(best);
  });

  it('every path gives bit-identical quantized codes and scales, dequantized values and float16 conversions', () => {
    const base = results.get('baseline')!.digests;
    expect(Object.keys(base).length).toBeGreaterThan(10);
    for (const isa of ['avx2', 'avx512', 'default']) expect(results.get(isa)!.digests, isa).toEqual(base);
  });
});
