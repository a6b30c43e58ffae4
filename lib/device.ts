// Device: the object open() returns. It validates arguments, calls the addon and wraps results;
// which backend runs is decided once, in backend.ts, and reported in `info`.
import { TensorOpsError, awaitNative, callNative } from './errors';
import { checkActivations, checkChoice, operandHandle, tensorHandle } from './ops/args';
import * as elementwise from './ops/elementwise';
import * as embeddingOp from './ops/embedding';
import * as layout from './ops/layout';
import * as moe from './ops/moe';
import * as norm from './ops/norm';
import * as ropeOp from './ops/rope';
import * as sampling from './ops/sampling';
import * as softmaxOp from './ops/softmax';
import { type KernelDevice, type UserKernel, makeKernel } from './kernels/user-kernel';
import type { NativeDeviceHandle, NativeQTensorHandle, NativeTensorHandle } from './native';
import { QuantizedTensor, Tensor, handleOf, type TensorOwner } from './tensor';
import type {
  AnyDType, AttentionOptions, DType, DeviceInfo, KernelDescription, FloatDType, FromQuantizedOptions, GeluOptions, SwigluOptions, GroupedLinearOptions, LinearOptions,
  NormOptions, QuantizeOptions, RopeOptions, SampleOptions, SliceOptions, TypedData, WriteOptions,
} from './types';
import { DTYPES, checkBlockSize, checkDType, checkFormat, checkOptions, checkShape, describe, readOnce } from './validate';

type Operand = Tensor | QuantizedTensor;

