// The MSL text of a user kernel (dev.kernel()): the body the user wrote, inside a [[kernel]]
// function whose parameters are made from the description, as MLX's mx.fast.metal_kernel makes
// them: inputs `device const T* name`, outputs `device T* name`, scalar constants `constant T&
// name`, in that order at [[buffer(0..)]], then host-sized threadgroup memory `threadgroup T* name`
// at [[threadgroup(0..)]], then each thread-position attribute the body names.
// A quantized input takes several buffers in its place (its planes and shape: quantized.ts), or,
// declared a scale-plane input (tier 'tensorops-mx'), one tensor argument with its scale plane
// (scale-plane-inputs.ts). The same text goes to Metal and to the emulator, so both see exactly one kernel.
import type { AnyDType, DType, Format } from '../types';
import { FORMAT_IDS, quantizedPlanes, quantizedPrelude } from './quantized';
import { type ScalePlaneFormat, scalePlaneParam } from './scale-plane-inputs';

export type ConstantType = 'int' | 'uint' | 'float' | 'bool';

/**
 * The kernel tiers a user kernel may ask for: 'simdgroup' (MSL 3.1: simdgroup functions and
 * matrices; every Mac we support), 'tensorops' (MSL 4.0: also TensorOps, the
 * MetalPerformancePrimitives matmul2d and cooperative tensors; macOS 26 on a GPU with the tier)
 * and 'tensorops-mx' (MSL 4.1: also scale-plane tensors, so MX quantized inputs can be matmul2d
 * operands as they are stored; macOS 27).
 */
export const KERNEL_TIERS = ['simdgroup', 'tensorops', 'tensorops-mx'] as const;
export type KernelTier = (typeof KERNEL_TIERS)[number];

/** The MSL version each tier's source is compiled at (on Metal, and by the emulator's flags). */
export const MSL_VERSION: Readonly<Record<KernelTier, 'metal3.1' | 'metal4.0' | 'metal4.1'>> = {
  simdgroup: 'metal3.1', tensorops: 'metal4.0', 'tensorops-mx': 'metal4.1',
};

/** Whether a tier's source has TensorOps (<metal_tensor>, MetalPerformancePrimitives). */
export const hasTensorOps = (tier: KernelTier) => tier !== 'simdgroup';

// tensorops-mx: the type of a scale-plane input (scale-plane-inputs.ts), before the header so its
// helper functions can take one too.
const SCALED_TENSOR = `
// A quantized input bound as ONE tensor: codes of Metal's element type F (metal_fp8_e4m3_format,
// metal_fp8_e5m2_format, metal_fp4_e2m1_format) with their E8M0 scale plane, one scale per 32
// elements along dimension 0 (a row). Extents innermost first: (cols, rows).
template <typename F>
using mto_scaled_tensor = tensor<device F, dextents<int32_t, 2>, tensor_handle,
                                 tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>>;
`;

export interface KernelSpec {
  name: string;
  source: string;
  header: string;
  /** A dense input has a dtype, a quantized one a format. */
  inputs: readonly ({ name: string; dtype: AnyDType; format?: undefined; scalePlane?: undefined }
    | { name: string; format: Format; dtype?: undefined; scalePlane?: false }
    | { name: string; format: ScalePlaneFormat; dtype?: undefined; scalePlane: true })[];
  /** `init`: every element's value before the kernel runs (else undefined). */
  outputs: readonly { name: string; dtype: DType; init?: number }[];
  constants: readonly { name: string; type: ConstantType }[];
  templates: readonly [string, number | boolean | DType][];
  tier: KernelTier;
  /** Host-sized threadgroup memory, [[threadgroup(i)]] in this order. */
  threadgroupMemory: readonly { name: string; dtype: DType }[];
}

/** MSL's name of a dtype's element. */
export const MSL_TYPE: Readonly<Record<AnyDType, string>> = {
  float32: 'float', float16: 'half', bfloat16: 'bfloat', int32: 'int', bool: 'bool',
};

/** The attributes a body may name, with the type its parameter gets (MSL's own spelling). */
export const POSITION_ATTRIBUTES: Readonly<Record<string, string>> = {
  thread_position_in_grid: 'uint3',
  thread_position_in_threadgroup: 'uint3',
  threadgroup_position_in_grid: 'uint3',
  threads_per_threadgroup: 'uint3',
  threadgroups_per_grid: 'uint3',
  threads_per_grid: 'uint3',
  thread_index_in_threadgroup: 'uint',
  simdgroup_index_in_threadgroup: 'uint',
  thread_index_in_simdgroup: 'uint',
  simdgroups_per_threadgroup: 'uint',
  threads_per_simdgroup: 'uint',
};

