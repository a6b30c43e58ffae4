// Picking from logits on the device: argmax, topK, sample (int32 ids).
import type { NativeDeviceHandle, NativeTensorHandle } from '../native';
import type { SampleOptions } from '../types';
import { checkOptions } from '../validate';
import { checkInteger, checkNumber, tensorHandle } from './args';

export function argmax(native: NativeDeviceHandle, x: unknown): NativeTensorHandle {
  return native.pick('argmax', tensorHandle(x, 'x'));
}

export function topK(native: NativeDeviceHandle, x: unknown, k: unknown): [NativeTensorHandle, NativeTensorHandle] {
  return native.pick('topk', tensorHandle(x, 'x'), checkInteger(k, 'k', 1));
}

export function sample(native: NativeDeviceHandle, logits: unknown, options?: SampleOptions): NativeTensorHandle {
  const opts = checkOptions(options, 'options', ['temperature', 'topK', 'topP', 'seed']);
  const temperature = opts.temperature === undefined ? 1 : checkNumber(opts.temperature, 'options.temperature');
  const topK = opts.topK === undefined ? 0 : checkInteger(opts.topK, 'options.topK', 0);
  const topP = opts.topP === undefined ? 1 : checkNumber(opts.topP, 'options.topP');
  const seed = opts.seed === undefined ? 0 : checkInteger(opts.seed, 'options.seed', 0);
  return native.pick('sample', tensorHandle(logits, 'logits'), temperature, topK, topP, seed);
}
