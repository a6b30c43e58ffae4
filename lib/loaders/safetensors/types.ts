// safetensors as Hugging Face's `safetensors` crate defines it: an 8-byte little-endian header
// length, a JSON header (tensor name -> { dtype, shape, data_offsets }, and an optional
// `__metadata__` string map), then the data section the offsets are relative to. The dtype names
// and sizes are the crate's `Dtype` enum (sub-byte ones pack elements densely).

/** The element types a safetensors header may name (the safetensors crate's `Dtype`). */
export type SafetensorsDType =
  | 'BOOL' | 'U8' | 'I8' | 'F8_E5M2' | 'F8_E4M3' | 'F8_E8M0' | 'F8_E4M3FNUZ' | 'F8_E5M2FNUZ'
  | 'I16' | 'U16' | 'F16' | 'BF16' | 'I32' | 'U32' | 'F32' | 'I64' | 'U64' | 'F64' | 'C64'
  | 'F4' | 'F6_E2M3' | 'F6_E3M2';

/** Bits per element of each safetensors dtype (sub-byte ones pack densely). */
export const SAFETENSORS_DTYPE_BITS: Readonly<Record<SafetensorsDType, number>> = {
  BOOL: 8, U8: 8, I8: 8, F8_E5M2: 8, F8_E4M3: 8, F8_E8M0: 8, F8_E4M3FNUZ: 8, F8_E5M2FNUZ: 8,
  I16: 16, U16: 16, F16: 16, BF16: 16, I32: 32, U32: 32, F32: 32, I64: 64, U64: 64, F64: 64,
  C64: 64, F4: 4, F6_E2M3: 6, F6_E3M2: 6,
};

/** The largest JSON header accepted (the safetensors crate's limit is 100 MB too). */
export const MAX_HEADER_BYTES = 100 * 1024 * 1024;

/** One entry of a file's header. */
export interface SafetensorsTensorInfo {
  name: string;
  dtype: SafetensorsDType;
  /** Row-major dimensions, outermost first (empty for a scalar). */
  shape: number[];
  /** Byte offset of the data from the start of the file. */
  offset: number;
  /** Bytes of data. */
  bytes: number;
  /** The file holding the data. */
  file: string;
}

/** A parsed file header. */
export interface SafetensorsHeader {
  file: string;
  /** Size of the whole file in bytes. */
  size: number;
  /** Byte offset of the data section (8 + the header length). */
  dataOffset: number;
  /** `__metadata__`: string keys to string values (empty when absent). */
  metadata: Record<string, string>;
  /** In the order of their data. */
  tensors: SafetensorsTensorInfo[];
}

/** What loadSafetensors reports while loading. */
export interface SafetensorsProgress {
  /** Tensor bytes read so far, of `totalBytes` (those the filter keeps). */
  bytesRead: number;
  totalBytes: number;
  /** Tensors of the result made so far, of `tensorsTotal`. */
  tensorsLoaded: number;
  tensorsTotal: number;
  /** The tensor just made. */
  name: string;
}

export interface LoadSafetensorsOptions {
  /** Called after each tensor of the result is made. */
  onProgress?: (progress: SafetensorsProgress) => void;
  /**
   * Which tensors to load, by their name in the result (a quantized weight's `x.weight`); the
   * others are not read. Default: all.
   */
  filter?: (name: string) => boolean;
  /**
   * F8_E4M3 weights with block scales (`weight_scale_inv`, or `weight_scale`) whose scales are
   * not all powers of two (a power-of-two scale maps exactly onto `mxfp8`): 'bfloat16' (default:
   * dense, one rounding of the exact product), 'float32' (dense, about twice the memory) or
   * 'mxfp8' (re-quantized by dev.quantize: the smallest, the most error). The report gives the
   * measured error of each.
   */
  fp8?: 'bfloat16' | 'float32' | 'mxfp8';
}

/** How one tensor of the result was made from the file. */
export interface SafetensorsConversion {
  /** The tensor's name in the result. */
  name: string;
  /** What the file held: 'BF16', 'mlx affine 4-bit group 64, BF16 scales', 'F8_E4M3 + 128x128 F32 block scales', ... */
  source: string;
  /** What it became: a dtype ('bfloat16') or a format ('affine4'). */
  target: string;
  /** True when every value equals the file's value (the dequantized value, for quantized ones). */
  exact: boolean;
  /** Largest |ours - file's| over the tensor's values (0 when exact). */
  maxAbsError: number;
  /**
   * Largest |ours - file's| / |file's| over its nonzero values (0 when exact). Per value: large
   * where a value is near zero (an affine bias cancelling its scale * code, a re-quantized block's
   * small values); compare maxAbsError with maxAbsValue for the tensor-wide size.
   */
  maxRelError: number;
  /** The largest |file's value| of the tensor, where the error was measured. */
  maxAbsValue?: number;
  /** What else to know (an MLX E8M0 0xFF scale, which MLX reads as infinity and we as NaN). */
  note?: string;
}

/** What loadSafetensors did, tensor by tensor. */
export interface SafetensorsReport {
  /** The data files read, in order. */
  files: string[];
  conversions: SafetensorsConversion[];
  /** Tensors of the file left out, with the reason (zero-element tensors). */
  skipped: { name: string; reason: string }[];
  /** Bytes of tensor data read. */
  bytesRead: number;
}
