// Writes safetensors files: what the tests use to make model files (no weights can be downloaded
// here), and what a user saving converted weights would call. Data is asked for one tensor at a
// time, so a file larger than memory can be written.
import { closeSync, openSync, writeSync } from 'node:fs';
import { TensorOpsError } from '../../errors';
import { SAFETENSORS_DTYPE_BITS, type SafetensorsDType } from './types';

export interface SafetensorsWriteTensor {
  name: string;
  dtype: SafetensorsDType;
  /** Row-major dimensions, outermost first. */
  shape: readonly number[];
  /** The little-endian bytes (any typed array), or a function that makes them when the writer reaches this tensor. */
  data: ArrayBufferView | (() => ArrayBufferView);
}

/** Bytes of a tensor's data. */
export function safetensorsBytes(dtype: SafetensorsDType, shape: readonly number[]): number {
  return Math.ceil((shape.reduce((a, b) => a * b, 1) * SAFETENSORS_DTYPE_BITS[dtype]) / 8);
}

/**
 * Writes a safetensors file: the header (with `__metadata__` when given, padded with spaces to a
 * multiple of 8 bytes as the safetensors crate does), then each tensor's data in the order given.
 */
export function writeSafetensors(
  path: string, tensors: readonly SafetensorsWriteTensor[], metadata?: Readonly<Record<string, string>>,
): void {
  const header: Record<string, unknown> = {};
  if (metadata) header.__metadata__ = { ...metadata };
  let offset = 0;
  for (const t of tensors) {
    if (t.name === '__metadata__' || Object.prototype.hasOwnProperty.call(header, t.name)) {
      throw new TensorOpsError('E_ARG', `tensor name '${t.name}' is reserved or used twice`);
    }
    const bytes = safetensorsBytes(t.dtype, t.shape);
    header[t.name] = { dtype: t.dtype, shape: [...t.shape], data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, head);
    writeSync(fd, Buffer.from(json, 'utf8'));
    for (const t of tensors) {
      const data = typeof t.data === 'function' ? t.data() : t.data;
      const want = safetensorsBytes(t.dtype, t.shape);
      if (data.byteLength !== want) {
        throw new TensorOpsError('E_SHAPE', `tensor '${t.name}' has ${data.byteLength} bytes of data; a ${t.dtype} tensor of shape [${t.shape.join(', ')}] takes ${want}`);
      }
      writeSync(fd, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    }
  } finally {
    closeSync(fd);
  }
}
