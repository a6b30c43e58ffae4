// The two ways a checked call of a user kernel is queued (user-kernel.ts checks it): on a backend
// that compiled the kernel (metal), one runKernel op binding every [[buffer(n)]] of bindings() to a
// tensor, a quantized tensor's plane or bytes; elsewhere, a runProcess op that runs the kernel's
// emulator program over files of those buffers (emulator/main.cc's command line).
import type { NativeDeviceHandle, NativeKernelArg, NativeKernelProgram, NativeQTensorHandle, NativeTensorHandle } from '../native';
import { callNative } from '../errors';
import { formats } from '../formats';
import { loadBinding } from '../native';
import { type QuantizedTensor, type Tensor, handleOf } from '../tensor';
import { elementCount } from '../validate';
import { quantizedShape } from './quantized';
import { type ScalePlaneFormat, scalePlaneDescriptor } from './scale-plane-inputs';
import type { Binding, KernelSpec } from './source';

/** What a user kernel needs of its device. */
export interface KernelDevice {
  tensor(data: Float32Array | Int32Array | Uint8Array, shape: readonly number[], dtype?: 'float32' | 'int32' | 'bool'): Tensor;
  wrap(h: NativeTensorHandle): Tensor;
  checkOpen(): void;
}

/** A call, checked: the inputs in the description's order, the geometry, each output's shape, each constant's bytes. */
export interface CheckedCall {
  tensors: (Tensor | QuantizedTensor)[];
  threadgroups: number[];
  threads: number[];
  outShapes: number[][];
  constants: Uint8Array[];
  /**
   * Each [[threadgroup(i)]] entry's bytes: exactly its elements (the emulator, so a read past
   * them is caught) and rounded up to 16 (what Metal's setThreadgroupMemoryLength takes).
   */
  threadgroupMemory: { bytes: number; metalBytes: number }[];
}

export type Runner = (call: CheckedCall) => Tensor[];

const ELEMENT_BYTES: Record<string, number> = { float32: 4, float16: 2, bfloat16: 2, int32: 4, bool: 1 };

/** A quantized input's NAME_shape (rows, cols, row_bytes, block) as the kernel reads it. */
function shapeBytes(q: QuantizedTensor): Uint8Array {
  return new Uint8Array(quantizedShape(q.shape, formats[q.format].bits, q.blockSize).buffer);
}

export function metalRunner(dev: KernelDevice, native: NativeDeviceHandle, spec: KernelSpec, layout: Binding[],
  compiled: NativeKernelProgram): Runner {
  return (c) => {
    const args: NativeKernelArg[] = [];
    const outputs: { index: number; shape: readonly number[]; dtype: string; init?: number }[] = [];
    layout.forEach((b, index) => {
      if (b.kind === 'output') {
        const o = spec.outputs[b.of];
        outputs.push({ index, shape: c.outShapes[b.of], dtype: o.dtype, ...(o.init === undefined ? {} : { init: o.init }) });
      } else if (b.kind === 'constant') {
        args.push({ index, bytes: c.constants[b.of] });
      } else if (b.plane === undefined) {
        args.push({ index, tensor: (c.tensors[b.of] as Tensor)[handleOf] });
      } else if (b.plane === 'shape') {
        args.push({ index, bytes: shapeBytes(c.tensors[b.of] as QuantizedTensor) });
      } else if (b.plane === 'tensor') {
        // The MTLTensor with its scale plane that the backend made over the planes (qtensor.mm).
        args.push({ index, tensor: (c.tensors[b.of] as QuantizedTensor)[handleOf], plane: 'tensor', name: b.name });
      } else {
        args.push({ index, tensor: (c.tensors[b.of] as QuantizedTensor)[handleOf], plane: b.plane });
      }
    });
    const memory = c.threadgroupMemory.map((m, index) => ({ index, bytes: m.metalBytes }));
    const ids = callNative(() => native.runKernel(compiled.program, [...c.threadgroups, ...c.threads], args, outputs, memory));
    return ids.map((h) => dev.wrap(h));
  };
}

