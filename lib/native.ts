// Loads the addon: a prebuild from prebuilds/ or a local build from build/Release (node-gyp-build
// looks in both). When nothing fits, the error says what was looked for and how to fix it.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TensorOpsError } from './errors';
import type { TypedData } from './types';

/**
 * A tensor as the addon names it: an id in the environment's table of tensors
 * (native/addon/tensor_table.h), a plain number, so that an op's output costs no native object.
 * The id belongs to the one Tensor object holding it until that object is collected.
 */
export type NativeTensorHandle = number & { readonly __nativeTensor: unique symbol };
export type NativeQTensorHandle = number & { readonly __nativeQTensor: unique symbol };

/** The addon's functions over tensor ids (`binding.tensors`). */
export interface NativeTensors {
  /** A fresh array; a disposed tensor still reports its shape (and dtype). */
  shape(t: NativeTensorHandle | NativeQTensorHandle): number[];
  dtype(t: NativeTensorHandle): 'float32' | 'float16' | 'bfloat16' | 'int32' | 'bool';
  format(q: NativeQTensorHandle): import('./types').Format;
  blockSize(q: NativeQTensorHandle): number;
  disposed(t: NativeTensorHandle | NativeQTensorHandle): boolean;
  /** Bytes of storage held (0 once disposed). */
  bytes(t: NativeTensorHandle | NativeQTensorHandle): number;
  /** undefined when ready, a Promise settled once the op writing it ran; throws its failure. */
  whenReady(t: NativeTensorHandle | NativeQTensorHandle, readId?: number): Promise<void> | undefined;
  /** Registers a read at its call (a later write waits for it); endRead(t, id) once it is over. */
  beginRead(t: NativeTensorHandle | NativeQTensorHandle): number;
  endRead(t: NativeTensorHandle | NativeQTensorHandle, readId: number): void;
  /** A view with another shape: the same storage and writing op, a new id. */
  reshape(t: NativeTensorHandle, shape: readonly number[]): NativeTensorHandle;
  /**
   * Copies into `out`, allocated by lib/ (host-arrays.ts says why), once ready: at once, or (1 MiB
   * and more) on libuv's thread pool, returning a Promise.
   */
  readInto(t: NativeTensorHandle, out: TypedData, readId?: number): Promise<void> | undefined;
  toFloat32Into(t: NativeTensorHandle, out: Float32Array, readId?: number): Promise<void> | undefined;
  /** Elements of each plane: codes (bytes), scales and biases (bytes, or float16 values for affine). */
  planeLengths(q: NativeQTensorHandle): { codes: number; scales: number; biases: number };
  /**
   * native/core/scale_plane.h's rule: whether a quantized tensor of `format`, `block` and `shape`
   * can be one Metal tensor with an E8M0 scale plane at `tier`, and its descriptor (extents and
   * strides innermost first, strides in elements; dataType a raw MTLTensorDataType), else why not.
   */
  scalePlaneLayout(format: string, block: number, shape: readonly number[], tier: string):
    { ok: true; dataType: number; dimensions: [number, number]; strides: [number, number] } | { ok: false; reason: string };
  codesInto(q: NativeQTensorHandle, out: Uint8Array, readId?: number): Promise<void> | undefined;
  scalesInto(q: NativeQTensorHandle, out: Uint8Array | Uint16Array, readId?: number): Promise<void> | undefined;
  biasesInto(q: NativeQTensorHandle, out: Uint16Array, readId?: number): Promise<void> | undefined;
  /** Drops the storage now (queued ops keep theirs); E_DISPOSED when already disposed. */
  dispose(t: NativeTensorHandle | NativeQTensorHandle): void;
  /** Frees the id: only once no object can pass it again (the FinalizationRegistry). Never throws. */
  release(t: NativeTensorHandle | NativeQTensorHandle): void;
}

type Operand = NativeTensorHandle | NativeQTensorHandle;

export interface NativeBufferStats {
  liveBytes: number;
  cachedBytes: number;
  cachedBlocks: number;
  allocations: number;
  reuses: number;
  frees: number;
}

