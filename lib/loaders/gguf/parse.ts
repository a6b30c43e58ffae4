// GGUF header, metadata and tensor table (ggml's docs/gguf.md; versions 2 and 3, little-endian).
// Byte reading is reader.ts's; this file decides what the bytes mean and checks every count,
// length, dimension and offset against the file before anything is allocated from it. A bad file
// answers E_FORMAT naming what is wrong and where.
import { GgufFileReader } from './reader';
import {
  GGML_BLOCK, type GgufFile, type GgufTensorInfo, type GgufTypedArray, type GgufValue,
  GgufValueType, ggmlTypeName,
} from './types';

/** Longest string accepted (a JavaScript string cannot be much longer). */
const MAX_STRING = 1 << 28;
const DEFAULT_ALIGNMENT = 32;

const VALUE_TYPE_NAMES = [
  'uint8', 'int8', 'uint16', 'int16', 'uint32', 'int32', 'float32', 'bool', 'string', 'array',
  'uint64', 'int64', 'float64',
];

/** Bytes of one scalar of each fixed-size type (string: the least it can take, its length). */
const SCALAR_BYTES: Record<number, number> = {
  [GgufValueType.UINT8]: 1, [GgufValueType.INT8]: 1, [GgufValueType.UINT16]: 2, [GgufValueType.INT16]: 2,
  [GgufValueType.UINT32]: 4, [GgufValueType.INT32]: 4, [GgufValueType.FLOAT32]: 4, [GgufValueType.BOOL]: 1,
  [GgufValueType.STRING]: 8, [GgufValueType.UINT64]: 8, [GgufValueType.INT64]: 8, [GgufValueType.FLOAT64]: 8,
};

type TypedCtor = { new (n: number): GgufTypedArray; readonly BYTES_PER_ELEMENT: number };
const TYPED: Record<number, TypedCtor> = {
  [GgufValueType.UINT8]: Uint8Array, [GgufValueType.INT8]: Int8Array, [GgufValueType.UINT16]: Uint16Array,
  [GgufValueType.INT16]: Int16Array, [GgufValueType.UINT32]: Uint32Array, [GgufValueType.INT32]: Int32Array,
  [GgufValueType.FLOAT32]: Float32Array, [GgufValueType.UINT64]: BigUint64Array,
  [GgufValueType.INT64]: BigInt64Array, [GgufValueType.FLOAT64]: Float64Array,
};

const utf8 = new TextDecoder('utf-8');

async function readU64(r: GgufFileReader, what: string): Promise<bigint> {
  const p = r.need(8, what);
  if (p) await p;
  return r.u64();
}

async function readU32(r: GgufFileReader, what: string): Promise<number> {
  const p = r.need(4, what);
  if (p) await p;
  return r.u32();
}

async function readString(r: GgufFileReader, what: string): Promise<string> {
  const length = await readU64(r, `${what}'s length`);
  if (length > BigInt(r.remaining)) {
    throw r.error(`${what} at offset ${r.position - 8} has length ${length}, past the end of the file (${r.remaining} bytes left)`);
  }
  const n = Number(length);
  if (n > MAX_STRING) throw r.error(`${what} at offset ${r.position - 8} has length ${n}; at most ${MAX_STRING} is accepted`);
  if (n === 0) return '';
  const bytes = new Uint8Array(n);
  await r.read(bytes, what);
  return utf8.decode(bytes);
}

async function readScalar(r: GgufFileReader, type: number, what: string): Promise<GgufValue> {
  if (type === GgufValueType.STRING) return readString(r, what);
  const p = r.need(SCALAR_BYTES[type], what);
  if (p) await p;
  switch (type) {
    case GgufValueType.UINT8: return r.u8();
    case GgufValueType.INT8: return r.i8();
    case GgufValueType.UINT16: return r.u16();
    case GgufValueType.INT16: return r.i16();
    case GgufValueType.UINT32: return r.u32();
    case GgufValueType.INT32: return r.i32();
    case GgufValueType.FLOAT32: return r.f32();
    case GgufValueType.FLOAT64: return r.f64();
    case GgufValueType.UINT64: return r.u64();
    case GgufValueType.INT64: return r.i64();
    case GgufValueType.BOOL: {
      const b = r.u8();
      if (b > 1) throw r.error(`${what} is a bool with byte ${b} at offset ${r.position - 1}; accepted: 0 or 1`);
      return b === 1;
    }
  }
  throw new Error(`internal: scalar type ${type}`);
}

