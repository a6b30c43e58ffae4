// The mutant generator of `npm run test:mutants` (mutants/enumerate.mjs): which edits it makes,
// which text it leaves alone, and ids that survive unrelated edits. The mutants themselves are
// run by msl.test.ts (a sampled set, full suite) and by the command (all of them).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyMutant, enumerateMutants } from './mutants/enumerate.mjs';
import { mutableFiles, selectMutants } from './mutants.mjs';

interface Mutant { id: string; line: number; kind: string; from: string; to: string; original: string; mutated: string }

const SOURCE = [
  '#include <metal_stdlib>',               // 1: preprocessor
  '#define PAIR(a, b) (a + b) \\',          // 2: macro body
  '  * 2',                                  // 3: its continuation
  'kernel void k(device float* out, uint i) {',  // 4: a pointer, not a product
  '  vec<float, 4> v = 0;',                 // 5: template brackets, the constant 0
  '  // a < b in a comment',                // 6
  '  if (i < 8 && out[i] != 1.0f) out[i] = min(out[i] * 2, 3.5f);',  // 7
  '  threadgroup_barrier(mem_flags::mem_threadgroup);',  // 8
  '  out[i] += "x - y"[0];',                // 9: a string
  '  metal::simdgroup_barrier(metal::mem_flags::mem_none);',  // 10: a barrier named with its namespace
  '}',
].join('\n');

describe('mutant generation', () => {
  const mutants = enumerateMutants('shaders/k.metal', SOURCE) as Mutant[];
  const on = (line: number) => mutants.filter((m) => m.line === line).map((m) => `${m.kind}:${m.from}->${m.to}`);

  it('mutates operators, bounds, constants, min/max and barriers in code', () => {
    expect(on(7).sort()).toEqual(['arithmetic:*->/', 'bound:<-><=', 'comparison:!=->==', 'constant:1.0f->0.0f', 'logical:&&->||', 'minmax:min->max'].sort());
    expect(on(8)).toEqual(['barrier:threadgroup_barrier(mem_flags::mem_threadgroup);->;']);
    expect(mutants.find((m) => m.line === 10)!.mutated).toBe('  ;');
    expect(on(5)).toEqual(['constant:0->1']);
    expect(mutants.find((m) => m.line === 7 && m.kind === 'bound')!.mutated).toBe('  if (i <= 8 && out[i] != 1.0f) out[i] = min(out[i] * 2, 3.5f);');
  });

  it('leaves preprocessor lines, macro bodies, comments, strings, pointers and template brackets alone', () => {
    for (const line of [1, 2, 3, 4, 6]) expect(on(line), `line ${line}`).toEqual([]);
    expect(on(9)).toEqual(['compound:+=->-=', 'constant:0->1']);
  });

  it('ids stay the same when unrelated lines move, and a changed line is refused', () => {
    const moved = enumerateMutants('shaders/k.metal', `// a new first line\n${SOURCE}`) as Mutant[];
    expect(moved.map((m) => m.id)).toEqual(mutants.map((m) => m.id));
    expect(new Set(mutants.map((m) => m.id)).size).toBe(mutants.length);
    const m = mutants.find((x) => x.kind === 'barrier')!;
    expect(applyMutant(SOURCE, m).split('\n')[7]).toBe('  ;');
    expect(() => applyMutant(SOURCE.replace('threadgroup_barrier', 'simdgroup_barrier'), m)).toThrow(/changed/);
  });

  it('every shader file but the host-shared params is mutated, and sampling is seeded', () => {
    const files = mutableFiles() as string[];
    expect(files).toContain('shaders/attention.metal');
    expect(files).toContain('shaders/mx_formats.h');
    expect(files.some((f) => f.endsWith('_params.h'))).toBe(false);
    for (const f of files) {
      const text = readFileSync(join(__dirname, '..', '..', f), 'utf8');
      for (const m of enumerateMutants(f, text) as Mutant[]) expect(m.mutated).not.toBe(m.original);
    }
    const a = selectMutants({ sample: 5, seed: 7 }) as Mutant[];
    expect(a.map((m) => m.id)).toEqual((selectMutants({ sample: 5, seed: 7 }) as Mutant[]).map((m) => m.id));
    expect(a.map((m) => m.id)).not.toEqual((selectMutants({ sample: 5, seed: 8 }) as Mutant[]).map((m) => m.id));
  });

  it('--unrun leaves out every mutant the report has a result for', () => {
    const report = JSON.parse(readFileSync(join(__dirname, 'mutants.json'), 'utf8')) as {
      files: Record<string, { killed: string[]; stillborn: string[]; uncovered: string[]; survived: { id: string }[]; equivalent: { id: string }[] }>;
    };
    const [file, f] = Object.entries(report.files).find(([, x]) => x.killed.length > 0)!;
    const done = new Set([...f.killed, ...f.stillborn, ...f.uncovered, ...f.survived.map((s) => s.id), ...f.equivalent.map((s) => s.id)]);
    const all = selectMutants({ files: [file] }) as Mutant[];
    const unrun = selectMutants({ files: [file], unrun: true }) as Mutant[];
    expect(unrun.map((m) => m.id)).toEqual(all.filter((m) => !done.has(m.id)).map((m) => m.id));
    expect(unrun.length).toBeLessThan(all.length);
  });

  it('the committed report is current: ids of today\'s shaders, every reviewed equivalent with its reason', () => {
    const report = JSON.parse(readFileSync(join(__dirname, 'mutants.json'), 'utf8')) as {
      files: Record<string, { mutants: number; run: number; killed: string[]; stillborn: string[]; uncovered: string[]; survived: { id: string }[]; equivalent: { id: string; reason: string }[] }>;
    };
    const reasons = JSON.parse(readFileSync(join(__dirname, 'mutants-equivalent.json'), 'utf8')) as Record<string, string>;
    for (const [file, f] of Object.entries(report.files)) {
      const ids = new Set((selectMutants({ files: [file] }) as Mutant[]).map((m) => m.id));
      const listed = [...f.killed, ...f.stillborn, ...f.uncovered, ...f.survived.map((s) => s.id), ...f.equivalent.map((s) => s.id)];
      expect(f.mutants, file).toBe(ids.size);
      expect(listed.filter((id) => !ids.has(id)), `${file}: ids of edited lines (npm run test:mutants -- --refresh)`).toEqual([]);
      expect(f.run, file).toBe(listed.length);
      expect(f.survived.filter((s) => reasons[s.id]).map((s) => s.id), `${file}: survivors since explained`).toEqual([]);
      for (const e of f.equivalent) expect(e.reason, e.id).toBe(reasons[e.id]);
    }
  });
});