export interface NativeDeviceHandle {
  info(): import('./backend').NativeInfo;
  /** dev.info.fallbacks as it is now (the backend finds unusable shader libraries as ops need them). */
  fallbacks(): import('./types').LibraryFallback[];
  /** Drops the backends (threads joined when idle); later calls throw E_DISPOSED. */
  close(): void;
  /** undefined when every queued op ran, else a Promise resolved then. */
  synchronize(): Promise<void> | undefined;
  /** Internal, for tests: the counters of the buffer pool tensors come from (null: none). */
  bufferStats(): NativeBufferStats | null;
  tensor(data: TypedData, shape: readonly number[], dtype: string): NativeTensorHandle;
  fromQuantized(
    format: string, shape: readonly number[], blockSize: number, codes: Uint8Array,
    scales: Uint8Array | Uint16Array, biases: Uint16Array | undefined,
  ): NativeQTensorHandle;
  // The ops return their outputs at once, queued on the device's stream.
  quantize(x: NativeTensorHandle, format: string, blockSize: number): NativeQTensorHandle;
  dequantize(q: NativeQTensorHandle, dtype: string | null): NativeTensorHandle;
  cast(x: NativeTensorHandle, dtype: string): NativeTensorHandle;
  linear(x: Operand, w: Operand, bias: NativeTensorHandle | null, outDtype: string | null, int8Activations: boolean): NativeTensorHandle;
  matmul(a: NativeTensorHandle, b: NativeTensorHandle): NativeTensorHandle;
  attention(
    q: Operand, k: Operand, v: Operand, scale: number | null, causal: boolean,
    mask: NativeTensorHandle | null, sinks: NativeTensorHandle | null,
  ): NativeTensorHandle;
  // The model ops (lib/ops/).
  unary(op: 'silu' | 'gelu' | 'gelu_tanh', x: NativeTensorHandle): NativeTensorHandle;
  binary(
    op: 'add' | 'mul' | 'swiglu' | 'swiglu_oai', a: NativeTensorHandle, b: NativeTensorHandle, alpha?: number, limit?: number,
  ): NativeTensorHandle;
  norm(
    layer: boolean, x: NativeTensorHandle, weight: NativeTensorHandle | null, bias: NativeTensorHandle | null,
    eps: number,
  ): NativeTensorHandle;
  rope(
    x: NativeTensorHandle, positions: NativeTensorHandle | null, freqs: NativeTensorHandle | null,
    layout: string, style: string, base: number, offset: number, dims: number | null,
  ): NativeTensorHandle;
  softmax(x: NativeTensorHandle): NativeTensorHandle;
  layout(op: 'transpose', x: NativeTensorHandle, perm: readonly number[]): NativeTensorHandle;
  layout(op: 'slice', x: NativeTensorHandle, axis: number, start: number, end: number): NativeTensorHandle;
  layout(op: 'concat', xs: readonly NativeTensorHandle[], axis: number): NativeTensorHandle;
  write(dst: Operand, src: Operand, axis: number, offset: number): void;
  pick(op: 'argmax', x: NativeTensorHandle): NativeTensorHandle;
  pick(op: 'topk', x: NativeTensorHandle, k: number): [NativeTensorHandle, NativeTensorHandle];
  pick(op: 'sample', x: NativeTensorHandle, temperature: number, topK: number, topP: number, seed: number): NativeTensorHandle;
  embedding(table: Operand, ids: NativeTensorHandle): NativeTensorHandle;
  groupedLinear(x: NativeTensorHandle, w: Operand, groupSizes: NativeTensorHandle, outDtype: string | null, int8Activations: boolean): NativeTensorHandle;
  groupRows(ids: NativeTensorHandle, groups: number): [NativeTensorHandle, NativeTensorHandle, NativeTensorHandle];
  /** A program run over files of the inputs' bytes, in stream order (user kernels in the emulator). */
  runProcess(argv: string[], inputs: (NativeTensorHandle | NativeQTensorHandle)[], inputFiles: string[], outShapes: number[][],
    outDtypes: string[], outFiles: string[], inputPlanes?: string[]): NativeTensorHandle[];
  /** A user kernel compiled by the backend (metal), off the JS thread; null where the backend compiles no MSL (cpu). */
  compileKernel(name: string, source: string, tier: 'simdgroup' | 'tensorops' | 'tensorops-mx'): Promise<NativeKernelProgram> | null;
  /** One run of a compiled user kernel, in stream order. */
  runKernel(program: NativeKernelProgram['program'], geometry: number[], args: NativeKernelArg[],
    outputs: { index: number; shape: readonly number[]; dtype: string; init?: number }[],
    threadgroupMemory?: { index: number; bytes: number }[]): NativeTensorHandle[];
}