function checkValueType(r: GgufFileReader, type: number, what: string, at: number): void {
  if (!(type in SCALAR_BYTES) && type !== GgufValueType.ARRAY) {
    throw r.error(`${what} has value type ${type} at offset ${at}; accepted: 0 to 12 (${VALUE_TYPE_NAMES.join(', ')})`);
  }
}

async function readValue(r: GgufFileReader, key: string): Promise<{ type: number; value: GgufValue }> {
  const at = r.position;
  const type = await readU32(r, `the value type of key '${key}'`);
  checkValueType(r, type, `key '${key}'`, at);
  if (type !== GgufValueType.ARRAY) return { type, value: await readScalar(r, type, `key '${key}'`) };
  const of = await readU32(r, `the element type of array '${key}'`);
  checkValueType(r, of, `array '${key}'`, r.position - 4);
  if (of === GgufValueType.ARRAY) throw r.error(`key '${key}' is an array of arrays, which GGUF readers (llama.cpp's too) do not accept`);
  const n64 = await readU64(r, `the length of array '${key}'`);
  const least = SCALAR_BYTES[of];
  if (n64 * BigInt(least) > BigInt(r.remaining)) {
    throw r.error(`array '${key}' has ${n64} elements of ${VALUE_TYPE_NAMES[of]} (at least ${least} bytes each), more than the ${r.remaining} bytes left in the file`);
  }
  const n = Number(n64);
  const ctor = TYPED[of];
  if (ctor) {
    const out = new ctor(n);
    await r.read(new Uint8Array(out.buffer, 0, n * ctor.BYTES_PER_ELEMENT), `array '${key}'`);
    return { type, value: out };
  }
  const out: GgufValue[] = [];
  for (let i = 0; i < n; i++) out.push(await readScalar(r, of, `element ${i} of array '${key}'`));
  return { type, value: out };
}

/** Element count of ggml dims; E_FORMAT when it is not a safe integer. */
function elements(r: GgufFileReader, name: string, dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) {
    n *= d;
    if (!Number.isSafeInteger(n)) throw r.error(`tensor '${name}' has dims [${dims.join(', ')}]: more than 2^53 - 1 elements`);
  }
  return n;
}

async function readTensorInfo(r: GgufFileReader, index: number): Promise<GgufTensorInfo & { rel: number }> {
  const name = await readString(r, `the name of tensor ${index}`);
  const nDims = await readU32(r, `the rank of tensor '${name}'`);
  if (nDims < 1 || nDims > 4) throw r.error(`tensor '${name}' has ${nDims} dimensions; accepted: 1 to 4`);
  const dims: number[] = [];
  for (let j = 0; j < nDims; j++) {
    const d = await readU64(r, `dimension ${j} of tensor '${name}'`);
    if (d === 0n) throw r.error(`tensor '${name}' has dimension ${j} of 0; accepted: at least 1`);
    if (d > BigInt(Number.MAX_SAFE_INTEGER)) throw r.error(`tensor '${name}' has dimension ${j} of ${d}, more than 2^53 - 1`);
    dims.push(Number(d));
  }
  const n = elements(r, name, dims);
  const typeAt = r.position;
  const typeId = await readU32(r, `the type of tensor '${name}'`);
  const type = ggmlTypeName(typeId);
  if (type === undefined) throw r.error(`tensor '${name}' has ggml type id ${typeId} at offset ${typeAt}, which is not a ggml type this package knows`);
  const block = GGML_BLOCK[type];
  if (dims[0] % block.elements !== 0) {
    throw r.error(`tensor '${name}' of type ${type} has ${dims[0]} elements per row, not a multiple of its block of ${block.elements}`);
  }
  const bytes = (n / block.elements) * block.bytes;
  if (!Number.isSafeInteger(bytes)) throw r.error(`tensor '${name}' of type ${type} with dims [${dims.join(', ')}] has more than 2^53 - 1 bytes`);
  const offset = await readU64(r, `the data offset of tensor '${name}'`);
  if (offset > BigInt(r.size)) throw r.error(`tensor '${name}' has data offset ${offset}, past the end of the file (${r.size} bytes)`);
  return { name, dims, type, offset: 0, bytes, rel: Number(offset) };
}

