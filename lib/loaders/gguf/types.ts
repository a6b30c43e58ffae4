// GGUF (version 3) as llama.cpp writes it: the metadata value types, the ggml tensor types we know
// the block layout of, and the parsed file's shape. The spec: ggml's docs/gguf.md; the type ids:
// ggml.h's `enum ggml_type` (append-only, with gaps where types were removed).

/** Metadata value types (`gguf_type`). */
export const enum GgufValueType {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
}

/**
 * ggml tensor types by id (ggml.h's `enum ggml_type`). A file may hold any of them (its table is
 * parsed); lib/loaders/gguf/tensors.ts says which ones load.
 */
export const GGML_TYPES = Object.freeze({
  F32: 0, F16: 1, Q4_0: 2, Q4_1: 3, Q5_0: 6, Q5_1: 7, Q8_0: 8, Q8_1: 9,
  Q2_K: 10, Q3_K: 11, Q4_K: 12, Q5_K: 13, Q6_K: 14, Q8_K: 15,
  IQ2_XXS: 16, IQ2_XS: 17, IQ3_XXS: 18, IQ1_S: 19, IQ4_NL: 20, IQ3_S: 21, IQ2_S: 22, IQ4_XS: 23,
  I8: 24, I16: 25, I32: 26, I64: 27, F64: 28, IQ1_M: 29, BF16: 30, TQ1_0: 34, TQ2_0: 35,
  MXFP4: 39, NVFP4: 40, Q1_0: 41, Q2_0: 42,
} as const satisfies Record<GgmlTypeName, number>);

/** The ggml tensor types by name (ggml.h's GGML_TYPE_* without the prefix). */
export type GgmlTypeName =
  | 'F32' | 'F16' | 'BF16' | 'F64' | 'I8' | 'I16' | 'I32' | 'I64'
  | 'Q4_0' | 'Q4_1' | 'Q5_0' | 'Q5_1' | 'Q8_0' | 'Q8_1' | 'Q1_0' | 'Q2_0'
  | 'Q2_K' | 'Q3_K' | 'Q4_K' | 'Q5_K' | 'Q6_K' | 'Q8_K'
  | 'IQ2_XXS' | 'IQ2_XS' | 'IQ2_S' | 'IQ3_XXS' | 'IQ3_S' | 'IQ1_S' | 'IQ1_M' | 'IQ4_NL' | 'IQ4_XS'
  | 'TQ1_0' | 'TQ2_0' | 'MXFP4' | 'NVFP4';

/** Elements per block and bytes per block of each type (ggml's `type_traits`). */
export const GGML_BLOCK: Readonly<Record<GgmlTypeName, { elements: number; bytes: number }>> = {
  F32: { elements: 1, bytes: 4 }, F16: { elements: 1, bytes: 2 }, BF16: { elements: 1, bytes: 2 },
  F64: { elements: 1, bytes: 8 }, I8: { elements: 1, bytes: 1 }, I16: { elements: 1, bytes: 2 },
  I32: { elements: 1, bytes: 4 }, I64: { elements: 1, bytes: 8 },
  Q4_0: { elements: 32, bytes: 18 }, Q4_1: { elements: 32, bytes: 20 },
  Q5_0: { elements: 32, bytes: 22 }, Q5_1: { elements: 32, bytes: 24 },
  Q8_0: { elements: 32, bytes: 34 }, Q8_1: { elements: 32, bytes: 36 },
  Q2_K: { elements: 256, bytes: 84 }, Q3_K: { elements: 256, bytes: 110 },
  Q4_K: { elements: 256, bytes: 144 }, Q5_K: { elements: 256, bytes: 176 },
  Q6_K: { elements: 256, bytes: 210 }, Q8_K: { elements: 256, bytes: 292 },
  IQ2_XXS: { elements: 256, bytes: 66 }, IQ2_XS: { elements: 256, bytes: 74 },
  IQ3_XXS: { elements: 256, bytes: 98 }, IQ1_S: { elements: 256, bytes: 50 },
  IQ4_NL: { elements: 32, bytes: 18 }, IQ3_S: { elements: 256, bytes: 110 },
  IQ2_S: { elements: 256, bytes: 82 }, IQ4_XS: { elements: 256, bytes: 136 },
  IQ1_M: { elements: 256, bytes: 56 }, TQ1_0: { elements: 256, bytes: 54 },
  TQ2_0: { elements: 256, bytes: 66 }, MXFP4: { elements: 32, bytes: 17 },
  NVFP4: { elements: 64, bytes: 36 }, Q1_0: { elements: 128, bytes: 18 },
  Q2_0: { elements: 64, bytes: 18 },
};

/** The name of a ggml type id, or undefined for an id this package does not know. */
export function ggmlTypeName(id: number): GgmlTypeName | undefined {
  for (const [name, value] of Object.entries(GGML_TYPES)) if (value === id) return name as GgmlTypeName;
  return undefined;
}

/** A metadata value as parsed: numbers (64-bit integers as bigint), strings, booleans, arrays. */
export type GgufValue = number | bigint | string | boolean | GgufValue[] | GgufTypedArray;
/** Large numeric arrays (token scores, token types) stay typed arrays. */
export type GgufTypedArray = Float32Array | Int32Array | Uint32Array | Uint8Array | Int8Array
  | Uint16Array | Int16Array | Float64Array | BigInt64Array | BigUint64Array;

/** One entry of a GGUF file's tensor table. */
export interface GgufTensorInfo {
  name: string;
  /** ggml order: dims[0] is the innermost (contiguous) axis; a loaded tensor's shape is these reversed. */
  dims: number[];
  type: GgmlTypeName;
  /** Byte offset of the data from the start of the file. */
  offset: number;
  /** Bytes of data. */
  bytes: number;
}

/** A GGUF file's header, metadata and tensor table, as readGgufInfo() parses them. */
export interface GgufFile {
  /** 2 or 3. */
  version: number;
  /** The key-value pairs in file order (`general.architecture`, `tokenizer.ggml.tokens`, ...). */
  metadata: Map<string, GgufValue>;
  /** In file order. */
  tensors: GgufTensorInfo[];
  /** general.alignment, or 32. */
  alignment: number;
  /** Byte offset of the tensor data section. */
  dataOffset: number;
}
