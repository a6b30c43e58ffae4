/** Float element types. float16/bfloat16 cross the boundary as Uint16Array raw bits. */
export type FloatDType = 'float32' | 'float16' | 'bfloat16';
/** Dense element types: the float ones, and int32 (Int32Array) for token ids, positions and indices. */
export type DType = FloatDType | 'int32';
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
  /**
   * metal: the macOS version the tiers were decided on ('26.2'). A process linked against an
   * older SDK (Node's release binaries) may be shown a compatibility version (macOS 26 as 16.0),
   * so the backend reads several sources and sees through it; `os` stays Node's own answer.
   */
  macosVersion?: string;
  /**
   * metal: where `macosVersion` came from: 'kern.osproductversion', 'NSProcessInfo',
   * 'NSProcessInfo 16.0.0 (a compatibility version) read as 26.0', or
   * 'kern.osrelease 25.2.0 (Darwin 25: macOS 26, minor unknown)'.
   */
  macosVersionFrom?: string;
  /**
   * metal: the GPU's core count, which sizes the attention decode's key split. Metal does not
   * report it: it is the IORegistry's `gpu-core-count` of the AGXAccelerator service where that
   * reads 1 to 256, else the device class of the architecture name (4 phone, 8 base chip, 38 Pro
   * or Max, 80 Ultra), else 8.
   */
  gpuCores?: number;
  /** metal: where `gpuCores` came from (see {@link GpuCoresSource}). */
  gpuCoresFrom?: GpuCoresSource;
  /** cpu backend: threads of its pool, used by each op. */
  threads?: number;
  /** Why a faster backend or tier was not used, when one was asked for or could exist. */
  fallbackReason?: string;
  /**
   * metal: shader libraries this GPU could not use (one failed to compile, or a pipeline of it
   * could not be made), each with Metal's message. The ops that would have used one run on the
   * next tier's kernels (tensorops-mx, tensorops, simdgroup), or on the cpu backend below those.
   * Found as ops first need each library, so it can grow after open(); absent while empty.
   */
  fallbacks?: readonly LibraryFallback[];
}

/**
 * Where DeviceInfo.gpuCores came from: 'ioregistry' (the AGXAccelerator service's
 * gpu-core-count, exact), 'device-class' (the architecture name's last letter; a Pro and a Max
 * share one, so a Pro is given a Max's 38), or 'default' (neither: 8).
 */
export type GpuCoresSource = 'ioregistry' | 'device-class' | 'default';