/** Parses a GGUF file's header, metadata and tensor table through an open reader. */
export async function parseGguf(r: GgufFileReader): Promise<GgufFile> {
  r.seek(0);
  const p = r.need(4, 'the magic');
  if (p) await p;
  const magic = [r.u8(), r.u8(), r.u8(), r.u8()];
  if (String.fromCharCode(...magic) !== 'GGUF') {
    const shown = magic.map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`)).join('');
    throw r.error(`not a GGUF file: it starts with '${shown}', not 'GGUF'`);
  }
  const version = await readU32(r, 'the version');
  if (version !== 2 && version !== 3) {
    const swapped = ((version & 0xff) << 24 | (version & 0xff00) << 8 | (version >>> 8) & 0xff00 | version >>> 24) >>> 0;
    const hint = swapped === 2 || swapped === 3 ? ' (a big-endian file, which this package does not read)'
      : version === 1 ? ' (GGUF v1 is obsolete; llama.cpp no longer reads it either)' : '';
    throw r.error(`version ${version} is not supported${hint}; accepted: 2, 3`);
  }
  const nTensors64 = await readU64(r, 'the tensor count');
  const nKv64 = await readU64(r, 'the metadata count');
  // Each tensor takes at least 32 bytes of table (name length, rank, one dim, type, offset); each
  // key-value pair at least 13 (key length, type, a one-byte value).
  if (nTensors64 * 32n + nKv64 * 13n > BigInt(r.remaining)) {
    throw r.error(`the header claims ${nTensors64} tensors and ${nKv64} metadata entries, more than the ${r.remaining} bytes after it can hold`);
  }
  const nTensors = Number(nTensors64);
  const nKv = Number(nKv64);

  const metadata = new Map<string, GgufValue>();
  let alignmentType = -1;
  for (let i = 0; i < nKv; i++) {
    const key = await readString(r, `the key of metadata entry ${i}`);
    if (key === '') throw r.error(`metadata entry ${i} has an empty key`);
    if (metadata.has(key)) throw r.error(`metadata key '${key}' appears twice`);
    const { type, value } = await readValue(r, key);
    if (key === 'general.alignment') alignmentType = type;
    metadata.set(key, value);
  }
  let alignment = DEFAULT_ALIGNMENT;
  if (alignmentType !== -1) {
    if (alignmentType !== GgufValueType.UINT32) {
      throw r.error(`general.alignment has type ${VALUE_TYPE_NAMES[alignmentType] ?? alignmentType}; it must be uint32`);
    }
    alignment = metadata.get('general.alignment') as number;
    if (alignment === 0 || (alignment & (alignment - 1)) !== 0) {
      throw r.error(`general.alignment is ${alignment}, not a power of two`);
    }
  }

  const table: (GgufTensorInfo & { rel: number })[] = [];
  const names = new Set<string>();
  for (let i = 0; i < nTensors; i++) {
    const t = await readTensorInfo(r, i);
    if (names.has(t.name)) throw r.error(`tensor name '${t.name}' appears twice`);
    names.add(t.name);
    table.push(t);
  }

  const dataOffset = Math.ceil(r.position / alignment) * alignment;
  if (nTensors > 0 && dataOffset > r.size) {
    throw r.error(`the tensor data should start at offset ${dataOffset}, past the end of the file (${r.size} bytes)`);
  }
  const tensors: GgufTensorInfo[] = [];
  for (const { rel, ...t } of table) {
    if (rel % alignment !== 0) throw r.error(`tensor '${t.name}' has data offset ${rel}, not a multiple of the alignment ${alignment}`);
    const offset = dataOffset + rel;
    if (offset + t.bytes > r.size) {
      throw r.error(`tensor '${t.name}' (${t.type}, dims [${t.dims.join(', ')}]) has its ${t.bytes} bytes at offset ${offset}, past the end of the file (${r.size} bytes; truncated?)`);
    }
    tensors.push({ ...t, offset });
  }
  const byOffset = [...tensors].sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < byOffset.length; i++) {
    const a = byOffset[i - 1], b = byOffset[i];
    if (a.offset + a.bytes > b.offset) {
      throw r.error(`the data of tensors '${a.name}' (bytes ${a.offset} to ${a.offset + a.bytes}) and '${b.name}' (from ${b.offset}) overlap`);
    }
  }
  return { version, metadata, tensors, alignment, dataOffset };
}

/**
 * Reads a GGUF file's header, metadata and tensor table (not the tensor data). Numeric metadata
 * arrays come as typed arrays, 64-bit integers as bigint, strings decoded as UTF-8 (invalid bytes
 * become U+FFFD). A file that is not a valid GGUF v2/v3 file answers E_FORMAT naming what is wrong.
 */
export async function readGgufInfo(path: string): Promise<GgufFile> {
  const r = await GgufFileReader.open(path);
  try {
    return await parseGguf(r);
  } finally {
    await r.close();
  }
}
