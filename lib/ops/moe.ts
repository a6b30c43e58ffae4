// Mixture of experts: a linear per group of rows, the group sizes read on the device.
import type { NativeDeviceHandle, NativeTensorHandle } from '../native';
import type { GroupedLinearOptions } from '../types';
import { checkDType, checkOptions } from '../validate';
import { checkActivations, checkInteger, operandHandle, tensorHandle } from './args';

export function groupRows(native: NativeDeviceHandle, ids: unknown, groups: unknown): [NativeTensorHandle, NativeTensorHandle, NativeTensorHandle] {
  return native.groupRows(tensorHandle(ids, 'ids'), checkInteger(groups, 'groups', 1, 2 ** 31 - 1));
}

export function groupedLinear(
  native: NativeDeviceHandle, x: unknown, w: unknown, groupSizes: unknown, options?: GroupedLinearOptions,
): NativeTensorHandle {
  const opts = checkOptions(options, 'options', ['outDtype', 'activations']);
  const out = opts.outDtype === undefined ? null : checkDType(opts.outDtype, 'options.outDtype');
  const int8 = checkActivations(opts.activations);
  return native.groupedLinear(tensorHandle(x, 'x'), operandHandle(w, 'w'), tensorHandle(groupSizes, 'groupSizes'), out, int8);
}