export function emulatorRunner(dev: KernelDevice, native: NativeDeviceHandle, spec: KernelSpec, layout: Binding[], exe: string): Runner {
  const natives = loadBinding().tensors;
  return (c) => {
    // Each buffer parameter's file (bN.bin for [[buffer(N)]]) and bytes; constants and a quantized
    // input's shape go as small tensors of their bytes.
    const made: Tensor[] = [];
    const small = (bytes: Uint8Array) => {
      const t = bytes.length === 1 ? dev.tensor(bytes, [1], 'bool') : dev.tensor(new Int32Array(bytes.slice().buffer), [bytes.length / 4], 'int32');
      made.push(t);
      return t;
    };
    const inputs: { handle: NativeTensorHandle | NativeQTensorHandle; plane: string; file: string }[] = [];
    const outputFiles: string[] = [];
    // A tensorops kernel runs under two cooperative-tensor layouts (emulator/main.cc LAYOUTS).
    const layouts = spec.tier === 'simdgroup' ? '1' : '2';
    const memory = c.threadgroupMemory.length ? c.threadgroupMemory.map((m, i) => `${i}:${m.bytes}`).join(',') : '-';
    const argv = [exe, '{dir}', spec.name, ...c.threadgroups.map(String), ...c.threads.map(String), memory, layouts, String(layout.length)];
    try {
      layout.forEach((b, n) => {
        const file = `b${n}.bin`;
        let bytes: number;
        let fill = '-';
        if (b.kind === 'output') {
          const o = spec.outputs[b.of];
          bytes = elementCount(c.outShapes[b.of]) * ELEMENT_BYTES[o.dtype];
          if (o.init !== undefined) fill = `${o.dtype}:${o.init}`;
          outputFiles.push(file);
        } else if (b.kind === 'constant' || b.plane === 'shape') {
          const data = b.kind === 'constant' ? c.constants[b.of] : shapeBytes(c.tensors[b.of] as QuantizedTensor);
          bytes = data.length;
          inputs.push({ handle: small(data)[handleOf], plane: '', file });
        } else if (b.plane === undefined) {
          const t = c.tensors[b.of] as Tensor;
          bytes = elementCount(t.shape) * ELEMENT_BYTES[t.dtype];
          inputs.push({ handle: t[handleOf], plane: '', file });
        } else if (b.plane === 'tensor') {
          // A scale-plane input: the codes in bN.bin and the E8M0 plane in bN.scales.bin, bound
          // together as one tensor with the descriptor the layout rule gives (emulator/tensor_arg.h).
          const q = c.tensors[b.of] as QuantizedTensor;
          const d = scalePlaneDescriptor(q, b.name, spec.inputs[b.of].format as ScalePlaneFormat);
          const lengths = callNative(() => natives.planeLengths(q[handleOf]));
          inputs.push({ handle: q[handleOf], plane: 'codes', file }, { handle: q[handleOf], plane: 'scales', file: `b${n}.scales.bin` });
          argv.push(String(n), 't', String(lengths.codes), `${d.dataType}:${d.cols}:${d.rows}:${d.rowStride}:${lengths.scales}`, b.name);
          return;
        } else {
          const q = c.tensors[b.of] as QuantizedTensor;
          const lengths = callNative(() => natives.planeLengths(q[handleOf]));
          bytes = b.plane === 'codes' ? lengths.codes : b.plane === 'biases' ? lengths.biases * 2 : lengths.scales * (q.format.startsWith('affine') ? 2 : 1);
          inputs.push({ handle: q[handleOf], plane: b.plane, file });
        }
        argv.push(String(n), b.kind === 'output' ? 'o' : 'i', String(bytes), fill, b.name);
      });
      const ids = callNative(() => native.runProcess(argv, inputs.map((i) => i.handle), inputs.map((i) => i.file), c.outShapes,
        spec.outputs.map((o) => o.dtype), outputFiles, inputs.map((i) => i.plane)));
      return ids.map((h) => dev.wrap(h));
    } finally {
      for (const t of made) t.dispose();  // the queued run holds its own reference
    }
  };
}
