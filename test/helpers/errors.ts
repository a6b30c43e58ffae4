// The error expectation the suites share: a TensorOpsError with this code whose message matches
// every one of `mentions` (what it must name: the argument, the value, what is accepted).
import { expect } from 'vitest';
import { TensorOpsError } from '../../lib/index';

export async function rejects(p: Promise<unknown> | (() => unknown), code: string, ...mentions: (string | RegExp)[]): Promise<TensorOpsError> {
  let err: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    err = e;
  }
  expect(err, 'expected a TensorOpsError').toBeInstanceOf(TensorOpsError);
  const e = err as TensorOpsError;
  expect(e.code, e.message).toBe(code);
  for (const m of mentions) expect(e.message).toMatch(m);
  return e;
}
