// An optional peer: ggml's CPU backend (the kernels of llama.cpp), timed by ggml's own
// test-backend-ops in perf mode on our exact shapes. Nothing of ggml ships with or is built by
// this package: `npm run bench -- --ggml DIR` takes a ggml (or llama.cpp) checkout in which the
// user has built test-backend-ops (DIR/build/bin/test-backend-ops) and runs it on each linear and
// decode attention case right after ours (one process per case).
//
// The shapes go to test-backend-ops as a --test-file: one line per op, holding the op's number in
// `enum ggml_op` (read from DIR's ggml.h: it changes as ops are added), the output type and shape,
// op parameters and each source's type, shape and strides. Type numbers are fixed (GGUF files
// store them). Its perf mode repeats each op on the same tensors for at least one second, so its
// decode weights (and K/V) come from the caches wherever they fit, where our decode cases stream
// from memory (layer-loop.mjs): with --ggml, each decode case also times ours on one copy of its
// data (oursFromCache), and ggml's decode ratios are taken against that.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import { dirname, join } from 'node:path';

/** ggml types (ggml.h; stable: GGUF files hold them): number, elements per block, bytes per block. */
const GGML_TYPE = {
  f32: [0, 1, 4], f16: [1, 1, 2], q4_1: [3, 32, 20], q8_0: [8, 32, 34], mxfp4: [39, 32, 17],
};

/** The ggml weight type each of our formats is compared with, and what it is. */
const LINEAR_TYPE = {
  float32: ['f32', 'f32'],
  float16: ['f16', 'f16'],
  mxfp4: ['mxfp4', 'mxfp4 (the same format: E2M1 codes, an E8M0 scale per 32)'],
  mxint8: ['q8_0', 'q8_0 (int8 codes, a float16 scale per 32)'],
  affine4: ['q4_1', 'q4_1 (uint4 codes, a float16 scale and minimum per 32)'],
};
/** K/V types of the decode attention cases (prefill is not run: see GgmlPeer.attention). */
const KV_TYPE = { float32: 'f32', mxfp8: 'q8_0' };

const ACTIVATIONS = 'f32 activations (ggml converts them to its dot-product type per weight type: q8_0 or q8_K for quantized weights)';

/** { ggml } or { missing: reason }. */
export function loadGgml(dir) {
  if (!dir) return { missing: 'not asked for (npm run bench -- --ggml DIR)' };
  const bin = [join(dir, 'build/bin/test-backend-ops'), join(dir, 'build/bin/test-backend-ops.exe')].find((p) => existsSync(p));
  if (!bin) return { missing: `no test-backend-ops under ${dir}/build/bin (build ggml's tests there first)` };
  const header = [join(dir, 'include/ggml.h'), join(dir, 'ggml/include/ggml.h')].find((p) => existsSync(p));
  if (!header) return { missing: `no include/ggml.h or ggml/include/ggml.h under ${dir}` };
  const ops = opNumbers(readFileSync(header, 'utf8'));
  for (const op of ['GGML_OP_MUL_MAT', 'GGML_OP_FLASH_ATTN_EXT']) {
    if (!(op in ops)) return { missing: `${op} not found in ${header}'s enum ggml_op` };
  }
  return { ggml: new GgmlPeer(dir, bin, ops) };
}

/** Names of `enum ggml_op` -> their values (GGML_OP_NONE = 0, then one each, up to GGML_OP_COUNT). */
function opNumbers(header) {
  const start = header.indexOf('enum ggml_op {');
  if (start < 0) return {};
  const body = header.slice(start).replace(/\/\/[^\n]*/g, '');
  const names = [];
  for (const m of body.matchAll(/\b(GGML_OP_[A-Z0-9_]+)\b/g)) {
    if (m[1] === 'GGML_OP_COUNT') break;
    names.push(m[1]);
  }
  return Object.fromEntries(names.map((n, i) => [n, i]));
}

/** A source of a test-file line: type number, ne[4], nb[4] (contiguous). */
function source(type, ne) {
  const [num, blck, bytes] = GGML_TYPE[type];
  const nb = [bytes, (ne[0] / blck) * bytes];
  nb.push(nb[1] * ne[1], nb[1] * ne[1] * ne[2]);
  return [num, ...ne, ...nb].join(' ');
}

const floatBits = (x) => new Int32Array(Float32Array.of(x).buffer)[0];
const GGML_PREC_F32 = 10;