function toTypedData(data: unknown, dtype: AnyDType): TypedData {
  // SharedArrayBuffer-backed arrays are accepted: the addon copies whatever backs them.
  if (data instanceof Float32Array || data instanceof Uint16Array || data instanceof Uint8Array ||
      data instanceof Int32Array) return data;
  if (Array.isArray(data)) {
    const values = readOnce(() => Array.from(data as unknown[]), 'data');  // read once
    if (values.every((x) => typeof x === 'number' || typeof x === 'boolean')) {
      if (dtype === 'bool') return Uint8Array.from(values, Number);
      if (dtype !== 'int32') return Float32Array.from(values, Number);
      const bad = values.findIndex((x) => !Number.isInteger(x) || (x as number) < -(2 ** 31) || (x as number) >= 2 ** 31);
      if (bad >= 0) {
        throw new TensorOpsError('E_ARG', `data[${bad}] is ${describe(values[bad])}; an int32 tensor takes integers in [-2^31, 2^31)`);
      }
      return Int32Array.from(values as number[]);
    }
  }
  throw new TensorOpsError(
    'E_ARG',
    `data must be a Float32Array, a Uint16Array (float16/bfloat16 bits), a Uint8Array (bool), ` +
      `an Int32Array (int32) or an array of numbers; got ${describe(data)}`,
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
  #info: Readonly<DeviceInfo>;
  readonly #native: NativeDeviceHandle;
  #closing: Promise<void> | undefined;

  /** @internal Use open(). */
  constructor(native: NativeDeviceHandle, info: DeviceInfo) {
    this.#native = native;
    this.#info = Object.freeze({ ...info });
  }

  /**
   * What open() chose and why (DeviceInfo). The same object until the metal backend finds a
   * shader library it cannot use (`fallbacks` grows as ops first need each library); then a new
   * one with the longer list.
   */
  get info(): Readonly<DeviceInfo> {
    if (this.#closing) return this.#info;
    const fallbacks = this.#native.fallbacks();
    if (fallbacks.length !== (this.#info.fallbacks?.length ?? 0)) {
      this.#info = Object.freeze({
        ...this.#info,
        fallbacks: Object.freeze(fallbacks.map((f) => Object.freeze({ library: f.library, reason: f.reason }))),
      });
    }
    return this.#info;
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
    const dt = checkDType(dtype, 'dtype', [...DTYPES, 'bool']);
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
  dequantize(q: QuantizedTensor, dtype: FloatDType = 'float32'): Tensor {
    const dt = checkDType(dtype, 'dtype');
    if (!(q instanceof QuantizedTensor)) {
      throw new TensorOpsError('E_ARG', `q must be a QuantizedTensor; got ${describe(q)}`);
    }
    const h = q[handleOf];
    return this.#wrap(this.#op(() => this.#native.dequantize(h, dt)));
  }

  /**
   * A copy in another dtype (queued): floats round to nearest-even; to int32 rounds toward zero,
   * saturates at the int32 range and makes NaN 0.
   */
  cast(x: Tensor, dtype: DType): Tensor {
    const dt = checkDType(dtype, 'dtype', DTYPES);
    const h = tensorHandle(x, 'x');
    return this.#wrap(this.#op(() => this.#native.cast(h, dt)));
  }

  /** y = x @ w^T (+ bias), queued. x [..., K] dense or quantized; w [N, K] dense or quantized. */
  linear(x: Operand, w: Operand, options?: LinearOptions): Tensor {
    const opts = checkOptions(options, 'options', ['bias', 'outDtype', 'activations']);
    const xh = operandHandle(x, 'x');
    const wh = operandHandle(w, 'w');
    const bias = opts.bias === undefined ? null : tensorHandle(opts.bias, 'options.bias');
    const out = opts.outDtype === undefined ? null : (checkDType(opts.outDtype, 'options.outDtype') as DType);
    const int8 = checkActivations(opts.activations);
    return this.#wrap(this.#op(() => this.#native.linear(xh, wh, bias, out, int8)));
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
    const opts = checkOptions(options, 'options', ['scale', 'causal', 'mask', 'layout', 'sinks']);
    if (opts.scale !== undefined && (typeof opts.scale !== 'number' || !Number.isFinite(opts.scale))) {
      throw new TensorOpsError('E_ARG', `options.scale must be a finite number; got ${describe(opts.scale)}`);
    }
    if (opts.causal !== undefined && typeof opts.causal !== 'boolean') {
      throw new TensorOpsError('E_ARG', `options.causal must be a boolean; got ${describe(opts.causal)}`);
    }
    const layout = opts.layout === undefined ? 'bhld' : checkChoice(opts.layout, 'options.layout', ['bhld', 'blhd'] as const);
    if (layout === 'blhd') {
      // [B, L, H, D] operands: the kernels read [B, H, L, D], so the stream swaps the middle axes
      // first (a view when L is 1, as in decode; a copy otherwise) and swaps the output back.
      const swap = (t: Tensor) => (t.shape.length === 4 && t.shape[1] === 1
        ? t.reshape([t.shape[0], t.shape[2], 1, t.shape[3]]) : this.transpose(t, [0, 2, 1, 3]));
      for (const [arg, t] of [['k', k], ['v', v]] as const) {
        if (!(t instanceof Tensor)) {
          throw new TensorOpsError('E_ARG', `options.layout 'blhd' takes dense ${arg}; keep a quantized cache in 'bhld'`);
        }
      }
      tensorHandle(q, 'q');
      const o = this.attention(swap(q), swap(k as Tensor), swap(v as Tensor), { ...opts, layout: 'bhld' } as AttentionOptions);
      return swap(o);
    }
    const qh = tensorHandle(q, 'q');
    const kh = operandHandle(k, 'k');
    const vh = operandHandle(v, 'v');
    const mask = opts.mask === undefined ? null : tensorHandle(opts.mask, 'options.mask');
    const sinks = opts.sinks === undefined ? null : tensorHandle(opts.sinks, 'options.sinks');
    const scale = (opts.scale as number | undefined) ?? null;
    return this.#wrap(this.#op(() => this.#native.attention(qh, kh, vh, scale, opts.causal === true, mask, sinks)));
  }

  // ---- The op set a model needs (docs/design/API.md): lib/ops/ validates, the addon queues.

  /** a + b with NumPy broadcasting (float dtypes; mixed dtypes give float32), queued. */
  add(a: Tensor, b: Tensor): Tensor {
    return this.#wrap(this.#op(() => elementwise.binary(this.#native, 'add', a, b)));
  }

  /** a * b with NumPy broadcasting, queued. */
  mul(a: Tensor, b: Tensor): Tensor {
    return this.#wrap(this.#op(() => elementwise.binary(this.#native, 'mul', a, b)));
  }

  /** x * sigmoid(x), queued. */
  silu(x: Tensor): Tensor {
    return this.#wrap(this.#op(() => elementwise.silu(this.#native, x)));
  }

  /** GELU, exact (erf) or `{ approximate: 'tanh' }`, queued. */
  gelu(x: Tensor, options?: GeluOptions): Tensor {
    return this.#wrap(this.#op(() => elementwise.gelu(this.#native, x, options)));
  }

  /**
   * silu(gate) * up with broadcasting (the SwiGLU MLP's activation), queued; with `{ alpha, limit }`
   * gpt-oss's form: min(gate, limit) * sigmoid(alpha * min(gate, limit)) * (clamp(up, -limit, limit) + 1).
   */
  swiglu(gate: Tensor, up: Tensor, options?: SwigluOptions): Tensor {
    return this.#wrap(this.#op(() => elementwise.swiglu(this.#native, gate, up, options)));
  }

  /** x / sqrt(mean(x^2) + eps) * weight over the last axis (weight [D] or null), queued. */
  rmsNorm(x: Tensor, weight: Tensor | null, options?: NormOptions): Tensor {
    return this.#wrap(this.#op(() => norm.rmsNorm(this.#native, x, weight, options)));
  }

  /** (x - mean) / sqrt(var + eps) * weight + bias over the last axis, queued. */
  layerNorm(x: Tensor, weight: Tensor | null, bias: Tensor | null, options?: NormOptions): Tensor {
    return this.#wrap(this.#op(() => norm.layerNorm(this.#native, x, weight, bias, options)));
  }

  /** Rotary position embedding of x [B, H, L, D] (or [B, L, H, D] with layout 'blhd'), queued. */
  rope(x: Tensor, options?: RopeOptions): Tensor {
    return this.#wrap(this.#op(() => ropeOp.rope(this.#native, x, options)));
  }

  /** softmax over the last axis, queued. */
  softmax(x: Tensor): Tensor {
    return this.#wrap(this.#op(() => softmaxOp.softmax(this.#native, x)));
  }

  /** A copy with the axes permuted (output axis i is input axis perm[i]), queued. */
  transpose(x: Tensor, perm: readonly number[]): Tensor {
    return this.#wrap(this.#op(() => layout.transpose(this.#native, x, perm)));
  }

  /** A copy of x[start:end] along one axis, queued. */
  slice(x: Tensor, options: SliceOptions): Tensor {
    return this.#wrap(this.#op(() => layout.slice(this.#native, x, options)));
  }

  /** The tensors joined along an axis (one dtype; equal shapes elsewhere), queued. */
  concat(tensors: readonly Tensor[], axis: number): Tensor {
    return this.#wrap(this.#op(() => layout.concat(this.#native, tensors, axis)));
  }

  /**
   * Writes src into dst in place at `offset` along `axis` (a KV cache append), queued: ops and
   * reads called before see dst as it was, those after see the write (views of dst included). A
   * quantized dst (an mxfp8 cache) takes a float src, quantized on the way, or one of its format;
   * along its last axis only whole blocks.
   */
  write(dst: Tensor | QuantizedTensor, src: Tensor | QuantizedTensor, options: WriteOptions): void {
    this.#op(() => layout.write(this.#native, dst, src, options));
  }

  /** The index of the largest value along the last axis (NaN largest; ties to the lower), int32, queued. */
  argmax(x: Tensor): Tensor {
    return this.#wrap(this.#op(() => sampling.argmax(this.#native, x)));
  }

  /** The k largest values along the last axis, largest first, and their int32 indices, queued. */
  topK(x: Tensor, k: number): { values: Tensor; indices: Tensor } {
    const [values, indices] = this.#op(() => sampling.topK(this.#native, x, k));
    return { values: this.#wrap(values), indices: this.#wrap(indices) };
  }

  /** One int32 id per row of logits [..., V], drawn on the device (SampleOptions), queued. */
  sample(logits: Tensor, options?: SampleOptions): Tensor {
    return this.#wrap(this.#op(() => sampling.sample(this.#native, logits, options)));
  }

  /** Rows of a dense or quantized table [V, D] for int32 ids: [...ids.shape, D], queued. */
  embedding(table: Tensor | QuantizedTensor, ids: Tensor): Tensor {
    return this.#wrap(this.#op(() => embeddingOp.embedding(this.#native, table, ids)));
  }

  /**
   * y[T, N]: the rows of x [T, K] grouped by expert (groupSizes, int32 [E], read on the device)
   * each times its expert's w [E, N, K] transposed, queued.
   */
  groupedLinear(x: Tensor, w: Tensor | QuantizedTensor, groupSizes: Tensor, options?: GroupedLinearOptions): Tensor {
    return this.#wrap(this.#op(() => moe.groupedLinear(this.#native, x, w, groupSizes, options)));
  }

  /**
   * The entries of int32 ids [T, k] (or [T]) in [0, groups), stably sorted by value, queued:
   * `sizes` [groups] (entries per value: groupedLinear's groupSizes), `rows` [T * k] (the row of ids
   * of each sorted entry: embedding(x, rows) gathers the rows of x in that order) and `positions`
   * (ids' shape: where each entry went: embedding(y, positions) puts them back). An id outside
   * [0, groups) fails the op (E_ARG on a read of its outputs).
   */
  groupRows(ids: Tensor, groups: number): { sizes: Tensor; rows: Tensor; positions: Tensor } {
    const [sizes, rows, positions] = this.#op(() => moe.groupRows(this.#native, ids, groups));
    return { sizes: this.#wrap(sizes), rows: this.#wrap(rows), positions: this.#wrap(positions) };
  }

  /**
   * A user kernel from MSL source (docs/design/API.md "User kernels"): resolves once it is built
   * (off the JS thread; E_KERNEL quoting the compiler when it does not compile) with a function
   * that queues a run like every op. The metal backend compiles it with Metal (`kernel.runsOn`
   * 'metal'; type-checked, never yet run on a Mac); every other backend runs it in the MSL-on-CPU
   * emulator ('emulator'), which checks bounds, barriers and races: for testing, not speed.
   */
  async kernel(description: KernelDescription): Promise<UserKernel> {
    this.#checkOpen();
    const dev: KernelDevice = {
      tensor: (data, shape, dtype) => this.tensor(data, shape, dtype),
      wrap: this.#wrap,
      checkOpen: () => this.#checkOpen(),
    };
    return makeKernel(dev, this.#native, description);
  }
}
