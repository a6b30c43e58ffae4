/** Dense element types. float16/bfloat16 cross the boundary as Uint16Array raw bits. */
export type DType = 'float32' | 'float16' | 'bfloat16';
/** Mask tensors only: Uint8Array, nonzero = attend. */
export type MaskDType = 'bool';
export type AnyDType = DType | MaskDType;

/** Quantized formats (docs/design/API.md). Block size 32 for MX formats; 32/64/128 for affine. */
export type Format =
  | 'mxfp8'
  | 'mxfp8_e5m2'
  | 'mxfp6_e3m2'
  | 'mxfp6_e2m3'
  | 'mxfp4'
  | 'mxint8'
  | 'mxint4'
  | 'mxint2'
  | 'affine4'
  | 'affine8';

/** Element encodings of the MX formats, for encodeElements/decodeElements. */
export type Element =
  | 'fp8_e4m3'
  | 'fp8_e5m2'
  | 'fp6_e3m2'
  | 'fp6_e2m3'
  | 'fp4_e2m1'
  | 'int8'
  | 'int4'
  | 'int2'
  | 'e8m0';

export type Backend = 'metal' | 'cpu';
export type Tier = 'tensorops-mx' | 'tensorops' | 'simdgroup' | 'cpu';

export interface DeviceInfo {
  backend: Backend;
  tier: Tier;
  name: string;
  neuralAccelerators: boolean;
  gpuFamily?: string;
  os: string;
  arch: string;
  unifiedMemory?: boolean;
  recommendedWorkingSetBytes?: number;
  /** cpu backend: threads of its pool, used by each op. */
  threads?: number;
  /** Why a faster backend or tier was not used, when one was asked for or could exist. */
  fallbackReason?: string;
}

export interface OpenOptions {
  /**
   * 'auto' (default) picks metal where usable, else cpu. Env METAL_TENSOROPS_BACKEND overrides;
   * env METAL_TENSOROPS_TIER=tensorops-mx|tensorops|simdgroup|cpu forces a metal tier.
   */
  backend?: 'auto' | Backend;
  /** cpu backend threads; default one per hardware thread. */
  threads?: number;
}

export type TypedData = Float32Array | Uint16Array | Uint8Array;

export interface QuantizeOptions {
  format: Format;
  /** MX formats: 32. affine formats: 32, 64 (default) or 128. */
  blockSize?: number;
}

export interface FromQuantizedOptions extends QuantizeOptions {
  shape: readonly number[];
  /** Packed element codes, row-major. */
  codes: Uint8Array;
  /** MX: E8M0 bytes, one per block. affine: float16 bits, one per group. */
  scales: Uint8Array | Uint16Array;
  /** affine only: float16 bits, one per group. */
  biases?: Uint16Array;
}

export interface LinearOptions {
  bias?: import('./tensor').Tensor;
  outDtype?: DType;
}

export interface AttentionOptions {
  /** Default 1/sqrt(D). */
  scale?: number;
  /** Bottom-right aligned: query i sees keys j <= i + (Lk - Lq). */
  causal?: boolean;
  /** bool tensor (true = attend) or additive float tensor, broadcastable to [B, Hq, Lq, Lk]. */
  mask?: import('./tensor').Tensor;
}
