// Writes GGUF version 3 files: what the tests and the bench use to make model files (no weights
// can be downloaded here), and what a user saving converted weights would call. Tensor data is
// asked for one tensor at a time, so a file larger than memory can be written.
import { closeSync, openSync, writeSync } from 'node:fs';
import { TensorOpsError } from '../../errors';
import { GGML_BLOCK, GGML_TYPES, type GgmlTypeName, GgufValueType } from './types';

/** The GGUF metadata value types by name. */
export type GgufScalarType = 'uint8' | 'int8' | 'uint16' | 'int16' | 'uint32' | 'int32' | 'float32' | 'bool'
  | 'string' | 'uint64' | 'int64' | 'float64';
type Scalar = GgufScalarType;

/** A metadata value with its GGUF type: `{ type: 'uint32', value: 4 }`, `{ type: 'array', of: 'string', value: [...] }`. */
export type GgufWriteValue =
  | { type: GgufScalarType; value: number | bigint | string | boolean }
  | { type: 'array'; of: GgufScalarType; value: ArrayLike<number | bigint | string | boolean> };

export interface GgufWriteTensor {
  name: string;
  /** ggml order: dims[0] is the innermost (contiguous) axis. */
  dims: readonly number[];
  type: GgmlTypeName;
  /** The encoded bytes, or a function that makes them when the writer reaches this tensor. */
  data: Uint8Array | (() => Uint8Array);
}

const SCALAR_TYPE: Record<Scalar, GgufValueType> = {
  uint8: GgufValueType.UINT8, int8: GgufValueType.INT8, uint16: GgufValueType.UINT16,
  int16: GgufValueType.INT16, uint32: GgufValueType.UINT32, int32: GgufValueType.INT32,
  float32: GgufValueType.FLOAT32, bool: GgufValueType.BOOL, string: GgufValueType.STRING,
  uint64: GgufValueType.UINT64, int64: GgufValueType.INT64, float64: GgufValueType.FLOAT64,
};

/** Bytes of one tensor's data in ggml's layout. */
export function ggmlTensorBytes(type: GgmlTypeName, dims: readonly number[]): number {
  const { elements, bytes } = GGML_BLOCK[type];
  const rows = dims.slice(1).reduce((a, b) => a * b, 1);
  if (dims[0] % elements !== 0) {
    throw new TensorOpsError('E_SHAPE', `a ${type} tensor's first dimension must be a multiple of ${elements}; got ${dims[0]}`);
  }
  return rows * (dims[0] / elements) * bytes;
}

class ByteSink {
  #chunks: Buffer[] = [];
  length = 0;
  push(b: Buffer): void { this.#chunks.push(b); this.length += b.length; }
  u32(v: number): void { const b = Buffer.alloc(4); b.writeUInt32LE(v); this.push(b); }
  u64(v: number | bigint): void { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); this.push(b); }
  str(s: string): void { const b = Buffer.from(s, 'utf8'); this.u64(b.length); this.push(b); }
  scalar(t: Scalar, v: number | bigint | string | boolean): void {
    const b = Buffer.alloc(8);
    switch (t) {
      case 'uint8': b.writeUInt8(Number(v)); this.push(b.subarray(0, 1)); return;
      case 'int8': b.writeInt8(Number(v)); this.push(b.subarray(0, 1)); return;
      case 'bool': b.writeUInt8(v ? 1 : 0); this.push(b.subarray(0, 1)); return;
      case 'uint16': b.writeUInt16LE(Number(v)); this.push(b.subarray(0, 2)); return;
      case 'int16': b.writeInt16LE(Number(v)); this.push(b.subarray(0, 2)); return;
      case 'uint32': b.writeUInt32LE(Number(v)); this.push(b.subarray(0, 4)); return;
      case 'int32': b.writeInt32LE(Number(v)); this.push(b.subarray(0, 4)); return;
      case 'float32': b.writeFloatLE(Number(v)); this.push(b.subarray(0, 4)); return;
      case 'uint64': b.writeBigUInt64LE(BigInt(v)); this.push(b); return;
      case 'int64': b.writeBigInt64LE(BigInt(v)); this.push(b); return;
      case 'float64': b.writeDoubleLE(Number(v)); this.push(b); return;
      case 'string': this.str(String(v)); return;
    }
  }
  concat(): Buffer { return Buffer.concat(this.#chunks); }
}

/**
 * Writes a GGUF v3 file: metadata in the order given, then the tensor table, then each tensor's
 * data at `alignment` (general.alignment when given, else 32).
 */
export function writeGguf(
  path: string,
  metadata: ReadonlyArray<readonly [string, GgufWriteValue]>,
  tensors: readonly GgufWriteTensor[],
): void {
  const alignEntry = metadata.find(([k]) => k === 'general.alignment');
  const alignment = alignEntry ? Number(alignEntry[1].value) : 32;
  const head = new ByteSink();
  head.push(Buffer.from('GGUF', 'latin1'));
  head.u32(3);
  head.u64(tensors.length);
  head.u64(metadata.length);
  for (const [key, v] of metadata) {
    head.str(key);
    if (v.type === 'array') {
      head.u32(GgufValueType.ARRAY);
      head.u32(SCALAR_TYPE[v.of]);
      head.u64(v.value.length);
      for (let i = 0; i < v.value.length; i++) head.scalar(v.of, v.value[i]);
    } else {
      head.u32(SCALAR_TYPE[v.type]);
      head.scalar(v.type, v.value);
    }
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    head.str(t.name);
    head.u32(t.dims.length);
    for (const d of t.dims) head.u64(d);
    head.u32(GGML_TYPES[t.type]);
    head.u64(offset);
    offsets.push(offset);
    offset += Math.ceil(ggmlTensorBytes(t.type, t.dims) / alignment) * alignment;
  }
  const pad = (n: number) => (alignment - (n % alignment)) % alignment;
  const fd = openSync(path, 'w');
  try {
    const header = head.concat();
    writeSync(fd, header);
    writeSync(fd, Buffer.alloc(pad(header.length)));
    for (const t of tensors) {
      const data = typeof t.data === 'function' ? t.data() : t.data;
      const want = ggmlTensorBytes(t.type, t.dims);
      if (data.length !== want) {
        throw new TensorOpsError('E_SHAPE', `tensor '${t.name}' has ${data.length} bytes of data; its type and dims need ${want}`);
      }
      writeSync(fd, data);
      writeSync(fd, Buffer.alloc(pad(data.length)));
    }
  } finally {
    closeSync(fd);
  }
}
