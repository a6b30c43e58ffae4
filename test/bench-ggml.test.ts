// The bench's ggml peer (bench/peer-ggml.mjs) against a stand-in for ggml's test-backend-ops: a
// script that reads the --test-file the way ggml's make_test_cases_from_file does, records what it
// got and answers in test-backend-ops' SQL output format (one run per case). It checks our side of that interface:
// op numbers taken from the checkout's ggml.h, ggml types, shapes and strides per case, the
// attention parameters, and each result reaching its case with the right ratio. (The real tool was
// run on these lines by hand: bench/results/linux-x64.json holds such a run.)
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const root = resolve(__dirname, '..');

// ggml.h's enum, as far as the peer reads it: the ops it needs sit at positions 3 and 5 here, not
// where the real header has them, so a hard-coded number would fail.
const HEADER = `
enum ggml_type { GGML_TYPE_F32 = 0 };
    enum ggml_op {
        GGML_OP_NONE = 0,

        GGML_OP_DUP,
        GGML_OP_COUNT_EQUAL, // a name that starts like the end marker
        GGML_OP_MUL_MAT,
        GGML_OP_MUL_MAT_ID,
        GGML_OP_FLASH_ATTN_EXT,

        GGML_OP_COUNT,
    };
`;

// The stand-in: parses each line (op, type, ne[4], n params, params, n sources, per source type
// ne[4] nb[4], name), appends them as JSON to LOG, and prints one INSERT per line, with time_us
// 1000 + i for the line named mto-i.
const TOOL = `#!${process.execPath}
const fs = require('node:fs');
const args = process.argv.slice(2);
const file = args[args.indexOf('--test-file') + 1];
const names = { 3: 'MUL_MAT', 5: 'FLASH_ATTN_EXT' };
const log = process.env.MTO_FAKE_GGML_LOG;
const parsed = fs.existsSync(log) ? JSON.parse(fs.readFileSync(log, 'utf8')) : [];
fs.readFileSync(file, 'utf8').split('\\n').filter(Boolean).forEach((line) => {
  const t = line.split(' ');
  let j = 0;
  const next = () => t[j++];
  const op = Number(next()), type = Number(next());
  const ne = [0, 1, 2, 3].map(() => Number(next()));
  const params = Array.from({ length: Number(next()) }, () => Number(next()));
  const sources = Array.from({ length: Number(next()) }, () => ({
    type: Number(next()), ne: [0, 1, 2, 3].map(() => Number(next())), nb: [0, 1, 2, 3].map(() => Number(next())),
  }));
  const name = next();
  if (j !== t.length) throw new Error('trailing fields in ' + line);
  parsed.push({ op, type, ne, params, sources, name });
  const fields = 'test_time, build_commit, backend_name, op_name, op_params, test_mode, supported, passed, error_message, time_us, flops, bandwidth_gb_s, memory_kb, n_runs, device_description, backend_reg_name';
  const values = ['t', 'unknown', 'CPU', names[op] ?? 'NONE', 'name=' + name + ",type=f32,ne=[1,1,1,1],op_params=[],sources=x's", 'perf', '1', '1', '', String(1000 + Number(name.slice(4))), '0', '0', '1', '7', '', ''];
  console.log('INSERT INTO test_backend_ops (' + fields + ') VALUES (' + values.map((v) => "'" + v.replace(/'/g, "''") + "'").join(', ') + ');');
});
fs.writeFileSync(log, JSON.stringify(parsed));
`;

interface Line { op: number; type: number; ne: number[]; params: number[]; sources: { type: number; ne: number[]; nb: number[] }[]; name: string }
interface Timing { medianMs: number }
interface Case {
  id: string; op: string; phase: string; weights: string | null;
  shape: { M: number; N: number; K: number; B: number; Hq: number; Hkv: number; Lq: number; Lk: number; D: number; kv?: string };
  ours: Timing; oursFromCache?: Timing;
  morePeers?: { ggml?: Timing & { op: string; ratio: number; ratioTo?: string; reps: number } };
}

