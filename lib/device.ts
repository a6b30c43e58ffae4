// Device: the object open() returns. It validates arguments, calls the addon and wraps results;
// which backend runs is decided once, in backend.ts, and reported in `info`.
import { TensorOpsError, awaitNative, callNative } from './errors';
import type { NativeDeviceHandle, NativeQTensorHandle, NativeTensorHandle } from './native';
import { QuantizedTensor, Tensor, handleOf, type TensorOwner } from './tensor';
import type {
  AnyDType, AttentionOptions, DType, DeviceInfo, FromQuantizedOptions, LinearOptions,
  QuantizeOptions, TypedData,
} from './types';
import { checkBlockSize, checkDType, checkFormat, checkOptions, checkShape, describe, readOnce } from './validate';

type Operand = Tensor | QuantizedTensor;

function tensorHandle(value: unknown, arg: string): NativeTensorHandle {
  if (value instanceof Tensor) return value[handleOf];
  throw new TensorOpsError('E_ARG', `${arg} must be a Tensor; got ${describe(value)}`);
}

function operandHandle(value: unknown, arg: string): NativeTensorHandle | NativeQTensorHandle {
  if (value instanceof Tensor || value instanceof QuantizedTensor) return value[handleOf];
  throw new TensorOpsError('E_ARG', `${arg} must be a Tensor or a QuantizedTensor; got ${describe(value)}`);
}

function toTypedData(data: unknown, dtype: AnyDType): TypedData {
  // SharedArrayBuffer-backed arrays are accepted: the addon copies whatever backs them.
  if (data instanceof Float32Array || data instanceof Uint16Array || data instanceof Uint8Array) return data;
  if (Array.isArray(data)) {
    const values = readOnce(() => Array.from(data as unknown[]), 'data');  // read once
    if (values.every((x) => typeof x === 'number' || typeof x === 'boolean')) {
      return dtype === 'bool' ? Uint8Array.from(values, Number) : Float32Array.from(values, Number);
    }
  }
  throw new TensorOpsError(
    'E_ARG',
    `data must be a Float32Array, a Uint16Array (float16/bfloat16 bits), a Uint8Array (bool) ` +
      `or an array of numbers; got ${describe(data)}`,
  );
}

/**
 * An opened device. Ops return their outputs at once and run in call order on the device's
 * stream; an input may be the output of an op that has not run yet. Only reads wait:
 * `await t.toFloat32()`, `await dev.synchronize()`. Argument errors throw at the call; a failure
 * while running fails the op's outputs and everything computed from them (their reads reject
 * with it), and the device stays usable.
 */
export class Device implements TensorOwner {
  readonly info: Readonly<DeviceInfo>;
  readonly #native: NativeDeviceHandle;
  #closing: Promise<void> | undefined;

  /** @internal Use open(). */
  constructor(native: NativeDeviceHandle, info: DeviceInfo) {
    this.#native = native;
    this.info = Object.freeze({ ...info });
  }

  /** True once close() was called. */
  get closed(): boolean {
    return this.#closing !== undefined;
  }

  /** Resolves once every op queued so far has run (failed ones included: their reads reject). */
  async synchronize(): Promise<void> {
    this.#checkOpen();
    await awaitNative(async () => this.#native.synchronize());
  }

  /**
   * Waits for the ops already queued, then releases the device's threads, queues and caches at
   * once (without close(), that happens when the device is garbage-collected). Calls made after
   * close() throw E_DISPOSED; tensors made by the device stay readable. Closing twice is safe.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await awaitNative(async () => this.#native.synchronize());
      this.#native.close();
    })();
    return this.#closing;
  }

  /** `await using dev = await open()` (TypeScript 5.2+, or JavaScript where the runtime has it). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Throws E_DISPOSED once close() was called. */
  #checkOpen(): void {
    if (this.#closing) throw new TensorOpsError('E_DISPOSED', 'the device was closed (dev.close()); open() a new one');
  }

  #wrap = (h: NativeTensorHandle): Tensor => new Tensor(h, this);
  #wrapQ = (h: NativeQTensorHandle): QuantizedTensor => new QuantizedTensor(h, this);

  /** Queues an op (its native call validates, allocates the outputs and queues it). */
  #op<H>(start: () => H): H {
    this.#checkOpen();
    return callNative(start);
  }

  /**
   * A tensor from host data (copied). Float32Array converts to any float dtype (RNE);
   * Uint16Array carries float16/bfloat16 bits as they are; Uint8Array makes a 'bool' mask.
   */
  tensor(data: TypedData | readonly number[], shape: readonly number[], dtype: AnyDType = 'float32'): Tensor {
    this.#checkOpen();
    const dt = checkDType(dtype, 'dtype', true);
    const dims = checkShape(shape, 'shape');
    const typed = toTypedData(data, dt);
    return this.#wrap(callNative(() => this.#native.tensor(typed, dims, dt)));
  }

