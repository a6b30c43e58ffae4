// dev.kernel(): users' own kernels, written as MSL strings (issue #30). The description is
// checked once, the source built (on the cpu backend: into an emulator program, off the JS
// thread), and the result is a function that queues a run like every op: its outputs come back at
// once and the run waits in the stream for its inputs.
import { TensorOpsError, callNative, toTensorOpsError } from '../errors';
import type { NativeDeviceHandle } from '../native';
import { QuantizedTensor, Tensor } from '../tensor';
import type { DType, KernelCallOptions, KernelDescription } from '../types';
import { DTYPES, checkDType, checkFormat, checkOptions, checkShape, describe, readOnce } from '../validate';
import { emulatorProgram } from './emulator';
import { type KernelDevice, emulatorRunner, metalRunner } from './runners';
import { checkScalePlaneFormat, scalePlaneDescriptor } from './scale-plane-inputs';
import { type ConstantType, type KernelSpec, type KernelTier, KERNEL_TIERS, MSL_VERSION, bindings, kernelSource } from './source';

/** A user kernel: call it with its input tensors (and options) to queue a run. */
export interface UserKernel {
  (...args: (Tensor | QuantizedTensor | KernelCallOptions)[]): Tensor[];
  /** The kernel's name. */
  readonly kernelName: string;
  /** The whole MSL source compiled (the body inside its generated signature). */
  readonly mslSource: string;
  /** Where it runs: 'metal' (compiled by Metal, on the metal backend) or 'emulator' (the MSL-on-CPU emulator, elsewhere: for testing, not speed). */
  readonly runsOn: 'metal' | 'emulator';
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_BUFFERS = 31;
const CONSTANT_TYPES: readonly ConstantType[] = ['int', 'uint', 'float', 'bool'];

function checkName(value: unknown, arg: string, taken: Set<string>): string {
  if (typeof value !== 'string' || !IDENTIFIER.test(value) || value.startsWith('mtoh')) {
    throw new TensorOpsError('E_ARG', `${arg} must be an identifier (letters, digits, _; not starting with mtoh); got ${describe(value)}`);
  }
  if (taken.has(value)) throw new TensorOpsError('E_ARG', `${arg} '${value}' names two things; each name must be unique`);
  taken.add(value);
  return value;
}

function checkList(value: unknown, arg: string): Record<string, unknown>[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new TensorOpsError('E_ARG', `${arg} must be an array; got ${describe(value)}`);
  return readOnce(() => Array.from(value as unknown[]), arg).map((v, i) => {
    if (v === null || typeof v !== 'object') throw new TensorOpsError('E_ARG', `${arg}[${i}] must be an object; got ${describe(v)}`);
    return v as Record<string, unknown>;
  });
}

/** 1 to 3 positive integers, padded with 1s to 3. */
function checkDims(value: unknown, arg: string): [number, number, number] {
  const ok = Array.isArray(value) && value.length >= 1 && value.length <= 3 &&
    value.every((d) => Number.isSafeInteger(d) && d >= 1 && d < 2 ** 32);
  if (!ok) throw new TensorOpsError('E_ARG', `${arg} must be 1 to 3 positive integers; got ${describe(value)}`);
  const d = [...(value as number[])];
  while (d.length < 3) d.push(1);
  return d as [number, number, number];
}

interface OutputSpec { name: string; dtype: DType; shape?: number[]; init?: number }

interface MemorySpec { name: string; dtype: DType; length?: number }

const ELEMENT_BYTES: Readonly<Record<DType, number>> = { float32: 4, float16: 2, bfloat16: 2, int32: 4 };
// Apple GPUs' threadgroup memory (MTLDevice.maxThreadgroupMemoryLength on every Apple-family
// GPU); the emulator keeps the same limit, so a kernel that runs here fits on a Mac.
export const THREADGROUP_MEMORY_LIMIT = 32768;
const MAX_THREADGROUP_MEMORY_ENTRIES = 31;
/** Bytes Metal sets for `length` elements of `dtype`: setThreadgroupMemoryLength takes multiples of 16. */
export const metalThreadgroupBytes = (length: number, dtype: DType) => Math.ceil((length * ELEMENT_BYTES[dtype]) / 16) * 16;

function checkLength(value: unknown, arg: string): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1) {
    throw new TensorOpsError('E_ARG', `${arg} must be a positive integer (elements per threadgroup); got ${describe(value)}`);
  }
  return value as number;
}

