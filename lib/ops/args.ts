// Argument readers shared by the op families of lib/ops/.
import { TensorOpsError } from '../errors';
import type { NativeQTensorHandle, NativeTensorHandle } from '../native';
import { QuantizedTensor, Tensor, handleOf } from '../tensor';
import { describe } from '../validate';

export function tensorHandle(value: unknown, arg: string): NativeTensorHandle {
  if (value instanceof Tensor) return value[handleOf];
  throw new TensorOpsError('E_ARG', `${arg} must be a Tensor; got ${describe(value)}`);
}

export function operandHandle(value: unknown, arg: string): NativeTensorHandle | NativeQTensorHandle {
  if (value instanceof Tensor || value instanceof QuantizedTensor) return value[handleOf];
  throw new TensorOpsError('E_ARG', `${arg} must be a Tensor or a QuantizedTensor; got ${describe(value)}`);
}

export function optionalTensorHandle(value: unknown, arg: string): NativeTensorHandle | null {
  return value === undefined || value === null ? null : tensorHandle(value, arg);
}

/** An integer in [min, max] (the addon checks the range against the tensors). */
export function checkInteger(value: unknown, arg: string, min = -(2 ** 53 - 1), max = 2 ** 53 - 1): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new TensorOpsError('E_ARG', `${arg} must be an integer in [${min}, ${max}]; got ${describe(value)}`);
  }
  return value;
}

export function checkNumber(value: unknown, arg: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new TensorOpsError('E_ARG', `${arg} must be a finite number; got ${describe(value)}`);
  }
  return value;
}

export function checkChoice<T extends string>(value: unknown, arg: string, choices: readonly T[]): T {
  if (typeof value !== 'string' || !(choices as readonly string[]).includes(value)) {
    throw new TensorOpsError('E_ARG', `${arg} must be one of ${choices.map((c) => `'${c}'`).join(', ')}; got ${describe(value)}`);
  }
  return value as T;
}

/** linear's and groupedLinear's `activations` option: whether x may be quantized to int8. */
export function checkActivations(value: unknown, arg = 'options.activations'): boolean {
  return value !== undefined && checkChoice(value, arg, ['float32', 'int8'] as const) === 'int8';
}
