// Parsing of safetensors headers, sharded indexes (`model.safetensors.index.json`) and the
// model's `config.json`. Everything read is checked before it is used: a bad file answers
// E_FORMAT naming the file and what is wrong, before any allocation sized by the file's claims.
import { readFile, readdir, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { TensorOpsError } from '../../errors';
import { SafetensorsFileReader } from './reader';
import {
  MAX_HEADER_BYTES, SAFETENSORS_DTYPE_BITS, type SafetensorsDType, type SafetensorsHeader, type SafetensorsTensorInfo,
} from './types';

/** Largest config.json or index accepted. */
const MAX_JSON_FILE_BYTES = 64 * 1024 * 1024;
/** The ranks a tensor of this package may have. */
const MAX_RANK = 8;

function formatError(file: string, message: string): TensorOpsError {
  return new TensorOpsError('E_FORMAT', `'${file}': ${message}`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A JSON text as an object (E_FORMAT naming `file` for bad UTF-8, bad JSON or a non-object). */
export function parseJsonObject(bytes: Uint8Array, file: string, what: string): Record<string, unknown> {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw formatError(file, `the ${what} is not valid UTF-8`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw formatError(file, `the ${what} is not valid JSON (${(err as Error).message})`);
  }
  if (!isObject(value)) throw formatError(file, `the ${what} must be a JSON object; it is ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`);
  return value;
}

/**
 * The tensor table of a safetensors header, checked against a data section of `dataBytes`:
 * known dtypes, shapes of at most rank 8 whose byte size is the entry's, offsets inside the data
 * section, no two tensors overlapping, `__metadata__` a string map.
 */
export function parseHeaderJson(
  json: Uint8Array, file: string, dataOffset: number, dataBytes: number,
): { metadata: Record<string, string>; tensors: SafetensorsTensorInfo[] } {
  const header = parseJsonObject(json, file, 'header');
  const metadata: Record<string, string> = {};
  const tensors: (SafetensorsTensorInfo & { begin: number })[] = [];
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') {
      if (!isObject(entry)) throw formatError(file, '__metadata__ must be an object of strings');
      for (const [k, v] of Object.entries(entry)) {
        if (typeof v !== 'string') throw formatError(file, `__metadata__['${k}'] must be a string; it is ${typeof v}`);
        metadata[k] = v;
      }
      continue;
    }
    const where = `tensor '${name}'`;
    if (!isObject(entry)) throw formatError(file, `${where}: its entry must be an object with dtype, shape and data_offsets`);
    const { dtype, shape, data_offsets: offsets } = entry;
    if (typeof dtype !== 'string' || !Object.prototype.hasOwnProperty.call(SAFETENSORS_DTYPE_BITS, dtype)) {
      throw formatError(file, `${where}: unknown dtype ${JSON.stringify(dtype)}; known: ${Object.keys(SAFETENSORS_DTYPE_BITS).join(', ')}`);
    }
    if (!Array.isArray(shape)) throw formatError(file, `${where}: shape must be an array of integers`);
    if (shape.length > MAX_RANK) throw formatError(file, `${where}: rank ${shape.length}; this package takes tensors of rank 0 to ${MAX_RANK}`);
    let elements = 1;
    for (const [i, d] of shape.entries()) {
      if (!Number.isSafeInteger(d) || d < 0) throw formatError(file, `${where}: shape[${i}] must be a non-negative integer; it is ${JSON.stringify(d)}`);
      elements *= d;
      // A product past the data section's bits cannot match the entry's size: stop before it overflows.
      if (elements > dataBytes * 8) {
        throw formatError(file, `${where}: shape [${shape.join(', ')}] has more elements than the ${dataBytes}-byte data section can hold`);
      }
    }
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && o >= 0)) {
      throw formatError(file, `${where}: data_offsets must be [begin, end], two non-negative integers`);
    }
    const [begin, end] = offsets as number[];
    if (begin > end) throw formatError(file, `${where}: data_offsets [${begin}, ${end}] end before they begin`);
    if (end > dataBytes) {
      throw formatError(file, `${where}: data_offsets [${begin}, ${end}] run past the data section (${dataBytes} bytes; the file is truncated or the offsets are wrong)`);
    }
    const bits = SAFETENSORS_DTYPE_BITS[dtype as SafetensorsDType];
    const wantBits = elements * bits;
    if (wantBits % 8 !== 0 || wantBits / 8 !== end - begin) {
      throw formatError(file, `${where}: a ${dtype} tensor of shape [${shape.join(', ')}] takes ${wantBits / 8} bytes; data_offsets [${begin}, ${end}] hold ${end - begin}`);
    }
    tensors.push({ name, dtype: dtype as SafetensorsDType, shape: shape as number[], offset: dataOffset + begin, bytes: end - begin, file, begin });
  }
  tensors.sort((a, b) => a.begin - b.begin || a.bytes - b.bytes);
  for (let i = 1; i < tensors.length; i++) {
    const prev = tensors[i - 1], cur = tensors[i];
    if (cur.begin < prev.begin + prev.bytes) {
      throw formatError(file, `tensors '${prev.name}' and '${cur.name}' overlap (data_offsets from ${prev.begin} and ${cur.begin})`);
    }
  }
  return { metadata, tensors: tensors.map(({ begin: _begin, ...t }) => t) };
}

