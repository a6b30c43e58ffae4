// Rotary position embedding (docs/design/API.md "RoPE").
import { TensorOpsError } from '../errors';
import type { NativeDeviceHandle, NativeTensorHandle } from '../native';
import type { RopeOptions } from '../types';
import { checkOptions } from '../validate';
import { checkChoice, checkInteger, checkNumber, optionalTensorHandle, tensorHandle } from './args';

export function rope(native: NativeDeviceHandle, x: unknown, options?: RopeOptions): NativeTensorHandle {
  const opts = checkOptions(options, 'options', ['offset', 'positions', 'base', 'dims', 'style', 'freqs', 'layout']);
  if (opts.offset !== undefined && opts.positions !== undefined) {
    throw new TensorOpsError('E_ARG', 'options.offset and options.positions exclude each other: give one');
  }
  if (opts.base !== undefined && opts.freqs !== undefined) {
    throw new TensorOpsError('E_ARG', 'options.base and options.freqs exclude each other: give one');
  }
  const offset = opts.offset === undefined ? 0 : checkInteger(opts.offset, 'options.offset', 0, 2 ** 31 - 1);
  const base = opts.base === undefined ? 10000 : checkNumber(opts.base, 'options.base');
  const dims = opts.dims === undefined ? null : checkInteger(opts.dims, 'options.dims', 2);
  const style = opts.style === undefined ? 'neox' : checkChoice(opts.style, 'options.style', ['neox', 'interleaved'] as const);
  const layout = opts.layout === undefined ? 'bhld' : checkChoice(opts.layout, 'options.layout', ['bhld', 'blhd'] as const);
  return native.rope(
    tensorHandle(x, 'x'), optionalTensorHandle(opts.positions, 'options.positions'),
    optionalTensorHandle(opts.freqs, 'options.freqs'), layout, style, base, offset, dims,
  );
}