export class GgmlPeer {
  constructor(dir, bin, ops) {
    this.dir = dir;
    this.bin = bin;
    this.ops = ops;
    this.count = 0;  // lines written so far: each gets its own name
  }

  describe() {
    let commit = 'unknown';
    try {
      commit = execFileSync('git', ['-C', this.dir, 'rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch { /* not a git checkout */ }
    return {
      name: 'ggml', available: true, commit, tool: 'test-backend-ops perf -b CPU --test-file, one case per run, right after ours',
      threads: os.availableParallelism?.() ?? os.cpus().length,
      note: 'its perf mode repeats each op on the same tensors: its decode data comes from the caches where it fits; its decode ratios are against ours timed the same way (oursFromCache)',
    };
  }

  /** ggml's time for y[M, N] = x[M, K] W^T with W of our `format`, or null where ggml has no such type. */
  linear(M, N, K, format) {
    const t = LINEAR_TYPE[format];
    if (!t || K % 32) return null;
    const name = `mto-${this.count++}`;
    const line = [this.ops.GGML_OP_MUL_MAT, 0, N, M, 1, 1, 0, 2, source(t[0], [K, N, 1, 1]), source('f32', [K, M, 1, 1]), name].join(' ');
    return this.#time({ name, line, op: `MUL_MAT, ${t[1]} weights, ${ACTIVATIONS}`, decode: M === 1 });
  }

  /**
   * ggml's time for a decode attention case (Lq = 1, no mask: every key visible, as in ours), or
   * null. Prefill is left out: our case is causal, and ggml takes causality from a mask tensor,
   * which test-backend-ops fills with random values (it would time a different, unmasked product).
   */
  attention({ B, Hq, Hkv, Lq, Lk, D, kv = 'float32' }) {
    const t = KV_TYPE[kv];
    if (Lq !== 1 || !t) return null;
    const name = `mto-${this.count++}`;
    const params = [4, floatBits(1 / Math.sqrt(D)), 0, 0, GGML_PREC_F32];
    const kvSource = source(t, [D, Lk, Hkv, B]);
    const line = [this.ops.GGML_OP_FLASH_ATTN_EXT, 0, D, Hq, Lq, B, ...params, 3,
      source('f32', [D, Lq, Hq, B]), kvSource, kvSource, name].join(' ');
    return this.#time({ name, line, op: `FLASH_ATTN_EXT, ${t} K/V, f32 precision`, decode: true });
  }

  /**
   * One test-backend-ops run of one line (~1-2 s): { op, medianMs, ... } or { op, error }. One
   * case per run, right after ours, so that both sides see the shared machine in the same state.
   */
  #time({ name, line, op, decode }) {
    const tmp = mkdtempSync(join(os.tmpdir(), 'mto-ggml-'));
    try {
      const file = join(tmp, 'case.txt');
      writeFileSync(file, `${line}\n`);
      let out;
      try {
        out = execFileSync(this.bin, ['perf', '-b', 'CPU', '--test-file', file, '--output', 'sql'], {
          encoding: 'utf8', maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'pipe'], cwd: dirname(this.bin),
          timeout: 10 * 60_000,  // a tool that hangs must not hang the bench
        });
      } catch (err) {
        return { op, error: `test-backend-ops failed: ${String(err?.stderr || err?.message || err).trim().split('\n').pop()}` };
      }
      const row = parseInserts(out).find((r) => /(?:^|,)name=([^,]+)/.exec(r.op_params ?? '')?.[1] === name);
      const us = Number(row?.time_us);
      if (!row || row.supported !== '1' || !(us > 0)) {
        return { op, error: row ? `not supported by ggml's CPU backend (${row.error_message || 'no time'})` : 'no result' };
      }
      return {
        op, medianMs: us / 1e3, minMs: null, maxMs: null, reps: Number(row.n_runs), note: 'mean over its repetitions',
        ...(decode ? { fromCache: true } : {}),
      };
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
}

/** Rows of test-backend-ops' SQL output: INSERT INTO t (a, b, ...) VALUES ('x', 'y', ...). */
function parseInserts(text) {
  const rows = [];
  for (const m of text.matchAll(/^INSERT INTO \w+ \(([^)]*)\) VALUES \((.*)\);$/gm)) {
    const fields = m[1].split(',').map((s) => s.trim());
    const values = [...m[2].matchAll(/'((?:[^']|'')*)'/g)].map((v) => v[1].replace(/''/g, "'"));
    rows.push(Object.fromEntries(fields.map((f, i) => [f, values[i]])));
  }
  return rows;
}