/** Reads and checks a file's header (the first 8 + N bytes; nothing of the data). */
export async function parseSafetensorsHeader(reader: SafetensorsFileReader): Promise<SafetensorsHeader> {
  const file = reader.path;
  if (reader.size < 8) throw formatError(file, `${reader.size} bytes is too short for a safetensors file (the header length alone is 8)`);
  const lengthBytes = await reader.read(0, 8, 'the header length');
  const length = new DataView(lengthBytes.buffer).getBigUint64(0, true);
  if (length > BigInt(MAX_HEADER_BYTES)) {
    throw formatError(file, `the header length is ${length} bytes; the largest accepted is ${MAX_HEADER_BYTES} (not a safetensors file, or a damaged one)`);
  }
  const n = Number(length);
  if (8 + n > reader.size) {
    throw formatError(file, `the header length is ${n} bytes, but the file has only ${reader.size - 8} after it (truncated, or not a safetensors file)`);
  }
  if (n < 2) throw formatError(file, `the header length is ${n}; a header is a JSON object of at least 2 bytes`);
  const json = await reader.read(8, n, 'the header');
  const dataOffset = 8 + n;
  const { metadata, tensors } = parseHeaderJson(json, file, dataOffset, reader.size - dataOffset);
  return { file, size: reader.size, dataOffset, metadata, tensors };
}

/** A small JSON file as an object; `undefined` when it does not exist. */
export async function readJsonFile(path: string, what: string): Promise<Record<string, unknown> | undefined> {
  let size: number;
  try {
    const st = await stat(path);
    if (!st.isFile()) throw new TensorOpsError('E_LOAD', `'${path}' is not a regular file`);
    size = st.size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if (err instanceof TensorOpsError) throw err;
    throw new TensorOpsError('E_LOAD', `cannot read '${path}': ${(err as Error).message}`, { cause: err });
  }
  if (size > MAX_JSON_FILE_BYTES) throw formatError(path, `${size} bytes is too large for a ${what} (at most ${MAX_JSON_FILE_BYTES})`);
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (err) {
    throw new TensorOpsError('E_LOAD', `cannot read '${path}': ${(err as Error).message}`, { cause: err });
  }
  return parseJsonObject(bytes, path, what);
}

/**
 * A sharded model's index: tensor name -> the path of its shard (inside the index's directory;
 * a shard outside it is E_FORMAT).
 */
export async function readSafetensorsIndex(path: string): Promise<Map<string, string>> {
  const index = await readJsonFile(path, 'safetensors index');
  if (!index) throw new TensorOpsError('E_LOAD', `cannot open '${path}': it does not exist`);
  const map = index.weight_map;
  if (!isObject(map)) throw formatError(path, 'weight_map must be an object of tensor name -> file name');
  const dir = dirname(path);
  const out = new Map<string, string>();
  for (const [name, shard] of Object.entries(map)) {
    if (typeof shard !== 'string' || shard === '') throw formatError(path, `weight_map['${name}'] must be a file name`);
    const rel = normalize(shard);
    if (isAbsolute(shard) || rel === '..' || rel.startsWith(`..${sep}`) || rel.startsWith('../')) {
      throw formatError(path, `weight_map['${name}'] is '${shard}', outside the index's directory`);
    }
    out.set(name, join(dir, rel));
  }
  if (out.size === 0) throw formatError(path, 'weight_map is empty');
  return out;
}

