// Tensor and QuantizedTensor: thin JS objects over native tensors, which they name by a plain
// number (an id in the addon's table: native/addon/tensor_table.h says why not a wrapped native
// object). Storage is native memory, freed by dispose() (or `using`); a FinalizationRegistry is
// the safety net for tensors never disposed, and frees the id once its object is collected.
import { TensorOpsError, awaitNative, callNative } from './errors';
import { allocateArray } from './host-arrays';
import { loadBinding, type NativeQTensorHandle, type NativeTensorHandle, type NativeTensors } from './native';
import type { AnyDType, DType, FloatDType, Format, TypedData } from './types';
import { DTYPES, checkDType, checkShape, describe, elementCount, readOnce } from './validate';

/** @internal The native handle (id) behind a public tensor object. */
export const handleOf = Symbol('metal-tensorops.handle');

let tensorFunctions: NativeTensors | undefined;
/** @internal The addon's functions over tensor ids. */
export const natives = (): NativeTensors => (tensorFunctions ??= loadBinding().tensors);

// An id is released only here, once nothing can pass it again: dispose() frees the storage but
// keeps the id (so the object still reports its shape), and an id is never reused while its
// object lives. release() never throws. Held per realm; a worker's environment that goes away
// drops its whole table in the addon instead.
const registry = new FinalizationRegistry<NativeTensorHandle | NativeQTensorHandle>((id) => natives().release(id));

/** Dequantizes or casts through the device that made the tensor. */
export interface TensorOwner {
  dequantize(q: QuantizedTensor, dtype?: FloatDType): Tensor;
  cast(x: Tensor, dtype: DType): Tensor;
}

export class Tensor {
  /** @internal */
  readonly [handleOf]: NativeTensorHandle;
  readonly #owner: TensorOwner;
  // Read from the addon on first use: most outputs of a queued chain are never asked, and the
  // reads cost about as much as queueing the op itself.
  #shape: readonly number[] | undefined;
  #dtype: AnyDType | undefined;

  /** @internal Tensors are made by a Device (dev.tensor(), op results). */
  constructor(handle: NativeTensorHandle, owner: TensorOwner) {
    this[handleOf] = handle;
    this.#owner = owner;
    registry.register(this, handle);
  }

