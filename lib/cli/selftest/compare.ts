// How the self-test judges a result: bit for bit where the rule is exact (codes, scales, casts,
// dequantized values), within the reference's error bound where float32 sums are involved.
import type { Result } from '../reference/ops';

export interface Outcome {
  ok: boolean;
  /** What was found: "bit-exact", "worst error 3% of its bound", or what differed and where. */
  detail: string;
  /** Worst error over its bound (0 when bit-exact), for the summary. */
  ratio: number;
}

const isNaNValue = (x: number) => Number.isNaN(x);

/** Element i equal (NaN matching NaN, or `nan(x)` saying which codes are NaN), else the first difference. */
export function exact(
  what: string, got: ArrayLike<number>, want: ArrayLike<number>, nan: (x: number) => boolean = isNaNValue,
): Outcome {
  if (got.length !== want.length) return { ok: false, detail: `${what}: ${got.length} values, want ${want.length}`, ratio: Infinity };
  for (let i = 0; i < want.length; i++) {
    const g = got[i], w = want[i];
    if (nan(w) ? !nan(g) : g !== w) {
      return { ok: false, detail: `${what}[${i}] is ${show(g)}, want ${show(w)}`, ratio: Infinity };
    }
  }
  return { ok: true, detail: 'bit-exact', ratio: 0 };
}

/** |got - value| <= bound elementwise (NaN only where the reference is NaN). */
export function within(what: string, got: ArrayLike<number>, ref: Result): Outcome {
  if (got.length !== ref.value.length) {
    return { ok: false, detail: `${what}: ${got.length} values, want ${ref.value.length}`, ratio: Infinity };
  }
  let worst = 0, at = -1;
  for (let i = 0; i < got.length; i++) {
    const err = Math.abs(got[i] - ref.value[i]);
    const r = err === 0 ? 0 : err / ref.bound[i];  // NaN or Infinity when wrong: caught below
    if (!(r <= worst)) {
      worst = r;
      at = i;
    }
  }
  if (!(worst <= 1)) {
    return {
      ok: false,
      detail: `${what}[${at}] is ${show(got[at])}, want ${show(ref.value[at])} +- ${show(ref.bound[at])} ` +
        `(error ${Number.isNaN(worst) ? 'NaN' : `${worst.toPrecision(3)}x the bound`})`,
      ratio: Number.isNaN(worst) ? Infinity : worst,
    };
  }
  return { ok: true, detail: `worst error ${(worst * 100).toPrecision(2)}% of its bound`, ratio: worst };
}

/** The first failing outcome, else one that is ok with the worst ratio of them all. */
export function all(...outcomes: Outcome[]): Outcome {
  const failed = outcomes.find((o) => !o.ok);
  if (failed) return failed;
  return outcomes.reduce((a, b) => (b.ratio > a.ratio ? b : a));
}

function show(x: number): string {
  return Number.isInteger(x) && Math.abs(x) < 2 ** 31 ? String(x) : x.toPrecision(9);
}