/** Whether a path names an index file rather than a data file. */
export function isIndexPath(path: string): boolean {
  return basename(path).endsWith('.index.json');
}

/** Where a model's data files, index and config.json are. */
export interface SafetensorsLocation {
  files: string[];
  /** A sharded model's weight_map (tensor name -> shard path). */
  index?: Map<string, string>;
  indexPath?: string;
  /** The directory config.json is looked for in. */
  dir: string;
}

/** Where the data files, the index and config.json are, for a file, an index or a directory. */
export async function locateSafetensors(path: string): Promise<SafetensorsLocation> {
  let isDir: boolean;
  try {
    isDir = (await stat(path)).isDirectory();
  } catch (err) {
    throw new TensorOpsError('E_LOAD', `cannot open '${path}': ${(err as Error).message}`, { cause: err });
  }
  const exists = async (p: string) => stat(p).then((s) => s.isFile(), () => false);
  if (!isDir) {
    if (isIndexPath(path)) {
      const index = await readSafetensorsIndex(path);
      return { files: [...new Set(index.values())], index, indexPath: path, dir: dirname(path) };
    }
    return { files: [path], dir: dirname(path) };
  }
  const indexPath = join(path, 'model.safetensors.index.json');
  if (await exists(indexPath)) {
    const index = await readSafetensorsIndex(indexPath);
    return { files: [...new Set(index.values())], index, indexPath, dir: path };
  }
  if (await exists(join(path, 'model.safetensors'))) return { files: [join(path, 'model.safetensors')], dir: path };
  const names = (await readdir(path)).filter((n) => n.endsWith('.safetensors')).sort();
  if (names.length === 0) throw new TensorOpsError('E_LOAD', `'${path}' holds no .safetensors file and no model.safetensors.index.json`);
  return { files: names.map((n) => join(path, n)), dir: path };
}

/**
 * Every file's header, checked and joined into one table (a name in two files, or an index entry
 * its shard does not hold, is E_FORMAT). `readers` receives each opened file (the caller closes them).
 */
export async function readTables(
  where: SafetensorsLocation, readers: Map<string, SafetensorsFileReader>,
): Promise<{ table: Map<string, SafetensorsTensorInfo>; metadata: Record<string, string> }> {
  const table = new Map<string, SafetensorsTensorInfo>();
  const metadata: Record<string, string> = {};
  for (const file of where.files) {
    const reader = await SafetensorsFileReader.open(file);
    readers.set(file, reader);
    const h = await parseSafetensorsHeader(reader);
    Object.assign(metadata, h.metadata);
    for (const t of h.tensors) {
      const prev = table.get(t.name);
      if (prev) throw new TensorOpsError('E_FORMAT', `tensor '${t.name}' is in both '${prev.file}' and '${t.file}'`);
      table.set(t.name, t);
    }
  }
  if (where.index) {
    for (const [name, file] of where.index) {
      if (table.get(name)?.file !== file) {
        throw formatError(where.indexPath!, `weight_map puts '${name}' in '${file}', which has no such tensor`);
      }
    }
  }
  return { table, metadata };
}

/** What inspectSafetensors returns. */
export interface SafetensorsInfo {
  files: string[];
  /** Every tensor of the files, as their headers describe it (nothing converted). */
  tensors: SafetensorsTensorInfo[];
  metadata: Record<string, string>;
  config: Record<string, unknown> | null;
}

/**
 * A model's tensor table, `__metadata__` and config.json, without reading any tensor data and
 * without a device: for a file, an index or a directory, as loadSafetensors takes.
 */
export async function inspectSafetensors(pathOrDir: string): Promise<SafetensorsInfo> {
  if (typeof pathOrDir !== 'string' || pathOrDir === '') {
    throw new TensorOpsError('E_ARG', `path must be a non-empty string; got ${typeof pathOrDir}`);
  }
  const where = await locateSafetensors(pathOrDir);
  const config = (await readJsonFile(join(where.dir, 'config.json'), 'config.json')) ?? null;
  const readers = new Map<string, SafetensorsFileReader>();
  try {
    const { table, metadata } = await readTables(where, readers);
    return { files: [...where.files], tensors: [...table.values()], metadata, config };
  } finally {
    for (const r of readers.values()) await r.close();
  }
}