/** A user kernel's pipeline as the addon holds it, with its limits on this device. */
export interface NativeKernelProgram {
  program: { readonly __kernelProgram: unique symbol };
  maxThreads: number;
  simdWidth: number;
}
/** What one [[buffer(index)]] of a compiled user kernel is bound to: a tensor, a plane of a quantized one, or bytes. */
export type NativeKernelArg =
  | { index: number; tensor: NativeTensorHandle }
  | { index: number; tensor: NativeQTensorHandle; plane: 'codes' | 'scales' | 'biases' }
  // A tensorops-mx kernel's scale-plane input: the quantized tensor as one MTLTensor with its scale plane.
  | { index: number; tensor: NativeQTensorHandle; plane: 'tensor'; name: string }
  | { index: number; bytes: Uint8Array };

/** What binding.openDevice resolves with: backends made, not yet owned by a device. */
export type OpenedDeviceHandle = { readonly __opened: unique symbol };

export interface NativeBinding {
  /**
   * Chooses and makes the backend on a pool thread (Metal's tier probes compile kernels there),
   * resolving with a handle for `new NativeDevice(handle)`. backend: 'auto' | 'metal' | 'cpu';
   * tier: METAL_TENSOROPS_TIER ('' = auto). The 4th argument is for tests only.
   */
  openDevice(threads: number, backend: string, tier: string, test?: { openDelayUs?: number }): Promise<OpenedDeviceHandle>;
  /** From openDevice's handle; (threads, backend, tier) opens on the calling thread (tests only). */
  NativeDevice: new (...args: [OpenedDeviceHandle] | [threads: number, backend: string, tier: string]) => NativeDeviceHandle;
  tensors: NativeTensors;
  /**
   * Internal, for bench/ only: the machine's FMA peak and read bandwidth with `threads` threads.
   * Runs synchronously (blocks the event loop for about a second).
   */
  measureRoofline(threads: number, options?: { seconds?: number; readBytes?: number }): {
    threads: number;
    fma: { isa: string; lanes: number; gflops: number }[];
    fmaGflops: number;
    fmaIsa: string;
    readGBps: number;
    readBytes: number;
    /** The kernels ops use here, decode-conversion/fused-dot ("avx512vbmi/avx512vbmi", "avx2/avx2", "neon/neon"). */
    kernels: string;
  };
  /** The kernels the cpu ops use here, as measureRoofline's `kernels` says, without measuring. */
  cpuKernels(): string;
  /** Fill `out` (one code / value per input element, allocated by lib/). */
  encodeElements(element: string, values: Float32Array, out: Uint8Array): void;
  decodeElements(element: string, codes: Uint8Array, out: Float32Array): void;
  napiVersion: number;
}

/** The package root, where build/ and prebuilds/ live: dist/cjs/ when built, lib/ under test. */
export const packageRoot = findPackageRoot(__dirname);

function findPackageRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'binding.gyp'))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(start, '..', '..');
  }
}

let binding: NativeBinding | undefined;

export function loadBinding(): NativeBinding {
  binding ??= loadBindingFrom(packageRoot);
  return binding;
}

/** Loads the addon found under `root` (prebuilds/ or build/), or throws E_LOAD saying how to fix it. */
export function loadBindingFrom(root: string): NativeBinding {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const load = require('node-gyp-build') as (dir: string) => unknown;
    return load(root) as NativeBinding;
  } catch (err) {
    throw new TensorOpsError('E_LOAD', loadErrorMessage(err, root), { cause: err });
  }
}

function loadErrorMessage(err: unknown, root: string): string {
  const napi = process.versions.napi ?? 'unknown';
  const runtime = process.versions.electron
    ? `Electron ${process.versions.electron}`
    : `Node.js ${process.versions.node}`;
  return [
    `Could not load the metal-tensorops native addon for ${process.platform}-${process.arch} ` +
      `(${runtime}, Node-API ${napi}; the addon needs Node-API 8 or later).`,
    `Cause: ${err instanceof Error ? err.message : String(err)}`,
    'Possible fixes:',
    '- Reinstall without --ignore-scripts so the install step can pick the prebuilt binary: ' +
      'npm install metal-tensorops',
    '- npm 11 and later hold back install scripts until approved: npm install-scripts approve ' +
      'metal-tensorops, then npm rebuild metal-tensorops',
    '- Build from source (needs python3, make and a C++17 compiler; on macOS the Xcode command ' +
      'line tools): npm rebuild metal-tensorops --build-from-source',
    '- Electron: the addon is Node-API, so one binary fits every Electron version; make sure your ' +
      'packager unpacks *.node files from the asar archive (asarUnpack).',
    `- Looked in ${path.join(root, 'prebuilds')} and ${path.join(root, 'build', 'Release')}.`,
  ].join('\n');
}
