// Raw GGUF bytes, for files writeGguf would not write (wrong magic or version, counts, types,
// offsets): the header, metadata entries and tensor infos built field by field.
export const u32 = (v: number) => { const b = Buffer.alloc(4); b.writeUInt32LE(v >>> 0); return b; };
export const u64 = (v: number | bigint) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); return b; };
export const str = (s: string) => Buffer.concat([u64(Buffer.byteLength(s)), Buffer.from(s)]);
export const kvU32 = (k: string, v: number) => Buffer.concat([str(k), u32(4), u32(v)]);
export const tinfo = (name: string, dims: (number | bigint)[], type: number, offset: number | bigint) =>
  Buffer.concat([str(name), u32(dims.length), ...dims.map(u64), u32(type), u64(offset)]);
export function raw(o: {
  magic?: string; version?: number; nTensors?: bigint; nKv?: bigint; kvs?: Buffer[]; tensors?: Buffer[];
  data?: Buffer; alignment?: number;
}): Buffer {
  const kvs = o.kvs ?? [], tensors = o.tensors ?? [];
  const head = Buffer.concat([
    Buffer.from(o.magic ?? 'GGUF', 'latin1'), u32(o.version ?? 3), u64(o.nTensors ?? BigInt(tensors.length)),
    u64(o.nKv ?? BigInt(kvs.length)), ...kvs, ...tensors,
  ]);
  const a = o.alignment ?? 32;
  return Buffer.concat([head, Buffer.alloc((a - (head.length % a)) % a), o.data ?? Buffer.alloc(0)]);
}