  /** The dimensions (frozen). */
  get shape(): readonly number[] {
    return (this.#shape ??= Object.freeze(natives().shape(this[handleOf])));
  }

  get dtype(): AnyDType {
    return (this.#dtype ??= natives().dtype(this[handleOf]));
  }

  get disposed(): boolean {
    return natives().disposed(this[handleOf]);
  }

  /** Bytes of native memory held. */
  get bytes(): number {
    return natives().bytes(this[handleOf]);
  }

  /**
   * A copy in the storage type: Float32Array, Uint16Array (float16/bfloat16 bits), Int32Array
   * (int32) or Uint8Array (bool).
   */
  async data(): Promise<TypedData> {
    return reading(this[handleOf], async (h, id) => {
      const n = elementCount(this.shape);
      const out: TypedData =
        this.dtype === 'float32' ? allocateArray(Float32Array, n, 'tensor.data()')
        : this.dtype === 'bool' ? allocateArray(Uint8Array, n, 'tensor.data()')
        : this.dtype === 'int32' ? allocateArray(Int32Array, n, 'tensor.data()')
        : allocateArray(Uint16Array, n, 'tensor.data()');
      await copied(callNative(() => natives().readInto(h, out, id)));
      return out;
    });
  }

  /** A new Float32Array with the values. */
  async toFloat32(): Promise<Float32Array> {
    return reading(this[handleOf], async (h, id) => {
      const out = allocateArray(Float32Array, elementCount(this.shape), 'tensor.toFloat32()');
      await copied(callNative(() => natives().toFloat32Into(h, out, id)));
      return out;
    });
  }

  /**
   * The same elements in another shape: a view (no copy) of the same storage, ready when this
   * tensor is. One dimension may be -1 (worked out from the others).
   */
  reshape(shape: readonly number[]): Tensor {
    const dims = resolveShape(shape, elementCount(this.shape));
    return new Tensor(callNative(() => natives().reshape(this[handleOf], dims)), this.#owner);
  }

  /** A new tensor of another dtype, queued as dev.cast() (its rounding rules). */
  astype(dtype: DType): Tensor {
    return this.#owner.cast(this, checkDType(dtype, 'dtype', DTYPES) as DType);
  }

  /** Frees the native memory now. Disposing twice is an error (E_DISPOSED); `using` is safe. */
  dispose(): void {
    callNative(() => natives().dispose(this[handleOf]));
  }

  /** `using t = ...` (TypeScript 5.2+, or JavaScript where the runtime has `using`). */
  [Symbol.dispose](): void {
    if (!this.disposed) this.dispose();
  }

  toString(): string {
    return `Tensor(${this.dtype}, [${this.shape.join(', ')}]${this.disposed ? ', disposed' : ''})`;
  }
}

export class QuantizedTensor {
  readonly shape: readonly number[];
  readonly format: Format;
  readonly blockSize: number;
  /** @internal */
  readonly [handleOf]: NativeQTensorHandle;
  readonly #owner: TensorOwner;

  /** @internal QuantizedTensors are made by dev.quantize() and dev.fromQuantized(). */
  constructor(handle: NativeQTensorHandle, owner: TensorOwner) {
    this[handleOf] = handle;
    this.#owner = owner;
    registry.register(this, handle);
    const n = natives();
    this.shape = Object.freeze(n.shape(handle));  // a fresh array from the addon
    this.format = n.format(handle);
    this.blockSize = n.blockSize(handle);
  }

  get disposed(): boolean {
    return natives().disposed(this[handleOf]);
  }

  get bytes(): number {
    return natives().bytes(this[handleOf]);
  }

  /** The packed data plane, row-major (docs/design/API.md "Packing"). */
  async codes(): Promise<Uint8Array> {
    return reading(this[handleOf], async (h, id) => {
      const out = allocateArray(Uint8Array, callNative(() => natives().planeLengths(h)).codes, 'codes()');
      await copied(callNative(() => natives().codesInto(h, out, id)));
      return out;
    });
  }

  /** MX formats: E8M0 bytes, one per block. affine: float16 bits, one per group. */
  async scales(): Promise<Uint8Array | Uint16Array> {
    return reading(this[handleOf], async (h, id) => {
      const n = callNative(() => natives().planeLengths(h)).scales;
      const out = this.format.startsWith('affine') ? allocateArray(Uint16Array, n, 'scales()') : allocateArray(Uint8Array, n, 'scales()');
      await copied(callNative(() => natives().scalesInto(h, out, id)));
      return out;
    });
  }

  /** affine formats: float16 bits, one per group. */
  async biases(): Promise<Uint16Array> {
    return reading(this[handleOf], async (h, id) => {
      if (!this.format.startsWith('affine')) {
        throw new TensorOpsError('E_FORMAT', `biases() exists only for affine formats; this tensor is '${this.format}'`);
      }
      const out = allocateArray(Uint16Array, callNative(() => natives().planeLengths(h)).biases, 'biases()');
      await copied(callNative(() => natives().biasesInto(h, out, id)));
      return out;
    });
  }

  /** The values in a dense dtype, queued as dev.dequantize(). */
  dequantize(dtype: FloatDType = 'float32'): Tensor {
    return this.#owner.dequantize(this, checkDType(dtype, 'dtype') as FloatDType);
  }

  dispose(): void {
    callNative(() => natives().dispose(this[handleOf]));
  }

  /** `using q = ...` (TypeScript 5.2+, or JavaScript where the runtime has `using`). */
  [Symbol.dispose](): void {
    if (!this.disposed) this.dispose();
  }

  toString(): string {
    return `QuantizedTensor(${this.format}, [${this.shape.join(', ')}]${this.disposed ? ', disposed' : ''})`;
  }
}

/**
 * Runs body(h) once the op that writes the tensor ran: E_DISPOSED for a disposed tensor, and the
 * op's failure (or its input's) for a failed one, before anything is allocated for the read. The
 * read is registered at the call, so that a write queued after it (dev.write) waits until its
 * copy is done: it sees the values of the moment it was called.
 */
async function reading<H extends NativeTensorHandle | NativeQTensorHandle, T>(
  h: H, body: (h: H, id: number) => Promise<T>,
): Promise<T> {
  const n = natives();
  if (n.disposed(h)) throw new TensorOpsError('E_DISPOSED', 'the tensor was disposed and cannot be read');
  const id = callNative(() => n.beginRead(h));
  try {
    const wait = callNative(() => n.whenReady(h, id));
    if (wait) await awaitNative(() => wait);
    return await body(h, id);
  } finally {
    n.endRead(h, id);
  }
}

/** A reshape target with its one -1 worked out; E_SHAPE when it cannot hold `elements`. */
function resolveShape(shape: readonly number[], elements: number): number[] {
  if (!Array.isArray(shape)) throw new TensorOpsError('E_SHAPE', `shape must be an array of integers; got ${describe(shape)}`);
  const dims = readOnce(() => Array.from(shape as unknown[]), 'shape');
  const free = dims.indexOf(-1);
  if (free >= 0 && dims.indexOf(-1, free + 1) >= 0) {
    throw new TensorOpsError('E_SHAPE', `shape ${describe(dims)} has more than one -1; accepted: at most one`);
  }
  if (free >= 0) {
    const rest = checkShape(dims.filter((_, i) => i !== free), 'shape');
    const known = elementCount(rest);
    if (known === 0) {
      // PyTorch's rule: with another dimension 0, any value fits the -1 (or none does).
      throw new TensorOpsError(
        'E_SHAPE',
        `shape ${describe(dims)} has a 0 beside its -1, so the -1 cannot be worked out; give every dimension`,
      );
    }
    if (elements % known !== 0) {
      throw new TensorOpsError('E_SHAPE', `shape ${describe(dims)} cannot hold the tensor's ${elements} elements`);
    }
    dims[free] = elements / known;
  }
  const out = checkShape(dims, 'shape');
  if (elementCount(out) !== elements) {
    throw new TensorOpsError('E_SHAPE', `shape ${describe(dims)} has ${elementCount(out)} elements; the tensor has ${elements}`);
  }
  return out;
}

/** Waits for a copy the addon runs off the JS thread (large reads), if it did. */
async function copied(copy: Promise<void> | undefined): Promise<void> {
  if (copy) await awaitNative(() => copy);
}
