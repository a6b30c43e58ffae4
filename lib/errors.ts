/** Stable error codes. Switch on `err.code`; messages may improve between versions. */
export type ErrorCode =
  | 'E_SHAPE'
  | 'E_DTYPE'
  | 'E_FORMAT'
  | 'E_DISPOSED'
  | 'E_BACKEND'
  | 'E_OOM'
  | 'E_ARG'
  | 'E_LOAD'
  | 'E_KERNEL';

const CODES: ReadonlySet<string> = new Set<ErrorCode>([
  'E_SHAPE', 'E_DTYPE', 'E_FORMAT', 'E_DISPOSED', 'E_BACKEND', 'E_OOM', 'E_ARG', 'E_LOAD', 'E_KERNEL',
]);

/** Every failure of this package is a TensorOpsError with a stable `code`. */
export class TensorOpsError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TensorOpsError';
    this.code = code;
  }
}

/** Re-throws an error from the addon (a plain Error with an E_* code) as a TensorOpsError. */
export function toTensorOpsError(err: unknown): unknown {
  if (err instanceof TensorOpsError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (err instanceof Error && typeof code === 'string' && CODES.has(code)) {
    return new TensorOpsError(code as ErrorCode, err.message);
  }
  return err;
}

/** Runs a native call, translating its errors. */
export function callNative<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw toTensorOpsError(err);
  }
}

/** Awaits a native promise (or a sync throw from the call), translating errors. */
export async function awaitNative<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toTensorOpsError(err);
  }
}
