// Argument checks for the public API. Each failure names the argument, the value received and
// what is accepted (the addon checks again: it trusts nothing from JS either).
import { TensorOpsError } from './errors';
import type { AnyDType, DType, Format } from './types';

export const DTYPES: readonly DType[] = ['float32', 'float16', 'bfloat16'];
export const FORMATS: readonly Format[] = [
  'mxfp8', 'mxfp8_e5m2', 'mxfp6_e3m2', 'mxfp6_e2m3', 'mxfp4',
  'mxint8', 'mxint4', 'mxint2', 'affine4', 'affine8',
];

export function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (value === null || value === undefined || typeof value !== 'object') return String(value);
  if (Array.isArray(value)) return `[${value.map(describe).join(', ')}]`;
  return value.constructor?.name ?? 'object';
}

function list(values: readonly string[]): string {
  return values.map((v) => `'${v}'`).join(', ');
}

export function checkDType(value: unknown, arg: string, allowBool = false): AnyDType {
  const accepted: readonly string[] = allowBool ? [...DTYPES, 'bool'] : DTYPES;
  if (typeof value !== 'string' || !accepted.includes(value)) {
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

export function checkShape(value: unknown, arg = 'shape'): number[] {
  if (!Array.isArray(value)) {
    throw new TensorOpsError('E_SHAPE', `${arg} must be an array of positive integers; got ${describe(value)}`);
  }
  if (value.length > 8) {
    throw new TensorOpsError('E_SHAPE', `${arg} has rank ${value.length}; accepted: rank 0 to 8`);
  }
  value.forEach((d, i) => {
    if (!Number.isSafeInteger(d) || (d as number) < 1) {
      throw new TensorOpsError('E_SHAPE', `${arg}[${i}] must be a positive integer; got ${describe(d)}`);
    }
  });
  return [...(value as number[])];
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

/** Rejects option keys the function does not know (a typo must not be silently ignored). */
export function checkOptions(value: unknown, arg: string, keys: readonly string[]): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TensorOpsError('E_ARG', `${arg} must be an object; got ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (!keys.includes(key)) {
      throw new TensorOpsError('E_ARG', `${arg}.${key} is not an option; accepted: ${list(keys)}`);
    }
  }
  return value as Record<string, unknown>;
}