/** E_ARG when the entries' memory, as Metal counts it, passes the limit. */
function checkTotal(entries: readonly { name: string; dtype: DType; length: number }[], arg: string): void {
  const total = entries.reduce((sum, m) => sum + metalThreadgroupBytes(m.length, m.dtype), 0);
  if (total > THREADGROUP_MEMORY_LIMIT) {
    const parts = entries.map((m) => `${m.name}: ${m.length} x ${m.dtype} = ${metalThreadgroupBytes(m.length, m.dtype)} bytes`);
    throw new TensorOpsError('E_ARG', `${arg} totals ${total} bytes (${parts.join(', ')}; each rounded up to 16 bytes); at most ${THREADGROUP_MEMORY_LIMIT} (32 KiB per threadgroup on Apple GPUs)`);
  }
}

function readSpec(desc: KernelDescription): { spec: KernelSpec; outputs: OutputSpec[]; memory: MemorySpec[] } {
  const opts = checkOptions(desc, 'description',
    ['name', 'source', 'header', 'inputs', 'outputs', 'constants', 'templates', 'grid', 'threadgroup', 'tier', 'threadgroupMemory']);
  const taken = new Set<string>();
  const name = checkName(opts.name, 'description.name', taken);
  if (typeof opts.source !== 'string' || !opts.source.trim()) {
    throw new TensorOpsError('E_ARG', `description.source must be the kernel's body (a non-empty string); got ${describe(opts.source)}`);
  }
  if (opts.header !== undefined && typeof opts.header !== 'string') {
    throw new TensorOpsError('E_ARG', `description.header must be a string; got ${describe(opts.header)}`);
  }
  const inputs = checkList(opts.inputs, 'description.inputs').map((b, i): KernelSpec['inputs'][number] => {
    const arg = `description.inputs[${i}]`;
    checkOptions(b, arg, ['name', 'dtype', 'format', 'scalePlane']);
    const name = checkName(b.name, `${arg}.name`, taken);
    if (b.scalePlane !== undefined && typeof b.scalePlane !== 'boolean') {
      throw new TensorOpsError('E_ARG', `${arg}.scalePlane must be a boolean; got ${describe(b.scalePlane)}`);
    }
    if (b.format === undefined) {
      if (b.scalePlane) throw new TensorOpsError('E_ARG', `${arg} has scalePlane but no format: a scale-plane input is a QuantizedTensor (format 'mxfp8', 'mxfp8_e5m2' or 'mxfp4')`);
      return { name, dtype: checkDType(b.dtype, `${arg}.dtype`, [...DTYPES, 'bool']) };
    }
    if (b.dtype !== undefined) {
      throw new TensorOpsError('E_ARG', `${arg} has a dtype (${describe(b.dtype)}) and a format (${describe(b.format)}); give one: dtype for a Tensor, format for a QuantizedTensor`);
    }
    const format = checkFormat(b.format, `${arg}.format`);
    // One tensor argument (codes with their scale plane): the name alone.
    if (b.scalePlane) return { name, format: checkScalePlaneFormat(format, `${arg}.format`), scalePlane: true as const };
    // Each quantized input takes its planes' names too: NAME_scales, NAME_biases, NAME_shape, NAME_format.
    for (const suffix of ['scales', 'biases', 'shape', 'format']) checkName(`${name}_${suffix}`, `${arg}.name's ${suffix} (${name}_${suffix})`, taken);
    return { name, format };
  });
  const outputs: OutputSpec[] = checkList(opts.outputs, 'description.outputs').map((b, i) => {
    checkOptions(b, `description.outputs[${i}]`, ['name', 'dtype', 'shape', 'init']);
    if (b.init !== undefined && (typeof b.init !== 'number' || Number.isNaN(b.init) && b.dtype === 'int32')) {
      throw new TensorOpsError('E_ARG', `description.outputs[${i}].init must be a number; got ${describe(b.init)}`);
    }
    return {
      name: checkName(b.name, `description.outputs[${i}].name`, taken),
      dtype: checkDType(b.dtype, `description.outputs[${i}].dtype`, DTYPES) as DType,
      shape: b.shape === undefined ? undefined : checkShape(b.shape, `description.outputs[${i}].shape`),
      init: b.init as number | undefined,
    };
  });
  if (outputs.length === 0) throw new TensorOpsError('E_ARG', 'description.outputs must name at least one output');
  const constants = checkList(opts.constants, 'description.constants').map((c, i) => {
    checkOptions(c, `description.constants[${i}]`, ['name', 'type']);
    if (!CONSTANT_TYPES.includes(c.type as ConstantType)) {
      throw new TensorOpsError('E_ARG', `description.constants[${i}].type must be one of ${CONSTANT_TYPES.map((t) => `'${t}'`).join(', ')}; got ${describe(c.type)}`);
    }
    return { name: checkName(c.name, `description.constants[${i}].name`, taken), type: c.type as ConstantType };
  });
  const templates = Object.entries(checkOptions(opts.templates, 'description.templates',
    opts.templates && typeof opts.templates === 'object' ? Object.keys(opts.templates) : [])).map(([k, v]) => {
    checkName(k, `description.templates key`, taken);
    const ok = typeof v === 'boolean' || (Number.isSafeInteger(v) && Math.abs(v as number) < 2 ** 31) || (DTYPES as readonly unknown[]).includes(v);
    if (!ok) throw new TensorOpsError('E_ARG', `description.templates.${k} must be an int32 integer, a boolean or a dtype; got ${describe(v)}`);
    return [k, v] as [string, number | boolean | DType];
  });
  const tier = opts.tier === undefined ? 'simdgroup' : opts.tier as KernelTier;
  if (!KERNEL_TIERS.includes(tier)) {
    throw new TensorOpsError('E_ARG', `description.tier must be one of ${KERNEL_TIERS.map((t) => `'${t}'`).join(', ')}; got ${describe(opts.tier)}`);
  }
  // Scale-plane tensors exist from MSL 4.1 on.
  const scaled = inputs.findIndex((b) => b.scalePlane);
  if (scaled >= 0 && tier !== 'tensorops-mx') {
    throw new TensorOpsError('E_ARG', `description.inputs[${scaled}] ('${inputs[scaled].name}') is a scale-plane input, which needs tier 'tensorops-mx' (MSL 4.1); the tier is '${tier}'`);
  }
  const memory = checkList(opts.threadgroupMemory, 'description.threadgroupMemory').map((m, i): MemorySpec => {
    const arg = `description.threadgroupMemory[${i}]`;
    checkOptions(m, arg, ['name', 'dtype', 'length']);
    return {
      name: checkName(m.name, `${arg}.name`, taken),
      dtype: checkDType(m.dtype, `${arg}.dtype`, DTYPES) as DType,
      length: m.length === undefined ? undefined : checkLength(m.length, `${arg}.length`),
    };
  });
  if (memory.length > MAX_THREADGROUP_MEMORY_ENTRIES) {
    throw new TensorOpsError('E_ARG', `description.threadgroupMemory has ${memory.length} entries; at most ${MAX_THREADGROUP_MEMORY_ENTRIES}`);
  }
  // Lengths the description gives must fit already (a call can only change them).
  const given = memory.filter((m) => m.length !== undefined);
  checkTotal(given.map((m) => ({ ...m, length: m.length! })), 'description.threadgroupMemory');
  const spec: KernelSpec = {
    name, source: opts.source, header: (opts.header as string | undefined) ?? '', inputs, outputs, constants, templates, tier,
    threadgroupMemory: memory.map(({ name, dtype }) => ({ name, dtype })),
  };
  return { spec, outputs, memory };
}