  /** Quantizes a dense tensor along its last axis (queued). */
  quantize(x: Tensor, options: QuantizeOptions): QuantizedTensor {
    const opts = checkOptions(options, 'options', ['format', 'blockSize']);
    const format = checkFormat(opts.format, 'options.format');
    const block = checkBlockSize(format, opts.blockSize);
    const h = tensorHandle(x, 'x');
    return this.#wrapQ(this.#op(() => this.#native.quantize(h, format, block)));
  }

  /** Imports already-quantized weights (for example a published model's MXFP4 tensors). */
  fromQuantized(options: FromQuantizedOptions): QuantizedTensor {
    this.#checkOpen();
    const opts = checkOptions(options, 'options', ['format', 'shape', 'codes', 'scales', 'biases', 'blockSize']);
    const format = checkFormat(opts.format, 'options.format');
    const block = checkBlockSize(format, opts.blockSize);
    const dims = checkShape(opts.shape, 'options.shape');
    if (!format.startsWith('affine') && opts.biases !== undefined) {
      throw new TensorOpsError('E_ARG', `options.biases is only for affine formats; format is '${format}'`);
    }
    return this.#wrapQ(
      callNative(() =>
        this.#native.fromQuantized(
          format, dims, block, opts.codes as Uint8Array, opts.scales as Uint8Array | Uint16Array,
          opts.biases as Uint16Array | undefined,
        ),
      ),
    );
  }

  /** The values of a quantized tensor in a dense dtype (queued). */
  dequantize(q: QuantizedTensor, dtype: DType = 'float32'): Tensor {
    const dt = checkDType(dtype, 'dtype');
    if (!(q instanceof QuantizedTensor)) {
      throw new TensorOpsError('E_ARG', `q must be a QuantizedTensor; got ${describe(q)}`);
    }
    const h = q[handleOf];
    return this.#wrap(this.#op(() => this.#native.dequantize(h, dt)));
  }

  /** A copy in another dtype, rounded to nearest-even (queued). */
  cast(x: Tensor, dtype: DType): Tensor {
    const dt = checkDType(dtype, 'dtype');
    const h = tensorHandle(x, 'x');
    return this.#wrap(this.#op(() => this.#native.cast(h, dt)));
  }

  /** y = x @ w^T (+ bias), queued. x [..., K] dense or quantized; w [N, K] dense or quantized. */
  linear(x: Operand, w: Operand, options?: LinearOptions): Tensor {
    const opts = checkOptions(options, 'options', ['bias', 'outDtype']);
    const xh = operandHandle(x, 'x');
    const wh = operandHandle(w, 'w');
    const bias = opts.bias === undefined ? null : tensorHandle(opts.bias, 'options.bias');
    const out = opts.outDtype === undefined ? null : (checkDType(opts.outDtype, 'options.outDtype') as DType);
    return this.#wrap(this.#op(() => this.#native.linear(xh, wh, bias, out)));
  }

  /** c = a @ b for dense a [..., M, K] and b [K, N] (or b with a's batch dimensions), queued. */
  matmul(a: Tensor, b: Tensor, options?: Record<string, never>): Tensor {
    checkOptions(options, 'options', []);
    const ah = tensorHandle(a, 'a');
    const bh = tensorHandle(b, 'b');
    return this.#wrap(this.#op(() => this.#native.matmul(ah, bh)));
  }

  /** FlashAttention, queued: q [B, Hq, Lq, D], k/v [B, Hkv, Lk, D] (dense or mxfp8), output like q. */
  attention(q: Tensor, k: Operand, v: Operand, options?: AttentionOptions): Tensor {
    const opts = checkOptions(options, 'options', ['scale', 'causal', 'mask']);
    const qh = tensorHandle(q, 'q');
    const kh = operandHandle(k, 'k');
    const vh = operandHandle(v, 'v');
    if (opts.scale !== undefined && (typeof opts.scale !== 'number' || !Number.isFinite(opts.scale))) {
      throw new TensorOpsError('E_ARG', `options.scale must be a finite number; got ${describe(opts.scale)}`);
    }
    if (opts.causal !== undefined && typeof opts.causal !== 'boolean') {
      throw new TensorOpsError('E_ARG', `options.causal must be a boolean; got ${describe(opts.causal)}`);
    }
    const mask = opts.mask === undefined ? null : tensorHandle(opts.mask, 'options.mask');
    const scale = (opts.scale as number | undefined) ?? null;
    return this.#wrap(this.#op(() => this.#native.attention(qh, kh, vh, scale, opts.causal === true, mask)));
  }
}
