// Gathering rows of a dense or quantized table by int32 ids.
import type { NativeDeviceHandle, NativeTensorHandle } from '../native';
import { operandHandle, tensorHandle } from './args';

export function embedding(native: NativeDeviceHandle, table: unknown, ids: unknown): NativeTensorHandle {
  return native.embedding(operandHandle(table, 'table'), tensorHandle(ids, 'ids'));
}
