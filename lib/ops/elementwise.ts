// Elementwise ops with NumPy broadcasting: add, mul, silu, gelu, swiglu.
import type { NativeDeviceHandle, NativeTensorHandle } from '../native';
import type { GeluOptions } from '../types';
import { checkOptions } from '../validate';
import { checkChoice, tensorHandle } from './args';

export function binary(native: NativeDeviceHandle, op: 'add' | 'mul' | 'swiglu', a: unknown, b: unknown): NativeTensorHandle {
  const [an, bn] = op === 'swiglu' ? ['gate', 'up'] : ['a', 'b'];
  return native.binary(op, tensorHandle(a, an), tensorHandle(b, bn));
}

export function silu(native: NativeDeviceHandle, x: unknown): NativeTensorHandle {
  return native.unary('silu', tensorHandle(x, 'x'));
}

export function gelu(native: NativeDeviceHandle, x: unknown, options?: GeluOptions): NativeTensorHandle {
  const opts = checkOptions(options, 'options', ['approximate']);
  const approximate = opts.approximate === undefined ? 'none' : checkChoice(opts.approximate, 'options.approximate', ['none', 'tanh'] as const);
  return native.unary(approximate === 'tanh' ? 'gelu_tanh' : 'gelu', tensorHandle(x, 'x'));
}
