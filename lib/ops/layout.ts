// Layout ops: transpose, slice, concat (new tensors) and write (in place, the KV cache append).
import { TensorOpsError } from '../errors';
import type { NativeDeviceHandle, NativeTensorHandle } from '../native';
import type { SliceOptions, WriteOptions } from '../types';
import { checkOptions, describe, readOnce } from '../validate';
import { checkInteger, operandHandle, tensorHandle } from './args';

function readArray(value: unknown, arg: string): unknown[] {
  if (!Array.isArray(value)) throw new TensorOpsError('E_ARG', `${arg} must be an array; got ${describe(value)}`);
  return readOnce(() => Array.from(value as unknown[]), arg);
}

export function transpose(native: NativeDeviceHandle, x: unknown, perm: unknown): NativeTensorHandle {
  const axes = readArray(perm, 'perm').map((a, i) => checkInteger(a, `perm[${i}]`));
  return native.layout('transpose', tensorHandle(x, 'x'), axes);
}

export function slice(native: NativeDeviceHandle, x: unknown, options: SliceOptions): NativeTensorHandle {
  const opts = checkOptions(options, 'options', ['axis', 'start', 'end']);
  return native.layout(
    'slice', tensorHandle(x, 'x'), checkInteger(opts.axis, 'options.axis'), checkInteger(opts.start, 'options.start'),
    checkInteger(opts.end, 'options.end'),
  );
}

export function concat(native: NativeDeviceHandle, tensors: unknown, axis: unknown): NativeTensorHandle {
  const hs = readArray(tensors, 'tensors').map((t, i) => tensorHandle(t, `tensors[${i}]`));
  return native.layout('concat', hs, checkInteger(axis, 'axis'));
}

export function write(native: NativeDeviceHandle, dst: unknown, src: unknown, options: WriteOptions): void {
  const opts = checkOptions(options, 'options', ['axis', 'offset']);
  native.write(operandHandle(dst, 'dst'), operandHandle(src, 'src'), checkInteger(opts.axis, 'options.axis'),
    checkInteger(opts.offset, 'options.offset'));
}
