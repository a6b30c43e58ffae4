// Scale-plane inputs of user kernels (dev.kernel() with tier 'tensorops-mx', issue #30): a
// quantized input declared `{ name, format, scalePlane: true }` reaches the kernel as ONE tensor,
// its codes with their E8M0 scale plane, as our qlinear_tensorops_mx kernel takes its weight:
//
//   mto_scaled_tensor<F> NAME [[buffer(n)]]
//   = tensor<device F, dextents<int32_t, 2>, tensor_handle,
//            tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>>
//
// with F Metal's element type of the format. Extents innermost first: (cols, rows), every
// dimension but the last folded into rows; matmul2d decodes and scales as it multiplies. Which
// tensors qualify, and their descriptor, is native/core/scale_plane.h's rule (the one the Metal
// host applies when qtensor.mm makes the MTLTensor), asked through the addon so that lib/, the
// Metal host and the emulator's binding all describe the tensor the same way.
import { TensorOpsError } from '../errors';
import { formats } from '../formats';
import { loadBinding } from '../native';
import type { QuantizedTensor } from '../tensor';
import type { Format } from '../types';

/** The formats Metal has a tensor element type for, each with that type in MSL (the raw MTLTensorDataType comes from scale_plane.h's rule). */
export const SCALE_PLANE_FORMATS = {
  mxfp8: { msl: 'metal_fp8_e4m3_format' },
  mxfp8_e5m2: { msl: 'metal_fp8_e5m2_format' },
  mxfp4: { msl: 'metal_fp4_e2m1_format' },
} as const;
export type ScalePlaneFormat = keyof typeof SCALE_PLANE_FORMATS;

const accepted = () => Object.keys(SCALE_PLANE_FORMATS).map((f) => `'${f}'`).join(', ');

/** E_FORMAT, naming `arg`, the format and the accepted ones, unless `format` has a Metal tensor element type. */
export function checkScalePlaneFormat(format: Format, arg: string): ScalePlaneFormat {
  if (!(format in SCALE_PLANE_FORMATS)) {
    throw new TensorOpsError('E_FORMAT', `${arg} is '${format}', which has no Metal tensor element type: a scale-plane input takes ${accepted()}`);
  }
  return format as ScalePlaneFormat;
}

/** The parameter a scale-plane input gets in the kernel's signature (without its attribute). */
export function scalePlaneParam(name: string, format: ScalePlaneFormat): string {
  return `mto_scaled_tensor<${SCALE_PLANE_FORMATS[format].msl}> ${name}`;
}

/** What the host binds: the tensor's descriptor and its planes' bytes. */
export interface ScalePlaneDescriptor {
  /** Raw MTLTensorDataType of the codes (the scale plane is always MetalFloat8UE8M0, blocks of (32, 1)). */
  dataType: number;
  /** Extents innermost first: cols (the last dimension), rows (every other one multiplied). */
  cols: number;
  rows: number;
  /** Elements between two rows' starts (packed fp4 counts elements). */
  rowStride: number;
  codeBytes: number;
  scaleBytes: number;
}

/** The rule's requirement on a row, per format (for messages). */
function rowRule(format: ScalePlaneFormat): string {
  const per128 = (128 * 8) / formats[format].bits;
  return `the last dimension a multiple of ${per128} (rows of a multiple of 128 bytes: ${per128} ${format} codes)`;
}

/**
 * The descriptor of `q` bound as scale-plane input `name` declared with `format`: E_FORMAT when q
 * is of another format, E_SHAPE when the scale plane cannot describe q's shape or block (each
 * message naming the input, the value and what is accepted).
 */
export function scalePlaneDescriptor(q: QuantizedTensor, name: string, format: ScalePlaneFormat): ScalePlaneDescriptor {
  if (q.format !== format) {
    throw new TensorOpsError('E_FORMAT', `input '${name}' is a scale-plane input of format '${format}'; got a QuantizedTensor of format '${q.format}' (declare the format it has: a scale-plane input takes ${accepted()})`);
  }
  const l = loadBinding().tensors.scalePlaneLayout(q.format, q.blockSize, q.shape, 'tensorops-mx');
  if (!l.ok) {
    throw new TensorOpsError('E_SHAPE', `input '${name}' (${q.format}, shape [${q.shape.join(', ')}], block ${q.blockSize}) cannot be seen as one tensor with a scale plane: ${l.reason}; a scale-plane input needs rank 1 or more, block 32 and ${rowRule(format)}`);
  }
  const [cols, rows] = l.dimensions;
  return {
    dataType: l.dataType, cols, rows, rowStride: l.strides[1],
    codeBytes: (rows * l.strides[1] * formats[format].bits) / 8,
    scaleBytes: rows * (l.strides[1] / 32),
  };
}