/** A constant's value as the kernel reads it (`constant T&`): 4 bytes (int, uint, float) or 1 (bool). */
function constantBytes(type: ConstantType, value: unknown, arg: string): Uint8Array {
  if (type === 'bool') {
    if (typeof value !== 'boolean') throw new TensorOpsError('E_ARG', `${arg} must be a boolean; got ${describe(value)}`);
    return new Uint8Array([value ? 1 : 0]);
  }
  if (typeof value !== 'number' || !Number.isFinite(value) && type !== 'float') {
    throw new TensorOpsError('E_ARG', `${arg} must be a number; got ${describe(value)}`);
  }
  if (type === 'float') return new Uint8Array(new Float32Array([value]).buffer);
  const [lo, hi] = type === 'int' ? [-(2 ** 31), 2 ** 31] : [0, 2 ** 32];
  if (!Number.isInteger(value) || value < lo || value >= hi) {
    throw new TensorOpsError('E_ARG', `${arg} must be an integer in [${lo}, ${hi}); got ${describe(value)}`);
  }
  return new Uint8Array(new Int32Array([value | 0]).buffer);  // a uint's bits, as int32
}

export type { KernelDevice } from './runners';

export async function makeKernel(dev: KernelDevice, native: NativeDeviceHandle, desc: KernelDescription): Promise<UserKernel> {
  const { spec, outputs, memory } = readSpec(desc);
  const defaults = {
    grid: desc.grid === undefined ? undefined : checkDims(desc.grid, 'description.grid'),
    threadgroup: desc.threadgroup === undefined ? undefined : checkDims(desc.threadgroup, 'description.threadgroup'),
  };
  const layout = bindings(spec);
  // Metal's limit on a kernel's buffer arguments; the emulator keeps it too, so a kernel that
  // runs here binds on a Mac.
  if (layout.length > MAX_BUFFERS) {
    throw new TensorOpsError('E_ARG', `${spec.name} binds ${layout.length} buffers (${layout.map((b) => b.name).join(', ')}); at most ${MAX_BUFFERS} (a quantized input takes 3 or 4)`);
  }
  const msl = kernelSource(spec);
  // The backend compiles it (metal), else the emulator builds it (every other backend).
  const compiled = await Promise.resolve(callNative(() => native.compileKernel(spec.name, msl, spec.tier)))
    .catch((err: unknown) => { throw toTensorOpsError(err); });
  const runsOn = compiled ? 'metal' : 'emulator';
  const limit = compiled?.maxThreads;
  const run = compiled
    ? metalRunner(dev, native, spec, layout, compiled)
    : emulatorRunner(dev, native, spec, layout, await emulatorProgram(spec.name, msl, MSL_VERSION[spec.tier]));

  const call = (...args: (Tensor | QuantizedTensor | KernelCallOptions)[]): Tensor[] => {
    dev.checkOpen();
    const last = args[args.length - 1];
    const hasOptions = args.length > 0 && !(last instanceof Tensor) && !(last instanceof QuantizedTensor);
    const tensors = hasOptions ? args.slice(0, -1) : args;
    const opts = checkOptions(hasOptions ? last : undefined, 'options', ['grid', 'threadgroup', 'shapes', 'constants', 'threadgroupMemory']);
    if (tensors.length !== spec.inputs.length) {
      throw new TensorOpsError('E_ARG', `${spec.name} takes ${spec.inputs.length} input tensor(s) (${spec.inputs.map((b) => b.name).join(', ')}); got ${tensors.length}`);
    }
    tensors.forEach((t, i) => {
      const b = spec.inputs[i];
      if (b.scalePlane) {
        if (!(t instanceof QuantizedTensor)) {
          throw new TensorOpsError('E_ARG', `input '${b.name}' must be a QuantizedTensor of format '${b.format}' (a scale-plane input); got ${t instanceof Tensor ? `a dense Tensor (${t.dtype})` : describe(t)}`);
        }
        scalePlaneDescriptor(t, b.name, b.format);  // E_FORMAT, E_SHAPE: what the plane cannot describe
      } else if (b.format !== undefined) {
        if (!(t instanceof QuantizedTensor) || t.format !== b.format) {
          throw new TensorOpsError('E_ARG', `input '${b.name}' must be a QuantizedTensor of format '${b.format}'; got ${t instanceof QuantizedTensor ? `one of format '${t.format}'` : t instanceof Tensor ? `a dense Tensor (${t.dtype})` : describe(t)}`);
        }
        // NAME_shape's fields are uint (as our shaders' own parameters): a tensor past them cannot be described.
        const rows = t.shape.slice(0, -1).reduce((a, d) => a * d, 1);
        if (rows >= 2 ** 32 || t.shape[t.shape.length - 1] >= 2 ** 32) {
          throw new TensorOpsError('E_SHAPE', `input '${b.name}' has shape [${t.shape.join(', ')}]: ${b.name}_shape holds its rows and cols as uint, each below 2^32`);
        }
      } else {
        if (!(t instanceof Tensor)) throw new TensorOpsError('E_ARG', `input '${b.name}' must be a Tensor of ${b.dtype}; got ${t instanceof QuantizedTensor ? `a QuantizedTensor (${t.format}): declare the input with format '${t.format}'` : describe(t)}`);
        if (t.dtype !== b.dtype) throw new TensorOpsError('E_DTYPE', `input '${b.name}' must be ${b.dtype}; got ${t.dtype}`);
      }
    });
    const grid = opts.grid === undefined ? defaults.grid : checkDims(opts.grid, 'options.grid');
    const group = opts.threadgroup === undefined ? defaults.threadgroup : checkDims(opts.threadgroup, 'options.threadgroup');
    if (!grid || !group) throw new TensorOpsError('E_ARG', `${spec.name} needs a grid and a threadgroup (in the description or the call's options)`);
    if (group[0] * group[1] * group[2] > 1024) {
      throw new TensorOpsError('E_ARG', `threadgroup ${describe(group)} has ${group[0] * group[1] * group[2]} threads; at most 1024`);
    }
    grid.forEach((g, i) => {
      if (g % group[i] !== 0) throw new TensorOpsError('E_ARG', `grid[${i}] = ${g} must be a multiple of threadgroup[${i}] = ${group[i]}`);
    });
    const shapes = checkOptions(opts.shapes, 'options.shapes', outputs.map((o) => o.name));
    const outShapes = outputs.map((o) => {
      const given = shapes[o.name];
      if (given === undefined && !o.shape) throw new TensorOpsError('E_SHAPE', `output '${o.name}' has no shape: give it in the description or in options.shapes`);
      return given === undefined ? o.shape! : checkShape(given, `options.shapes.${o.name}`);
    });
    const values = checkOptions(opts.constants, 'options.constants', spec.constants.map((c) => c.name));
    const constants = spec.constants.map((c) => {
      if (values[c.name] === undefined) throw new TensorOpsError('E_ARG', `options.constants.${c.name} is missing (a ${c.type})`);
      return constantBytes(c.type, values[c.name], `options.constants.${c.name}`);
    });
    const lengths = checkOptions(opts.threadgroupMemory, 'options.threadgroupMemory', memory.map((m) => m.name));
    const sized = memory.map((m) => {
      const given = lengths[m.name];
      if (given === undefined && m.length === undefined) {
        throw new TensorOpsError('E_ARG', `threadgroup memory '${m.name}' has no length: give it in the description or in options.threadgroupMemory`);
      }
      return { ...m, length: given === undefined ? m.length! : checkLength(given, `options.threadgroupMemory.${m.name}`) };
    });
    checkTotal(sized, 'threadgroup memory');
    const threads = group[0] * group[1] * group[2];
    if (limit !== undefined && threads > limit) {
      throw new TensorOpsError('E_ARG', `threadgroup ${describe(group)} has ${threads} threads; ${spec.name}'s pipeline allows at most ${limit} on this GPU`);
    }
    return run({
      tensors: tensors as (Tensor | QuantizedTensor)[], threadgroups: grid.map((g, i) => g / group[i]), threads: group, outShapes, constants,
      threadgroupMemory: sized.map((m) => ({ bytes: m.length * ELEMENT_BYTES[m.dtype], metalBytes: metalThreadgroupBytes(m.length, m.dtype) })),
    });
  };
  return Object.defineProperties(call, {
    kernelName: { value: spec.name, enumerable: true },
    mslSource: { value: msl, enumerable: true },
    runsOn: { value: runsOn, enumerable: true },
  }) as UserKernel;
}
