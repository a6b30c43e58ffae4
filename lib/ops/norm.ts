// rmsNorm and layerNorm over the last axis.
import type { NativeDeviceHandle, NativeTensorHandle } from '../native';
import type { NormOptions } from '../types';
import { checkOptions } from '../validate';
import { checkNumber, optionalTensorHandle, tensorHandle } from './args';

function eps(options: NormOptions | undefined): number {
  const opts = checkOptions(options, 'options', ['eps']);
  return opts.eps === undefined ? 1e-5 : checkNumber(opts.eps, 'options.eps');
}

export function rmsNorm(native: NativeDeviceHandle, x: unknown, weight: unknown, options?: NormOptions): NativeTensorHandle {
  const e = eps(options);
  return native.norm(false, tensorHandle(x, 'x'), optionalTensorHandle(weight, 'weight'), null, e);
}

export function layerNorm(
  native: NativeDeviceHandle, x: unknown, weight: unknown, bias: unknown, options?: NormOptions,
): NativeTensorHandle {
  const e = eps(options);
  return native.norm(true, tensorHandle(x, 'x'), optionalTensorHandle(weight, 'weight'), optionalTensorHandle(bias, 'bias'), e);
}
