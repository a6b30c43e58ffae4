// Finds calls made with dirty upper vector registers into code that uses legacy SSE instructions,
// in `objdump -d --no-show-raw-insn -C` output. On Intel cores such SSE instructions run with the
// AVX-SSE transition penalty until a vzeroupper: an AVX kernel calling a baseline helper that way
// made 8-bit quantization ~4x slower on a Xeon (native/kernels/portable/quantize_rows.cc,
// pack_codes), while AMD cores, which CI runs on, show nothing. Writing a ymm/zmm register 0-15
// dirties the upper halves; vzeroupper cleans them (zmm16-31 have no SSE alias and do not count).
// The scan follows each function in address order, not its control flow: a call reached only
// through a cleaning path may be reported; none is in our builds.

const FUNCTION = /^[0-9a-f]+ <(.+)>:$/;
const CALL = /^(?:call|jmp)\s+[0-9a-f]+ <(.+?)(?:\+0x[0-9a-f]+)?>$/;
const DIRTIES = /%[yz]mm(?:[0-9]|1[0-5])\b/;

function instructions(disassembly: string): Map<string, string[]> {
  const fns = new Map<string, string[]>();
  let current: string[] | null = null;
  for (const line of disassembly.split('\n')) {
    const head = FUNCTION.exec(line);
    if (head) {
      current = [];
      fns.set(head[1], current);
      continue;
    }
    const tab = line.lastIndexOf('\t');
    if (current && tab >= 0 && /^\s+[0-9a-f]+:/.test(line)) current.push(line.slice(tab + 1).trim());
  }
  return fns;
}

const usesLegacySse = (ins: string[]) => ins.some((i) => i.includes('%xmm') && !i.startsWith('v'));

/** "caller -> callee" for every call made with dirty upper halves into a function using SSE. */
export function dirtyCallsIntoSse(disassembly: string): string[] {
  const fns = instructions(disassembly);
  const sse = new Set([...fns].filter(([, ins]) => usesLegacySse(ins)).map(([name]) => name));
  const found: string[] = [];
  for (const [name, ins] of fns) {
    let dirty = false;
    for (const i of ins) {
      if (i === 'vzeroupper' || i.startsWith('ret')) dirty = false;
      else if (DIRTIES.test(i)) dirty = true;
      const call = CALL.exec(i);
      if (call && dirty && call[1] !== name && sse.has(call[1])) found.push(`${name} -> ${call[1]}`);
    }
  }
  return found;
}
