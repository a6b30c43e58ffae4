// softmax over the last axis.
import type { NativeDeviceHandle, NativeTensorHandle } from '../native';
import { tensorHandle } from './args';

export function softmax(native: NativeDeviceHandle, x: unknown): NativeTensorHandle {
  return native.softmax(tensorHandle(x, 'x'));
}