/** A shader library the metal backend stopped using (DeviceInfo.fallbacks). */
export interface LibraryFallback {
  /** The shader file's stem: 'attention_tensorops' for shaders/attention_tensorops.metal. */
  library: string;
  /** Metal's message: the compiler's error, or why the pipeline could not be made. */
  reason: string;
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

export type TypedData = Float32Array | Uint16Array | Uint8Array | Int32Array;

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

/**
 * How linear may treat x: 'float32' (default: x as it is, float32 accumulation) or 'int8' (each
 * block of 32 elements of a row of x quantized to int8 with a float32 scale, multiplied by the
 * weights' integer codes in integer arithmetic, as llama.cpp's q8 dot products: faster decode,
 * error measured in PERFORMANCE.md). A permission: where the backend has no integer kernel for
 * w's format or x's rows, it computes in float32.
 */
export type Activations = 'float32' | 'int8';

export interface LinearOptions {
  bias?: import('./tensor').Tensor;
  outDtype?: FloatDType;
  activations?: Activations;
}

/** gelu: exact (erf) by default, or the tanh approximation. */
export interface GeluOptions {
  approximate?: 'none' | 'tanh';
}

/**
 * swiglu's gpt-oss form (llama.cpp's swiglu_oai): with `alpha`, g = min(gate, limit),
 * u = clamp(up, -limit, limit), out = g * sigmoid(alpha * g) * (u + 1). gpt-oss: alpha 1.702, limit 7.
 */
export interface SwigluOptions {
  /** A finite number > 0; given, swiglu takes the gpt-oss form. */
  alpha?: number;
  /** > 0 (default Infinity: no clamp); only with alpha. */
  limit?: number;
}

/** rmsNorm / layerNorm: eps added to the variance (default 1e-5). */
export interface NormOptions {
  eps?: number;
}

/** rope: see docs/design/API.md "RoPE". */
export interface RopeOptions {
  /** Position of row 0 (rows are offset + l); default 0. Exclusive with positions. */
  offset?: number;
  /** int32 [L]: the position of each row. */
  positions?: import('./tensor').Tensor;
  /** Default 10000. */
  base?: number;
  /** Leading features that rotate (even; default the head dimension D). */
  dims?: number;
  /** 'neox' pairs i with i + dims/2 (default); 'interleaved' pairs 2i with 2i + 1. */
  style?: 'neox' | 'interleaved';
  /** float32 [dims/2]: inverse frequencies (llama3, YaRN scaling), instead of base. */
  freqs?: import('./tensor').Tensor;
  /** 'bhld' (default): x is [B, H, L, D]; 'blhd': [B, L, H, D]. */
  layout?: 'bhld' | 'blhd';
}

/** sample: softmax(logits / temperature) over the topK largest whose probability reaches topP. */
export interface SampleOptions {
  /** 0 picks the largest (argmax); default 1. */
  temperature?: number;
  /** Keep the k largest logits (0 or absent: all). */
  topK?: number;
  /** Keep the smallest set of largest logits whose probability reaches topP; default 1. */
  topP?: number;
  /** The draw of row r depends only on (seed, r): pass a new seed per step. Default 0. */
  seed?: number;
}

/** groupedLinear: the output dtype (default x's dtype). */
export interface GroupedLinearOptions {
  outDtype?: FloatDType;
  activations?: Activations;
}

/** slice along one axis: [start, end). */
export interface SliceOptions {
  axis: number;
  start: number;
  end: number;
}

/** write: where src goes in dst. */
export interface WriteOptions {
  axis: number;
  offset: number;
}

export interface AttentionOptions {
  /** Default 1/sqrt(D). */
  scale?: number;
  /** Bottom-right aligned: query i sees keys j <= i + (Lk - Lq). */
  causal?: boolean;
  /** bool tensor (true = attend) or additive float tensor, broadcastable to [B, Hq, Lq, Lk]. */
  mask?: import('./tensor').Tensor;
  /**
   * Attention sinks (gpt-oss): float32 [Hq], a learned logit per query head that joins each row's
   * softmax denominator with no value, in the scaled-score domain. NaN (or +Infinity) makes the
   * head's rows NaN; -Infinity is no sink; a row that sees no key is still zeros.
   */
  sinks?: import('./tensor').Tensor;
  /**
   * 'bhld' (default): q [B, Hq, Lq, D], k/v [B, Hkv, Lk, D], output likewise; 'blhd': [B, L, H, D]
   * throughout (a projection's output reshaped), dense k and v only.
   */
  layout?: 'bhld' | 'blhd';
}

/**
 * One input of a user kernel. With a dtype: a Tensor, bound as `device const T* name` (T from the
 * dtype). With a format: a QuantizedTensor of that format, bound as its planes `name` (codes,
 * `device const uchar*`), `name_scales` (E8M0 `uchar` for MX, `half` for affine), `name_biases`
 * (affine only), `name_shape` (rows, cols, row_bytes, block) and the compile-time `name_format`
 * (docs/design/API.md "User kernels"). With a format and `scalePlane: true` (tier 'tensorops-mx';
 * formats 'mxfp8', 'mxfp8_e5m2', 'mxfp4'): as ONE tensor with its E8M0 scale plane,
 * `mto_scaled_tensor<F> name` (a `tensor_handle` with a `tensor_blockwise` scale plane), extents
 * (cols, rows), that matmul2d takes as an operand as stored.
 */
export type KernelInput = { name: string; dtype: AnyDType; format?: undefined; scalePlane?: undefined }
  | { name: string; format: Format; dtype?: undefined; scalePlane?: boolean };

/** One output of a user kernel: bound as `device T* name`, made at each call. */
export interface KernelOutput {
  name: string;
  dtype: DType;
  /** The output's shape, unless each call gives it (`shapes`). */
  shape?: readonly number[];
  /** Every element's value before the kernel runs (else: undefined values, which the emulator rejects when read or left unwritten). */
  init?: number;
}

/** A scalar passed at each call, bound as `constant T& name`. */
export interface KernelConstant {
  name: string;
  type: 'int' | 'uint' | 'float' | 'bool';
}

/**
 * Threadgroup memory of a user kernel that each call sizes (Metal's setThreadgroupMemoryLength),
 * bound as `threadgroup T* name [[threadgroup(i)]]`, i its place in the list.
 */
export interface KernelThreadgroupMemory {
  name: string;
  /** The element type T. */
  dtype: DType;
  /** Elements per threadgroup, unless each call gives it (options.threadgroupMemory). */
  length?: number;
}

/** dev.kernel()'s description of a user kernel (docs/design/API.md "User kernels"). */
export interface KernelDescription {
  /** An MSL identifier: the kernel's name. */
  name: string;
  /** The kernel's body, in MSL (the statements inside the function). */
  source: string;
  /** Code before the kernel: helper functions, structs, includes. */
  header?: string;
  inputs?: readonly KernelInput[];
  outputs: readonly KernelOutput[];
  constants?: readonly KernelConstant[];
  /** Compile-time values the source uses: a dtype becomes a type alias, a number an int, a boolean a bool. */
  templates?: Readonly<Record<string, number | boolean | DType>>;
  /** The default grid (threads per dimension) and threadgroup (threads per dimension) of a call. */
  grid?: readonly number[];
  threadgroup?: readonly number[];
  /**
   * 'simdgroup' (default): MSL 3.1. 'tensorops': MSL 4.0 with TensorOps (`<metal_tensor>` and
   * MetalPerformancePrimitives included, `mpp::tensor_ops` opened), on a Mac whose tier is
   * tensorops or tensorops-mx. The emulator scrambles cooperative-tensor layouts and runs each
   * call under two of them, so a kernel that assumes one fails with E_KERNEL. 'tensorops-mx': MSL
   * 4.1, the same plus scale-plane inputs (`scalePlane: true`), on a Mac whose tier is tensorops-mx.
   */
  tier?: 'simdgroup' | 'tensorops' | 'tensorops-mx';
  /**
   * Threadgroup memory set by the host at each call: at most 32 KiB per threadgroup in all, each
   * entry counted rounded up to 16 bytes (Metal's rule), with the source's own `threadgroup` arrays
   * on top (the emulator counts those too).
   */
  threadgroupMemory?: readonly KernelThreadgroupMemory[];
}

/** The options of one call of a user kernel. */
export interface KernelCallOptions {
  /** Threads per dimension (1 to 3 numbers), a multiple of `threadgroup` in each. */
  grid?: readonly number[];
  /** Threads per threadgroup per dimension (at most 1024 in all). */
  threadgroup?: readonly number[];
  /** Each output's shape by name, for outputs whose description has none. */
  shapes?: Readonly<Record<string, readonly number[]>>;
  /** Each constant's value by name. */
  constants?: Readonly<Record<string, number | boolean>>;
  /** Elements per threadgroup of each threadgroupMemory entry by name (for this call; else the description's length). */
  threadgroupMemory?: Readonly<Record<string, number>>;
}
