// No AVX kernel of the built addon calls SSE code with dirty upper register halves (the AVX-SSE
// transition penalty of Intel cores, which CI's AMD machines do not show: test/helpers/avx-transitions.ts).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dirtyCallsIntoSse } from './helpers/avx-transitions';

const addon = join(resolve(__dirname, '..'), 'build', 'Release', 'metal_tensorops.node');

function hasObjdump(): boolean {
  try {
    execFileSync('objdump', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// Two functions calling a helper whose copy loop is SSE: one after writing ymm0 (the fault), one
// after a vzeroupper; and a third whose wide registers are all zmm16-31.
const SAMPLE = [
  '0000000000001000 <pack(unsigned char const*)>:',
  '    1000:\tmovdqu (%rsi),%xmm0',
  '    1004:\tmovups %xmm0,(%rdx)',
  '    1007:\tret',
  '',
  '0000000000001010 <quantize_avx512(float const*)>:',
  '    1010:\tvmulps %ymm1,%ymm2,%ymm0',
  '    1014:\tcall   1000 <pack(unsigned char const*)>',
  '    1019:\tret',
  '',
  '0000000000001020 <quantize_clean(float const*)>:',
  '    1020:\tvmulps %ymm1,%ymm2,%ymm0',
  '    1024:\tvzeroupper',
  '    1027:\tcall   1000 <pack(unsigned char const*)>',
  '    102c:\tret',
  '',
  '0000000000001030 <quantize_high(float const*)>:',
  '    1030:\tvmulps %zmm17,%zmm18,%zmm16',
  '    1036:\tcall   1000 <pack(unsigned char const*)>',
  '    103b:\tret',
].join('\n');

describe('AVX-SSE transitions', () => {
  it('the scan finds a call into SSE code after a write to ymm0, and only that one', () => {
    expect(dirtyCallsIntoSse(SAMPLE)).toEqual(['quantize_avx512(float const*) -> pack(unsigned char const*)']);
  });

  it.skipIf(process.platform !== 'linux' || process.arch !== 'x64' || !existsSync(addon) || !hasObjdump())(
    'the built addon makes no call into SSE code with dirty upper register halves', () => {
      const text = execFileSync('objdump', ['-d', '--no-show-raw-insn', '-C', addon], {
        encoding: 'utf8', maxBuffer: 1 << 30,
      });
      expect(text.length).toBeGreaterThan(1e6);  // the disassembly really came back
      expect(dirtyCallsIntoSse(text)).toEqual([]);
    }, 60_000);
});