describe('npm run bench -- --ggml DIR (with a stand-in for test-backend-ops)', () => {
  let doc: { cases: Case[]; morePeers: { ggml: { available: boolean; tool: string } } };
  let lines: Line[];
  beforeAll(() => {
    const dir = mkdtempSync(join(tmpdir(), 'mto-ggml-'));
    mkdirSync(join(dir, 'include'));
    mkdirSync(join(dir, 'build/bin'), { recursive: true });
    writeFileSync(join(dir, 'include/ggml.h'), HEADER);
    const tool = join(dir, 'build/bin/test-backend-ops');
    writeFileSync(tool, TOOL);
    chmodSync(tool, 0o755);
    const log = join(dir, 'lines.json');
    const out = execFileSync(process.execPath, [join(root, 'bench/run.mjs'), '--smoke', '--json', '--threads', '2', '--no-peer',
      '--filter', 'linear,attention', '--ggml', dir], {
      cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 100_000, maxBuffer: 64 << 20,
      env: { ...process.env, MTO_FAKE_GGML_LOG: log },
    });
    doc = JSON.parse(out);
    lines = JSON.parse(readFileSync(log, 'utf8'));
  }, 110_000);

  // The line a case went out as: the stand-in answers the line named mto-i with time_us = 1000 + i.
  const lineOf = (c: Case) => lines.find((l) => l.name === `mto-${Math.round(c.morePeers!.ggml!.medianMs * 1e3) - 1000}`)!;

  it('sends every linear case ggml has a type for, and the decode attention cases', () => {
    expect(doc.morePeers.ggml.available).toBe(true);
    const sent = doc.cases.filter((c) => c.morePeers?.ggml);
    const expected = doc.cases.filter((c) => (c.op === 'linear' && c.weights !== 'mxfp8') || (c.op === 'attention' && c.phase === 'decode'));
    expect(sent.map((c) => c.id).sort()).toEqual(expected.map((c) => c.id).sort());
    expect(lines).toHaveLength(expected.length);
    expect(new Set(lines.map((l) => l.name)).size).toBe(lines.length);
  });

  it('writes matrix products as MUL_MAT of the matching ggml type with contiguous strides', () => {
    const TYPES: Record<string, [number, number, number]> = {
      float32: [0, 1, 4], float16: [1, 1, 2], mxfp4: [39, 32, 17], mxint8: [8, 32, 34], affine4: [3, 32, 20],
    };
    for (const c of doc.cases.filter((x) => x.op === 'linear' && x.morePeers?.ggml)) {
      const l = lineOf(c);
      const { M, N, K } = c.shape;
      const [type, blck, bytes] = TYPES[c.weights!];
      const row = (K / blck) * bytes;
      expect(l.op, c.id).toBe(3);
      expect(l.type, c.id).toBe(0);
      expect(l.ne, c.id).toEqual([N, M, 1, 1]);
      expect(l.params, c.id).toEqual([]);
      expect(l.sources, c.id).toEqual([
        { type, ne: [K, N, 1, 1], nb: [bytes, row, row * N, row * N] },
        { type: 0, ne: [K, M, 1, 1], nb: [4, 4 * K, 4 * K * M, 4 * K * M] },
      ]);
    }
  });

  it('writes decode attention as FLASH_ATTN_EXT with scale 1/sqrt(D), f32 precision, no mask', () => {
    for (const c of doc.cases.filter((x) => x.op === 'attention' && x.morePeers?.ggml)) {
      const l = lineOf(c);
      const { B, Hq, Hkv, Lq, Lk, D, kv } = c.shape;
      expect(l.op, c.id).toBe(5);
      expect(l.ne, c.id).toEqual([D, Hq, Lq, B]);
      expect(l.params[0], c.id).toBe(new Int32Array(Float32Array.of(1 / Math.sqrt(D)).buffer)[0]);
      expect(l.params.slice(1), c.id).toEqual([0, 0, 10]);
      const [type, blck, bytes] = kv === 'mxfp8' ? [8, 32, 34] : [0, 1, 4];
      const row = (D / blck) * bytes;
      const kvSource = { type, ne: [D, Lk, Hkv, B], nb: [bytes, row, row * Lk, row * Lk * Hkv] };
      expect(l.sources, c.id).toEqual([
        { type: 0, ne: [D, Lq, Hq, B], nb: [4, 4 * D, 4 * D * Lq, 4 * D * Lq * Hq] },
        kvSource, kvSource,
      ]);
    }
  });

  it('attaches each result to its case: decode against ours on one copy of the data, prefill against ours', () => {
    for (const c of doc.cases.filter((x) => x.morePeers?.ggml)) {
      const g = c.morePeers!.ggml!;
      expect(g.reps, c.id).toBe(7);
      if (c.phase === 'decode') {
        expect(c.oursFromCache?.medianMs, c.id).toBeGreaterThan(0);
        expect(g.ratioTo, c.id).toBe('oursFromCache');
        expect(g.ratio / (g.medianMs / c.oursFromCache!.medianMs), c.id).toBeCloseTo(1, 2);
      } else {
        expect(g.ratioTo, c.id).toBeUndefined();
        expect(g.ratio / (g.medianMs / c.ours.medianMs), c.id).toBeCloseTo(1, 2);
      }
    }
  });
});
