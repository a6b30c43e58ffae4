// Argument checks for the public API. Each failure names the argument, the value received and
// what is accepted (the addon checks again: it trusts nothing from JS either).
import { TensorOpsError } from './errors';
import type { AnyDType, DType, FloatDType, Format } from './types';

export const FLOAT_DTYPES: readonly FloatDType[] = ['float32', 'float16', 'bfloat16'];
export const DTYPES: readonly DType[] = [...FLOAT_DTYPES, 'int32'];
export const FORMATS: readonly Format[] = [
  'mxfp8', 'mxfp8_e5m2', 'mxfp6_e3m2', 'mxfp6_e2m3', 'mxfp4',
  'mxint8', 'mxint4', 'mxint2', 'affine4', 'affine8',
];

/** A short description of a value for error messages; never throws, whatever the value. */
export function describe(value: unknown): string {
  try {
    if (typeof value === 'string') return `'${value}'`;
    if (typeof value === 'symbol') return value.toString();
    if (typeof value === 'bigint') return `${value}n`;
    if (value === null || value === undefined || typeof value !== 'object') return String(value);
    if (Array.isArray(value)) return value.length > 16 ? `an array of ${value.length}` : `[${value.map(describe).join(', ')}]`;
    const name: unknown = value.constructor?.name;
    return typeof name === 'string' && name ? name : 'object';
  } catch {
    return 'a value that cannot be read';
  }
}

function list(values: readonly string[]): string {
  return values.map((v) => `'${v}'`).join(', ');
}

/** `accepted`: the float dtypes unless said otherwise. */
export function checkDType(value: unknown, arg: string, accepted: readonly AnyDType[] = FLOAT_DTYPES): AnyDType {
  if (typeof value !== 'string' || !(accepted as readonly string[]).includes(value)) {
    throw new TensorOpsError('E_DTYPE', `${arg} must be one of ${list(accepted)}; got ${describe(value)}`);
  }
  return value as AnyDType;
}

export function checkFormat(value: unknown, arg = 'format'): Format {
  if (typeof value !== 'string' || !(FORMATS as readonly string[]).includes(value)) {
    throw new TensorOpsError('E_FORMAT', `${arg} must be one of ${list(FORMATS)}; got ${describe(value)}`);
  }
  return value as Format;
}

/**
 * A shape as a fresh array of non-negative safe integers whose nonzero ones multiply to a safe
 * integer too (a dimension may be 0: an empty tensor, as in NumPy and PyTorch). The value is
 * copied once (a getter or Proxy is read once per element) and the copy is checked and returned,
 * so nothing can change between the check and the use.
 */
export function checkShape(value: unknown, arg = 'shape'): number[] {
  if (!Array.isArray(value)) {
    throw new TensorOpsError('E_SHAPE', `${arg} must be an array of non-negative integers; got ${describe(value)}`);
  }
  const dims = readOnce(() => Array.from(value as unknown[]), arg);
  if (dims.length > 8) {
    throw new TensorOpsError('E_SHAPE', `${arg} has rank ${dims.length}; accepted: rank 0 to 8`);
  }
  let elements = 1;  // the product of the nonzero dimensions
  dims.forEach((d, i) => {
    if (!Number.isSafeInteger(d) || (d as number) < 0) {
      throw new TensorOpsError('E_SHAPE', `${arg}[${i}] must be a non-negative integer; got ${describe(d)}`);
    }
    if (d === 0) return;
    elements *= d as number;
    if (!Number.isSafeInteger(elements)) {
      throw new TensorOpsError(
        'E_SHAPE',
        dims.includes(0)
          ? `${arg} ${describe(dims)}: its nonzero dimensions multiply to more than the 2^53 - 1 elements a tensor may hold`
          : `${arg} ${describe(dims)} has more elements than the 2^53 - 1 a tensor may hold`,
      );
    }
  });
  return dims as number[];
}

/** The number of elements of a shape checkShape accepted. */
export function elementCount(shape: readonly number[]): number {
  return shape.reduce((n, d) => n * d, 1);
}

/** Runs fn, which reads a user value; whatever it throws (a getter, a Proxy trap) becomes E_ARG. */
export function readOnce<T>(fn: () => T, arg: string): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof TensorOpsError) throw err;
    throw new TensorOpsError('E_ARG', `${arg} could not be read: ${errorText(err)}`, { cause: err });
  }
}

function errorText(err: unknown): string {
  try {
    return err instanceof Error ? err.message : String(err);
  } catch {
    return 'it threw a value that cannot be printed';
  }
}

export function checkBlockSize(format: Format, value: unknown): number {
  const affine = format.startsWith('affine');
  if (value === undefined) return affine ? 64 : 32;
  const accepted = affine ? [32, 64, 128] : [32];
  if (typeof value !== 'number' || !accepted.includes(value)) {
    throw new TensorOpsError(
      'E_ARG',
      `blockSize must be ${accepted.join(', ')} for format '${format}'; got ${describe(value)}`,
    );
  }
  return value;
}

/**
 * Options as a fresh plain object holding only the accepted keys, each read once. Rejects keys the
 * function does not know (a typo must not be silently ignored) and values that are not plain
 * objects (a Map, Date or array has no own enumerable keys and would read as "no options").
 */
export function checkOptions(value: unknown, arg: string, keys: readonly string[]): Record<string, unknown> {
  if (value === undefined) return {};
  if (!readOnce(() => isPlainObject(value), arg)) {
    throw new TensorOpsError('E_ARG', `${arg} must be a plain object; got ${describe(value)}`);
  }
  return readOnce(() => {
    const copy: Record<string, unknown> = {};
    for (const key of Object.keys(value as object)) {
      if (!keys.includes(key)) {
        const accepted = keys.length ? `accepted: ${list(keys)}` : 'this function takes none';
        throw new TensorOpsError('E_ARG', `${arg}.${key} is not an option; ${accepted}`);
      }
      copy[key] = (value as Record<string, unknown>)[key];
    }
    return copy;
  }, arg);
}

function isPlainObject(value: unknown): value is object {
  return Object.prototype.toString.call(value) === '[object Object]';
}
