// scripts/report-kernels/asm-loop.mjs, the loop finder of the kernel cost report, on hand-written
// AArch64 assembly whose loop is known: no compiler needed, so it runs in the quick suite.
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module without types
import { markedLoops } from '../scripts/report-kernels/asm-loop.mjs';

// A function whose loop the compiler rotated: the entry jumps into the loop's middle (.LBB0_3,
// the header, holding the marker), the body's first block .LBB0_2 is laid out before it, and a
// rarely taken block (.LBB0_5) branches back in. The loop is .LBB0_2, .LBB0_3, the fall-through
// block after it and .LBB0_5: 3 + 4 + 2 + 2 = 11 instructions; the prologue (4) and the exit (2)
// are not in it.
const rotated = `
	.globl	kernel
kernel:
	stp	x29, x30, [sp, #-16]!
	mov	x29, sp
	mov	w8, wzr
	b	.LBB0_3
.LBB0_2:
	ldr	s1, [x0, x8, lsl #2]
	fadd	s0, s0, s1
	add	w8, w8, #1
.LBB0_3:
	// mto-cost-loop 7 1 4
	cmp	w8, w1
	b.ge	.LBB0_6
	fcmp	s0, s0
	b.vs	.LBB0_5
	fmov	s2, s0
	b	.LBB0_2
.LBB0_5:
	fmov	s0, wzr
	b	.LBB0_2
.LBB0_6:
	ldp	x29, x30, [sp], #16
	ret
`;

describe("asm-loop (the kernel cost report's loop finder)", () => {
  it('takes a rotated loop by dominance: its blocks only, not the code that jumps into it', () => {
    const loops = markedLoops(rotated);
    expect(loops).toHaveLength(1);
    const [l] = loops;
    expect(l.fn).toBe('kernel');
    expect(l.tag).toBe(7);
    expect(l.insns).toBe(11);
    expect(l.loads).toBe(1);
    expect(l.stack).toBe(0);
    expect(l.branches).toBe(4);
  });

  it('counts a loop laid out header first, with a nested loop, once per block', () => {
    const asm = `
	.globl	f
f:
	mov	w8, wzr
.LBB1_1:
	// mto-cost-loop 3 2 8
	ldr	d0, [x0]
	mov	w9, wzr
.LBB1_2:
	add	w9, w9, #1
	cmp	w9, #4
	b.lt	.LBB1_2
	add	w8, w8, #1
	cmp	w8, w1
	b.lt	.LBB1_1
	ret
`;
    const [l] = markedLoops(asm);
    expect(l.insns).toBe(8);  // 2 + 3 (the inner loop once) + 3
    expect(l.nested).toBe(1);
    expect(l.perElement).toBe(4);
  });
});
