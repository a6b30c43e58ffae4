// Reads test/oracle: golden data made by ml_dtypes and PyTorch (see its README.md).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ORACLE_DIR = resolve(__dirname, '..', 'oracle');

export interface ArrayRef {
  file: string;
  shape: number[];
  dtype: 'f32' | 'u8' | 'i8' | 'f64';
}

export type OracleCase = Record<string, unknown> & { kind: string };

let manifest: { cases: OracleCase[] } | undefined;

export function oracleCases(kind: string): OracleCase[] {
  manifest ??= JSON.parse(readFileSync(join(ORACLE_DIR, 'manifest.json'), 'utf8')) as { cases: OracleCase[] };
  return manifest.cases.filter((c) => c.kind === kind);
}

function bytesOf(ref: ArrayRef): Buffer {
  return readFileSync(join(ORACLE_DIR, ref.file));
}

export function f32(ref: unknown): Float32Array {
  const b = bytesOf(ref as ArrayRef);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

export function u8(ref: unknown): Uint8Array {
  return new Uint8Array(bytesOf(ref as ArrayRef));
}

export function shapeOf(ref: unknown): number[] {
  return (ref as ArrayRef).shape;
}