/** `#include "mx_formats.h"` or `"mx_dequant.h"` on a line of its own. */
const DECODE_INCLUDE = /^[ \t]*#[ \t]*include[ \t]*"(mx_formats|mx_dequant)\.h"[ \t]*$/gm;

const mentions = (text: string, word: string) => new RegExp(`\\b${word}\\b`).test(text);

/** One [[buffer(n)]] parameter: n is its place in bindings(). */
export interface Binding {
  kind: 'input' | 'output' | 'constant';
  /** Which input, output or constant of the description. */
  of: number;
  /** A quantized input's plane ('tensor': a scale-plane input, codes and scales as one tensor); absent for everything else. */
  plane?: 'codes' | 'scales' | 'biases' | 'shape' | 'tensor';
  /** The parameter's name, and its declaration without the attribute. */
  name: string;
  param: string;
}

/** Every buffer parameter in signature order: inputs (a quantized one as its planes), outputs, constants. */
export function bindings(spec: KernelSpec): Binding[] {
  return [
    ...spec.inputs.flatMap((b, i): Binding[] => (b.scalePlane
      ? [{ kind: 'input', of: i, plane: 'tensor', name: b.name, param: scalePlaneParam(b.name, b.format) }]
      : b.format !== undefined
      ? quantizedPlanes(b.name, b.format).map((p) => ({ kind: 'input', of: i, ...p }))
      : [{ kind: 'input', of: i, name: b.name, param: `device const ${MSL_TYPE[b.dtype]}* ${b.name}` }])),
    ...spec.outputs.map((b, i): Binding => ({ kind: 'output', of: i, name: b.name, param: `device ${MSL_TYPE[b.dtype]}* ${b.name}` })),
    ...spec.constants.map((c, i): Binding => ({ kind: 'constant', of: i, name: c.name, param: `constant ${c.type}& ${c.name}` })),
  ];
}

export function kernelSource(spec: KernelSpec): string {
  const templates = spec.templates.map(([k, v]) =>
    typeof v === 'string' ? `using ${k} = ${MSL_TYPE[v]};`
    : typeof v === 'boolean' ? `constexpr constant bool ${k} = ${v};`
    : `constexpr constant int ${k} = ${v};`);
  const params = [
    ...bindings(spec).map((b, n) => `${b.param} [[buffer(${n})]]`),
    ...spec.threadgroupMemory.map((m, i) => `threadgroup ${MSL_TYPE[m.dtype]}* ${m.name} [[threadgroup(${i})]]`),
    ...Object.entries(POSITION_ATTRIBUTES)
      .filter(([attr]) => mentions(spec.source, attr))
      .map(([attr, type]) => `${type} ${attr} [[${attr}]]`),
  ];
  // #line directives: the compiler's messages name the user's own lines (NAME.metal:LINE for the
  // body, NAME.header.metal:LINE for the header).
  // Inputs bound as their planes (a scale-plane input is one tensor, decoded by matmul2d).
  const quantized = spec.inputs.filter((b) => b.format !== undefined && !b.scalePlane);
  // Our decode headers, included as our shaders include them: their text goes before the header
  // (nothing resolves a quoted include at a run-time compile), the include line stays as an empty
  // one so that the header's line numbers do not move.
  const header = spec.header.replace(DECODE_INCLUDE, '');
  const decode = quantized.length > 0 || header !== spec.header;
  return [
    '#include <metal_stdlib>',
    // TensorOps as our own tensorops shaders include it (shaders/matmul_tensorops.metal): the
    // tensor types, then matmul2d and friends, their namespace opened for the body.
    ...(hasTensorOps(spec.tier)
      ? ['#include <metal_tensor>', '#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>']
      : []),
    'using namespace metal;',
    ...(hasTensorOps(spec.tier) ? ['using namespace mpp::tensor_ops;'] : []),
    ...(spec.tier === 'tensorops-mx' ? ['#line 1 "mto_scaled_tensor.h"', SCALED_TENSOR] : []),
    ...(decode ? [quantizedPrelude()] : []),
    ...quantized.map((b) => `constexpr constant int ${b.name}_format = ${FORMAT_IDS[b.format!]};`),
    ...templates,
    `#line 1 "${spec.name}.header.metal"`,
    header,
    `#line 1 "${spec.name}.signature"`,
    `[[kernel]] void ${spec.name}(${params.join(', ')}) {`,
    `#line 1 "${spec.name}.metal"`,
    // Indented as a function body (the emulator's generator recognises function-scope threadgroup
    // arrays by their indent): columns in messages count these two spaces.
    spec.source.split('\n').map((line) => `  ${line}`).join('\n'),
    '}',
    '',
  ].join('\n');
}
