// Format metadata and the element codecs (the same native routines the quantizer uses).
import { TensorOpsError, callNative } from './errors';
import { allocateArray } from './host-arrays';
import { loadBinding } from './native';
import type { Element, Format } from './types';
import { describe } from './validate';

export interface FormatSpec {
  element: Element | 'uint4' | 'uint8';
  bits: number;
  scale: 'e8m0' | 'float16 scale + bias';
  blockSizes: readonly number[];
}

/** docs/design/API.md's formats table. */
export const formats: Readonly<Record<Format, FormatSpec>> = Object.freeze({
  mxfp8: { element: 'fp8_e4m3', bits: 8, scale: 'e8m0', blockSizes: [32] },
  mxfp8_e5m2: { element: 'fp8_e5m2', bits: 8, scale: 'e8m0', blockSizes: [32] },
  mxfp6_e3m2: { element: 'fp6_e3m2', bits: 6, scale: 'e8m0', blockSizes: [32] },
  mxfp6_e2m3: { element: 'fp6_e2m3', bits: 6, scale: 'e8m0', blockSizes: [32] },
  mxfp4: { element: 'fp4_e2m1', bits: 4, scale: 'e8m0', blockSizes: [32] },
  mxint8: { element: 'int8', bits: 8, scale: 'e8m0', blockSizes: [32] },
  mxint4: { element: 'int4', bits: 4, scale: 'e8m0', blockSizes: [32] },
  mxint2: { element: 'int2', bits: 2, scale: 'e8m0', blockSizes: [32] },
  affine4: { element: 'uint4', bits: 4, scale: 'float16 scale + bias', blockSizes: [32, 64, 128] },
  affine8: { element: 'uint8', bits: 8, scale: 'float16 scale + bias', blockSizes: [32, 64, 128] },
});

/** Encodes float32 values as element codes: round-to-nearest-even, saturating. */
export function encodeElements(element: Element, values: Float32Array): Uint8Array {
  if (!(values instanceof Float32Array)) {
    throw new TensorOpsError('E_ARG', `values must be a Float32Array; got ${describe(values)}`);
  }
  const out = allocateArray(Uint8Array, values.length, 'encodeElements()');
  callNative(() => loadBinding().encodeElements(element, values, out));
  return out;
}

/** Decodes element codes (or E8M0 scale bytes) to float32. */
export function decodeElements(element: Element, codes: Uint8Array): Float32Array {
  if (!(codes instanceof Uint8Array)) {
    throw new TensorOpsError('E_ARG', `codes must be a Uint8Array; got ${describe(codes)}`);
  }
  const out = allocateArray(Float32Array, codes.length, 'decodeElements()');
  callNative(() => loadBinding().decodeElements(element, codes, out));
  return out;
}
