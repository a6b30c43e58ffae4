// `metal-tensorops selftest`: every public op run on this machine's device and checked against an
// independent float64 reference computed in JavaScript (lib/cli/reference/): exact rules bit for
// bit, float32 sums within their error bounds. Exit code 0 when every check passes, 1 otherwise.
//
// METAL_TENSOROPS_SELFTEST_FAULT=<check name> (internal, for the CLI's own test) perturbs one value
// of that check's device result before it is judged, to show that a wrong result fails.
import { open } from '../../index';
import { loadBinding } from '../../native';
import { DEVICE_OPTIONS, DEVICE_USAGE, backendOption, threadsOption, type Command } from '../command';
import { Progress } from '../progress';
import type { Check, CheckContext } from '../selftest/check';
import type { Outcome } from '../selftest/compare';
import { formatChecks } from '../selftest/formats-checks';
import { opChecks } from '../selftest/ops-checks';

export const CHECKS: readonly Check[] = [...formatChecks, ...opChecks];

/** The fault hook: one value changed, enough for any correct comparison to notice. */
function perturb<T extends Float32Array | Uint16Array | Uint8Array>(data: T): T {
  const copy = data.slice() as T;
  if (copy instanceof Float32Array) {
    let at = 0;  // the largest finite magnitude, off by 1 part in 256
    copy.forEach((v, i) => { if (Number.isFinite(v) && Math.abs(v) > Math.abs(copy[at])) at = i; });
    copy[at] *= 1 + 2 ** -8;
  } else if (copy.length > 0) {
    copy[0] ^= 1;  // a code or a bit pattern: its lowest bit
  }
  return copy;
}

async function runCheck(check: Check, ctx: CheckContext): Promise<Outcome> {
  try {
    return await check.run(ctx);
  } catch (err) {
    const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    return { ok: false, detail: `threw ${message}`, ratio: Infinity };
  }
}

export const selftest: Command = {
  name: 'selftest',
  summary: 'run every op here and check it against a float64 reference (exit 1 on a failure)',
  usage: `usage: metal-tensorops selftest [--backend auto|metal|cpu] [--threads N]
  quantize and dequantize for every format, casts between float32, float16 and bfloat16, linear
  (dense, float16, every quantized weight format, quantized x), matmul and attention (causal,
  GQA, bool mask, decode, float16, mxfp8 K/V), each checked against a float64 reference computed
  in JavaScript: bit for bit where the rule is exact, else within the float32 error bound
${DEVICE_USAGE}`,
  options: DEVICE_OPTIONS,
  async run({ values }) {
    const backend = backendOption(values.backend);
    const threads = threadsOption(values.threads);
    const dev = await open({ backend, ...(threads ? { threads } : {}) });
    const progress = new Progress(process.stdout);
    const where = `${dev.info.backend} backend (tier ${dev.info.tier}, cpu kernels ${loadBinding().cpuKernels()}` +
      `${dev.info.threads ? `, ${dev.info.threads} thread${dev.info.threads === 1 ? '' : 's'}` : ''})`;
    progress.line(`selftest on ${dev.info.name}, ${where}`);
    const fault = process.env.METAL_TENSOROPS_SELFTEST_FAULT;
    if (fault && !CHECKS.some((c) => c.name === fault)) {
      throw new Error(`METAL_TENSOROPS_SELFTEST_FAULT names no check: '${fault}'`);
    }
    const failed: string[] = [];
    const started = Date.now();
    for (const [i, check] of CHECKS.entries()) {
      const label = `[${i + 1}/${CHECKS.length}] ${check.name}`;
      progress.status(`${label} ...`);
      const read = check.name === fault ? perturb : <T>(data: T) => data;
      const outcome = await runCheck(check, { dev, read });
      if (!outcome.ok) failed.push(check.name);
      // On a terminal the passing lines are redrawn in place; failures (and, elsewhere, every line) stay.
      if (outcome.ok && progress.tty) progress.status(`${label} ok`);
      else progress.line(`${label} ... ${outcome.ok ? 'ok' : 'FAIL'} (${outcome.detail})`);
    }
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    progress.line(failed.length === 0
      ? `selftest: all ${CHECKS.length} checks passed in ${seconds} s`
      : `selftest: ${failed.length} of ${CHECKS.length} checks FAILED in ${seconds} s: ${failed.join(', ')}`);
    return failed.length === 0 ? 0 : 1;
  },
};
