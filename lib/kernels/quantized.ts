// Quantized inputs of user kernels (dev.kernel(), issue #30): how a QuantizedTensor is bound and
// the MSL a kernel decodes it with. A quantized input NAME is bound the way our own shaders bind
// quantized operands (shaders/attention.metal's mxfp8 k/v, qlinear's w): its planes as
//   device const uchar* NAME          the codes, row-major, each row packed (docs/design/API.md)
//   device const uchar* NAME_scales   MX: one E8M0 byte per block of 32 along the last axis
//   device const half*  NAME_scales   affine: one float16 scale per group
//   device const half*  NAME_biases   affine only: one float16 bias per group
//   constant mto_quantized_shape& NAME_shape   rows, cols, row_bytes, block (below)
// and `NAME_format`, a compile-time int (an MTO_FORMAT_* id), names its format for the decode
// helpers. The helpers are shaders/mx_formats.h and mx_dequant.h, the headers our own kernels
// decode with, inlined into the source (newLibraryWithSource: has no files to include from, and the
// emulator then builds the very text Metal compiles), so a user kernel reads the same bits the
// same way as the library's own kernels and the cpu backend.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { packageRoot } from '../native';
import type { Format } from '../types';

/** The MTO_FORMAT_* id of each format (shaders/mx_formats.h; native/core/formats.h's enum). */
export const FORMAT_IDS: Readonly<Record<Format, string>> = {
  mxfp8: 'MTO_FORMAT_MXFP8_E4M3', mxfp8_e5m2: 'MTO_FORMAT_MXFP8_E5M2', mxfp6_e3m2: 'MTO_FORMAT_MXFP6_E3M2',
  mxfp6_e2m3: 'MTO_FORMAT_MXFP6_E2M3', mxfp4: 'MTO_FORMAT_MXFP4', mxint8: 'MTO_FORMAT_MXINT8',
  mxint4: 'MTO_FORMAT_MXINT4', mxint2: 'MTO_FORMAT_MXINT2', affine4: 'MTO_FORMAT_AFFINE4', affine8: 'MTO_FORMAT_AFFINE8',
};

export const isAffine = (f: Format) => f.startsWith('affine');

/** The planes of a quantized input, in binding order, with their MSL parameter types. */
export function quantizedPlanes(name: string, format: Format): { plane: 'codes' | 'scales' | 'biases' | 'shape'; name: string; param: string }[] {
  return [
    { plane: 'codes', name, param: `device const uchar* ${name}` },
    { plane: 'scales', name: `${name}_scales`, param: `device const ${isAffine(format) ? 'half' : 'uchar'}* ${name}_scales` },
    ...(isAffine(format) ? [{ plane: 'biases' as const, name: `${name}_biases`, param: `device const half* ${name}_biases` }] : []),
    { plane: 'shape', name: `${name}_shape`, param: `constant mto_quantized_shape& ${name}_shape` },
  ];
}

/** NAME_shape's four uint32 values: rows (every dim but the last, multiplied), cols, code bytes per row, elements per scale. */
export function quantizedShape(shape: readonly number[], bits: number, block: number): Int32Array {
  const cols = shape.length ? shape[shape.length - 1] : 1;
  const rows = shape.slice(0, -1).reduce((a, b) => a * b, 1);
  return new Int32Array([rows, cols, (cols * bits) / 8, block]);
}

// The helpers after the headers: the element at (row, col) of a quantized input, as the library's
// dequantize computes it (MX: element value times the block's 2^(e - 127), a NaN scale byte making
// the block NaN; affine: s * q + b in float32 from the group's float16 s and b).
const HELPERS = `
// A quantized input's shape: rows = every dimension but the last multiplied, cols = the last one
// (a multiple of block), row_bytes = bytes of codes per row, block = elements per scale (and bias).
struct mto_quantized_shape {
  uint rows;
  uint cols;
  uint row_bytes;
  uint block;
};

// Element (row, col) of an MX input: mto_quantized_at<NAME_format>(NAME, NAME_scales, NAME_shape, row, col).
template <int FMT>
inline float mto_quantized_at(device const uchar* codes, device const uchar* scales,
                              constant mto_quantized_shape& s, uint row, uint col) {
  const device uchar* r = codes + ulong(row) * ulong(s.row_bytes);
  const float scale = mto_decode_e8m0(uint(scales[ulong(row) * ulong(s.cols / s.block) + ulong(col / s.block)]));
  return mto_decode_element(mto_format_element(FMT), mto_packed_code<FMT>(r, col)) * scale;
}

// Element (row, col) of an affine input: mto_quantized_at<NAME_format>(NAME, NAME_scales, NAME_biases, NAME_shape, row, col).
template <int FMT>
inline float mto_quantized_at(device const uchar* codes, device const half* scales, device const half* biases,
                              constant mto_quantized_shape& s, uint row, uint col) {
  const device uchar* r = codes + ulong(row) * ulong(s.row_bytes);
  const ulong g = ulong(row) * ulong(s.cols / s.block) + ulong(col / s.block);
  return float(scales[g]) * float(mto_packed_code<FMT>(r, col)) + float(biases[g]);
}
`;

let headers: string | undefined;
/** mx_formats.h and mx_dequant.h, each framed by #line so messages name the real file, then the helpers. */
export function quantizedPrelude(): string {
  if (headers === undefined) {
    const read = (f: string) => readFileSync(join(packageRoot, 'shaders', f), 'utf8')
      // Inlined here in order: the quoted include of the first by the second is already satisfied.
      .replace(/^\s*#\s*include\s*"[^"]+"\s*$/gm, '');
    headers = ['#line 1 "mx_formats.h"', read('mx_formats.h'), '#line 1 "mx_dequant.h"', read('mx_dequant.h'),
      '#line 1 "mto_quantized_inputs.h"', HELPERS].join('\n');
  }
  return headers;
}
