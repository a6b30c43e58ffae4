// Elementwise ops with NumPy broadcasting: add, mul, silu, gelu, swiglu.
import type { NativeDeviceHandle, NativeTensorHandle } from '../native';
import type { GeluOptions, SwigluOptions } from '../types';
import { TensorOpsError } from '../errors';
import { checkOptions, describe } from '../validate';
import { checkChoice, tensorHandle } from './args';

export function binary(native: NativeDeviceHandle, op: 'add' | 'mul' | 'swiglu', a: unknown, b: unknown): NativeTensorHandle {
  const [an, bn] = op === 'swiglu' ? ['gate', 'up'] : ['a', 'b'];
  return native.binary(op, tensorHandle(a, an), tensorHandle(b, bn));
}

/** silu(gate) * up, or with options.alpha gpt-oss's form (SwigluOptions). */
export function swiglu(native: NativeDeviceHandle, gate: unknown, up: unknown, options?: SwigluOptions): NativeTensorHandle {
  const opts = checkOptions(options, 'options', ['alpha', 'limit']);
  if (opts.alpha === undefined) {
    if (opts.limit !== undefined) throw new TensorOpsError('E_ARG', 'options.limit needs options.alpha (the gpt-oss form)');
    return binary(native, 'swiglu', gate, up);
  }
  if (typeof opts.alpha !== 'number' || !Number.isFinite(opts.alpha) || !(opts.alpha > 0)) {
    throw new TensorOpsError('E_ARG', `options.alpha must be a finite number > 0; got ${describe(opts.alpha)}`);
  }
  const limit = opts.limit ?? Infinity;
  if (typeof limit !== 'number' || !(limit > 0)) {
    throw new TensorOpsError('E_ARG', `options.limit must be a number > 0 (Infinity: no clamp); got ${describe(opts.limit)}`);
  }
  return native.binary('swiglu_oai', tensorHandle(gate, 'gate'), tensorHandle(up, 'up'), opts.alpha, limit);
}

export function silu(native: NativeDeviceHandle, x: unknown): NativeTensorHandle {
  return native.unary('silu', tensorHandle(x, 'x'));
}

export function gelu(native: NativeDeviceHandle, x: unknown, options?: GeluOptions): NativeTensorHandle {
  const opts = checkOptions(options, 'options', ['approximate']);
  const approximate = opts.approximate === undefined ? 'none' : checkChoice(opts.approximate, 'options.approximate', ['none', 'tanh'] as const);
  return native.unary(approximate === 'tanh' ? 'gelu_tanh' : 'gelu', tensorHandle(x, 'x'));
}
