// loadSafetensors: a model's safetensors file(s) onto a device, one tensor at a time.
//
// Mapping (the report says, per tensor, which applied and the error measured):
// - F32, F16, BF16 -> the same dtype; I32 -> int32; I64 -> int32 when every value fits; BOOL ->
//   bool; F64 -> float32 (rounded). Other integer types answer E_FORMAT (filter them out).
// - MLX's quantized layers (`x.weight` uint32-packed, `x.scales`, `x.biases`; bits and group size
//   from config.json's `quantization`, its per-layer entries, or the shapes):
//   affine 4/8-bit -> affine4/affine8 with the same codes (MLX packs LSB-first in little-endian
//   words, as we do); 2/3-bit -> affine4 and 5/6-bit -> affine8, codes widened (exact).
//   Scales and biases become float16: exact when the file's are float16, or bfloat16/float32
//   values inside float16's normal range; others round (measured). A scale or bias past
//   float16's range makes the layer dense float32 instead.
//   mxfp4/mxfp8 modes (uint8 E8M0 scales, no biases) -> mxfp4/mxfp8, bytes as they are (MLX reads
//   scale 0xFF as infinity, we as NaN: counted in the note). nvfp4 (E4M3 scales per 16) -> dense
//   bfloat16, exact (an FP4 value times an E4M3 scale has at most 6 significant bits).
// - gpt-oss's `x_blocks`/`x_scales` (uint8 FP4 pairs, E8M0 per 32) -> mxfp4 `x`, exact.
// - F8_E4M3 (F8_E5M2) weights: alone -> mxfp8 (mxfp8_e5m2) with unit scales when the last axis is
//   a multiple of 32, else dense bfloat16; both exact. With block scales (`x_scale_inv`, as
//   DeepSeek/Qwen FP8 releases, or `x_scale`, per tensor or per row): -> mxfp8 with the same
//   codes when every scale is a power of two (exact); else options.fp8: dense bfloat16 (default),
//   float32, or re-quantized mxfp8.
import { endianness } from 'node:os';
import { join } from 'node:path';
import type { Device } from '../../device';
import { TensorOpsError } from '../../errors';
import { encodeElements } from '../../formats';
import type { QuantizedTensor, Tensor } from '../../tensor';
import type { Format } from '../../types';
import { checkOptions, describe } from '../../validate';
import {
  E2M1_VALUES, E4M3_VALUES, E5M2_VALUES, E8M0_VALUES, bf16ToNumber, codeAt, e8m0OfPowerOfTwo, f16ToNumber,
  numberToBf16Fast, numberToF16, packBits, unpackBits,
} from './convert';
import { locateSafetensors, readJsonFile, readTables } from './parse';
import { SafetensorsFileReader } from './reader';
import type { LoadSafetensorsOptions, SafetensorsConversion, SafetensorsReport, SafetensorsTensorInfo } from './types';

/** What loadSafetensors returns. */
export interface SafetensorsModel {
  /** By name; an MLX quantized layer under its weight's name (`x.weight`). */
  tensors: Map<string, Tensor | QuantizedTensor>;
  /** The model's config.json (beside the weights), or null when there is none. */
  config: Record<string, unknown> | null;
  /** The files' `__metadata__`, merged. */
  metadata: Record<string, string>;
  report: SafetensorsReport;
}

type Info = SafetensorsTensorInfo;
type Made = { tensor: Tensor | QuantizedTensor; conversion: SafetensorsConversion };
type Unit =
  | { kind: 'dense'; name: string; parts: [Info] }
  | { kind: 'mlx'; name: string; module: string; parts: [Info, Info] | [Info, Info, Info] }
  | { kind: 'blocks'; name: string; parts: [Info, Info] }
  | { kind: 'fp8'; name: string; parts: [Info] | [Info, Info] };

function formatError(message: string): TensorOpsError {
  return new TensorOpsError('E_FORMAT', message);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const product = (dims: readonly number[]) => dims.reduce((a, b) => a * b, 1);
const sameDims = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((d, i) => d === b[i]);

/** Groups the file's tensors into what the result holds: MLX triples, FP8 weight + scale, the rest alone. */
function plan(table: Map<string, Info>): { units: Unit[]; skipped: { name: string; reason: string }[] } {
  const used = new Set<string>();
  const units: Unit[] = [];
  const take = (unit: Unit) => {
    for (const p of unit.parts) used.add(p.name);
    units.push(unit);
  };
  for (const [name, info] of table) {
    if (name.endsWith('.scales')) {
      const module = name.slice(0, -'.scales'.length);
      const weight = table.get(`${module}.weight`);
      if (weight?.dtype === 'U32') {
        const biases = table.get(`${module}.biases`);
        take({ kind: 'mlx', name: weight.name, module, parts: biases ? [weight, info, biases] : [weight, info] });
      }
    } else if (name.endsWith('_blocks') && info.dtype === 'U8') {
      const base = name.slice(0, -'_blocks'.length);
      const scales = table.get(`${base}_scales`);
      if (scales?.dtype === 'U8') take({ kind: 'blocks', name: base, parts: [info, scales] });
    }
  }
  for (const [name, info] of table) {
    if (used.has(name) || (info.dtype !== 'F8_E4M3' && info.dtype !== 'F8_E5M2')) continue;
    const scale = [table.get(`${name}_scale_inv`), table.get(`${name}_scale`)].find((s) => s && !used.has(s.name));
    take({ kind: 'fp8', name, parts: scale ? [info, scale] : [info] });
  }
  const skipped: { name: string; reason: string }[] = [];
  for (const [name, info] of table) {
    if (used.has(name)) continue;
    if (product(info.shape) === 0) skipped.push({ name, reason: `it has no elements (shape [${info.shape.join(', ')}])` });
    else units.push({ kind: 'dense', name, parts: [info] });
  }
  const names = new Set<string>();
  for (const u of units) {
    if (names.has(u.name)) throw formatError(`'${u.parts[0].file}': two tensors of the result would be named '${u.name}' (a quantized layer's and a plain tensor's)`);
    names.add(u.name);
  }
  return { units, skipped };
}

/** MLX quantization parameters for one layer from config.json (`quantization` and its per-layer entries). */
function mlxParams(
  config: Record<string, unknown> | null, module: string,
): { bits?: number; groupSize?: number; mode?: string; layerMode?: string } {
  const q = config?.quantization ?? config?.quantization_config;
  if (!isObject(q)) return {};
  const layer = q[module];
  const pick = (key: string) => (isObject(layer) && layer[key] !== undefined ? layer[key] : q[key]);
  const bits = pick('bits'), groupSize = pick('group_size'), mode = pick('mode');
  if (bits !== undefined && ![2, 3, 4, 5, 6, 8].includes(bits as number)) {
    throw formatError(`config.json: quantization bits for '${module}' is ${describe(bits)}; MLX's are 2, 3, 4, 5, 6 and 8`);
  }
  if (groupSize !== undefined && ![16, 32, 64, 128].includes(groupSize as number)) {
    throw formatError(`config.json: quantization group_size for '${module}' is ${describe(groupSize)}; MLX's are 16, 32, 64 and 128`);
  }
  if (mode !== undefined && !['affine', 'mxfp4', 'mxfp8', 'nvfp4'].includes(mode as string)) {
    throw formatError(`config.json: quantization mode for '${module}' is ${describe(mode)}; known: 'affine', 'mxfp4', 'mxfp8', 'nvfp4'`);
  }
  const layerMode = isObject(layer) ? (layer.mode as string | undefined) : undefined;
  return { bits: bits as number | undefined, groupSize: groupSize as number | undefined, mode: mode as string | undefined, layerMode };
}

/** Float values of a float tensor's bytes (scales of any float dtype, or E8M0). */
function floatValues(info: Info, bytes: Uint8Array): Float64Array {
  const n = product(info.shape);
  const out = new Float64Array(n);
  const u16 = () => new Uint16Array(bytes.buffer, bytes.byteOffset, n);
  switch (info.dtype) {
    case 'F32': out.set(new Float32Array(bytes.buffer, bytes.byteOffset, n)); break;
    case 'F64': out.set(new Float64Array(bytes.buffer, bytes.byteOffset, n)); break;
    case 'F16': { const b = u16(); for (let i = 0; i < n; i++) out[i] = f16ToNumber(b[i]); break; }
    case 'BF16': { const b = u16(); for (let i = 0; i < n; i++) out[i] = bf16ToNumber(b[i]); break; }
    case 'F8_E8M0': for (let i = 0; i < n; i++) out[i] = E8M0_VALUES[bytes[i]]; break;
    default: throw formatError(`'${info.file}': tensor '${info.name}' is ${info.dtype}; scales must be F32, F16, BF16 or F8_E8M0`);
  }
  return out;
}

/** An FP8 weight's scales: scale (rb, cb) covers rows [rb*bn, ...) and columns [cb*bk, ...) of [rows, k]. */
interface ScaleBlocks { values: Float64Array; bn: number; bk: number; sk: number; rows: number; k: number; source: string }

/** fn(scale, row0, row1, col0, col1) for each scale block (edge blocks cut to the weight). */
function eachScaleBlock(b: ScaleBlocks, fn: (s: number, r0: number, r1: number, c0: number, c1: number) => void): void {
  for (let r0 = 0, rb = 0; r0 < b.rows; r0 += b.bn, rb++) {
    for (let c0 = 0, cb = 0; c0 < b.k; c0 += b.bk, cb++) {
      fn(b.values[rb * b.sk + cb], r0, Math.min(b.rows, r0 + b.bn), c0, Math.min(b.k, c0 + b.bk));
    }
  }
}

/** Equal values, NaN equal to NaN. */
const same = (a: number, b: number) => a === b || (Number.isNaN(a) && Number.isNaN(b));

/**
 * A float tensor's values as float16 bits: F16 as they are, BF16 within float16's normal range by
 * moving bits (exact), anything else rounded to nearest even from the value.
 */
function toF16(info: Info, bytes: Uint8Array, values: Float64Array): { bits: Uint16Array; exact: boolean } {
  const n = values.length;
  if (info.dtype === 'F16') return { bits: new Uint16Array(bytes.buffer, bytes.byteOffset, n), exact: true };
  const out = new Uint16Array(n);
  const bf = info.dtype === 'BF16' ? new Uint16Array(bytes.buffer, bytes.byteOffset, n) : undefined;
  let exact = true;
  for (let i = 0; i < n; i++) {
    if (bf) {
      const bits = bf[i], e = (bits >> 7) & 0xff;
      if (e >= 113 && e <= 142) { out[i] = (bits & 0x8000) | ((e - 112) << 10) | ((bits & 0x7f) << 3); continue; }
      if ((bits & 0x7fff) === 0) { out[i] = bits & 0x8000; continue; }
    }
    out[i] = numberToF16(values[i]);
    if (exact && !same(f16ToNumber(out[i]), values[i])) exact = false;
  }
  return { bits: out, exact };
}

/** Running max |ours - file's| and max relative error. */
class ErrorMeter {
  abs = 0;
  rel = 0;
  max = 0;
  add(ours: number, want: number): void {
    if (Math.abs(want) > this.max) this.max = Math.abs(want);
    if (ours === want || (Number.isNaN(ours) && Number.isNaN(want))) return;
    const err = Math.abs(ours - want);
    if (Number.isNaN(err)) { this.abs = Infinity; this.rel = Infinity; return; }
    if (err > this.abs) this.abs = err;
    if (want !== 0 && err / Math.abs(want) > this.rel) this.rel = err / Math.abs(want);
  }
  get exact(): boolean { return this.abs === 0; }
}

class Loader {
  readonly dev: Device;
  readonly config: Record<string, unknown> | null;
  readonly fp8: 'bfloat16' | 'float32' | 'mxfp8';

  constructor(dev: Device, config: Record<string, unknown> | null, fp8: 'bfloat16' | 'float32' | 'mxfp8') {
    this.dev = dev;
    this.config = config;
    this.fp8 = fp8;
  }

  async make(unit: Unit, data: Uint8Array[]): Promise<Made> {
    switch (unit.kind) {
      case 'dense': return this.dense(unit.parts[0], data[0]);
      case 'mlx': return this.mlx(unit, data);
      case 'blocks': return this.blocks(unit, data);
      case 'fp8': return this.fp8Weight(unit, data);
    }
  }

  conversion(name: string, source: string, target: string, meter?: ErrorMeter, note?: string): SafetensorsConversion {
    const c: SafetensorsConversion = {
      name, source, target, exact: meter ? meter.exact : true, maxAbsError: meter?.abs ?? 0, maxRelError: meter?.rel ?? 0,
    };
    if (meter) c.maxAbsValue = meter.max;
    if (note) c.note = note;
    return c;
  }

  async dense(info: Info, bytes: Uint8Array): Promise<Made> {
    const n = product(info.shape), { dev } = this, shape = info.shape;
    const same = (tensor: Tensor, target: string) => ({ tensor, conversion: this.conversion(info.name, info.dtype, target) });
    switch (info.dtype) {
      case 'F32': return same(dev.tensor(new Float32Array(bytes.buffer, 0, n), shape, 'float32'), 'float32');
      case 'F16': return same(dev.tensor(new Uint16Array(bytes.buffer, 0, n), shape, 'float16'), 'float16');
      case 'BF16': return same(dev.tensor(new Uint16Array(bytes.buffer, 0, n), shape, 'bfloat16'), 'bfloat16');
      case 'I32': return same(dev.tensor(new Int32Array(bytes.buffer, 0, n), shape, 'int32'), 'int32');
      case 'BOOL': return same(dev.tensor(bytes, shape, 'bool'), 'bool');
      case 'I64': {
        const src = new BigInt64Array(bytes.buffer, 0, n), out = new Int32Array(n);
        for (let i = 0; i < n; i++) {
          const v = src[i];
          if (v < -2147483648n || v > 2147483647n) {
            throw formatError(`'${info.file}': tensor '${info.name}' is I64 with ${v} at [${i}], outside int32 (the only integer dtype here); leave it out with options.filter`);
          }
          out[i] = Number(v);
        }
        return same(dev.tensor(out, shape, 'int32'), 'int32');
      }
      case 'F64': {
        const src = new Float64Array(bytes.buffer, 0, n), out = new Float32Array(n), meter = new ErrorMeter();
        for (let i = 0; i < n; i++) { out[i] = src[i]; meter.add(out[i], src[i]); }
        return { tensor: dev.tensor(out, shape, 'float32'), conversion: this.conversion(info.name, 'F64', 'float32', meter) };
      }
      case 'F8_E4M3': case 'F8_E5M2': return this.fp8Dense(info.name, info, bytes, undefined);
      default:
        throw formatError(
          `'${info.file}': tensor '${info.name}' is ${info.dtype}, which this package has no dtype for ` +
          '(float32, float16, bfloat16, int32, bool); leave it out with options.filter',
        );
    }
  }

  mlx(unit: Extract<Unit, { kind: 'mlx' }>, data: Uint8Array[]): Made {
    const [weight, scales, biases] = unit.parts;
    const where = `'${weight.file}': MLX quantized layer '${unit.module}'`;
    const lead = weight.shape.slice(0, -1);
    if (weight.shape.length < 1 || scales.shape.length !== weight.shape.length || !sameDims(lead, scales.shape.slice(0, -1))) {
      throw formatError(`${where}: weight [${weight.shape.join(', ')}] and scales [${scales.shape.join(', ')}] must agree on all but the last axis`);
    }
    if (biases && !sameDims(biases.shape, scales.shape)) {
      throw formatError(`${where}: biases [${biases.shape.join(', ')}] and scales [${scales.shape.join(', ')}] must have one shape`);
    }
    const words = weight.shape[weight.shape.length - 1], groups = scales.shape[scales.shape.length - 1];
    const cfg = mlxParams(this.config, unit.module);
    // A layer's own mode, else biases mean affine (a layer overriding an fp-mode default with
    // bits and a group size only), else the default mode, else the shapes decide.
    const mode = cfg.layerMode ?? (biases ? 'affine' : cfg.mode ?? (scales.dtype === 'U8' ? undefined : 'affine'));
    if (mode === 'affine') {
      if (!biases) throw formatError(`${where}: affine mode needs '${unit.module}.biases'`);
      return this.mlxAffine(unit, data, cfg, words, groups, where);
    }
    if (biases) throw formatError(`${where}: mode '${mode}' has no biases, but the file has '${biases.name}'`);
    if (scales.dtype !== 'U8') throw formatError(`${where}: mode '${mode ?? 'mxfp4/mxfp8/nvfp4'}' takes U8 scales; the file's are ${scales.dtype}`);
    // Elements per word and per scale of each mode: the shapes pick it when config.json does not.
    const MODES = { mxfp4: [8, 32], mxfp8: [4, 32], nvfp4: [8, 16] } as const;
    const fits = (m: keyof typeof MODES) => words * MODES[m][0] === groups * MODES[m][1];
    const m = (mode ?? (['mxfp4', 'mxfp8', 'nvfp4'] as const).find(fits)) as keyof typeof MODES | undefined;
    if (!m || !fits(m)) {
      throw formatError(`${where}: weight [${weight.shape.join(', ')}] (uint32 words) and scales [${scales.shape.join(', ')}] fit no MLX mode${m ? ` (config.json says '${m}')` : ''}`);
    }
    if (cfg.groupSize !== undefined && cfg.groupSize !== MODES[m][1]) {
      throw formatError(`${where}: config.json gives group_size ${cfg.groupSize}; mode '${m}' has ${MODES[m][1]}`);
    }
    if (cfg.bits !== undefined && cfg.bits !== 32 / MODES[m][0]) {
      throw formatError(`${where}: config.json gives bits ${cfg.bits}; mode '${m}' has ${32 / MODES[m][0]}`);
    }
    const shape = [...lead, words * MODES[m][0]];
    const codes = data[0], scaleBytes = data[1];
    if (m === 'nvfp4') {
      // value = E2M1 * E4M3 scale: at most 6 significant bits, inside bfloat16's range: exact.
      const n = product(shape), out = new Uint16Array(n), meter = new ErrorMeter();
      for (let i = 0; i < n; i++) {
        const v = E2M1_VALUES[(codes[i >> 1] >> ((i & 1) * 4)) & 15] * E4M3_VALUES[scaleBytes[(i / 16) | 0]];
        out[i] = numberToBf16Fast(v);
        meter.add(bf16ToNumber(out[i]), v);
      }
      return { tensor: this.dev.tensor(out, shape, 'bfloat16'), conversion: this.conversion(unit.name, 'mlx nvfp4 (E4M3 scales per 16)', 'bfloat16', meter) };
    }
    let nan = 0;
    for (const b of scaleBytes) if (b === 0xff) nan++;
    const format: Format = m;
    const tensor = this.dev.fromQuantized({ format, shape, codes, scales: scaleBytes, blockSize: 32 });
    return {
      tensor,
      conversion: this.conversion(unit.name, `mlx ${m}`, format, undefined,
        nan ? `${nan} scale bytes are 0xFF, which MLX reads as infinity and ${format} as NaN` : undefined),
    };
  }

  mlxAffine(
    unit: Extract<Unit, { kind: 'mlx' }>, data: Uint8Array[], cfg: { bits?: number; groupSize?: number },
    words: number, groups: number, where: string,
  ): Made {
    const [weight, scales, biases] = unit.parts as [Info, Info, Info];
    // words * 32 = K * bits and K = groups * groupSize: the shapes allow these (bits, group size).
    const candidates: [number, number][] = [];
    for (const bits of cfg.bits !== undefined ? [cfg.bits] : [2, 3, 4, 5, 6, 8]) {
      for (const gs of cfg.groupSize !== undefined ? [cfg.groupSize] : [32, 64, 128]) {
        if (words * 32 === bits * groups * gs) candidates.push([bits, gs]);
      }
    }
    if (candidates.length !== 1) {
      throw formatError(
        `${where}: weight [${weight.shape.join(', ')}] (uint32 words) and scales [${scales.shape.join(', ')}] ` +
        (candidates.length === 0
          ? `fit no bits/group size${cfg.bits !== undefined || cfg.groupSize !== undefined ? ` with config.json's bits ${cfg.bits ?? '?'}, group_size ${cfg.groupSize ?? '?'}` : ''}`
          : `fit ${candidates.map(([b, g]) => `${b}-bit group ${g}`).join(' or ')}; config.json's quantization must say which`),
      );
    }
    const [bits, gs] = candidates[0];
    if (gs === 16) throw formatError(`${where}: affine group size 16 is not one of ours (32, 64, 128)`);
    const k = groups * gs;
    const shape = [...weight.shape.slice(0, -1), k];
    const n = product(shape), nGroups = n / gs;
    const target: 4 | 8 = bits <= 4 ? 4 : 8;
    const s = floatValues(scales, data[1]), b = floatValues(biases, data[2]);
    const sConv = toF16(scales, data[1], s), bConv = toF16(biases, data[2], b);
    const s16 = sConv.bits, b16 = bConv.bits;
    const raw = data[0];
    const meter = new ErrorMeter();
    const inexact = !sConv.exact || !bConv.exact;
    let overflow = false;
    for (let g = 0; inexact && g < nGroups && !overflow; g++) {
      const sv = f16ToNumber(s16[g]), bv = f16ToNumber(b16[g]);
      overflow = (!Number.isFinite(sv) && Number.isFinite(s[g])) || (!Number.isFinite(bv) && Number.isFinite(b[g]));
    }
    if (inexact && !overflow) {
      // Measured over every value (the tensor's largest value included).
      for (let i = 0; i < n; i++) {
        const g = (i / gs) | 0, q = codeAt(raw, bits, i);
        meter.add(f16ToNumber(s16[g]) * q + f16ToNumber(b16[g]), s[g] * q + b[g]);
      }
    }
    const source = `mlx affine ${bits}-bit group ${gs}, ${scales.dtype} scales`;
    if (overflow) {
      // Past float16: the values themselves, in float32.
      const codes = unpackBits(raw, bits, n), out = new Float32Array(n), dense = new ErrorMeter();
      for (let i = 0; i < n; i++) {
        const g = (i / gs) | 0, want = s[g] * codes[i] + b[g];
        out[i] = want;
        dense.add(out[i], want);
      }
      return {
        tensor: this.dev.tensor(out, shape, 'float32'),
        conversion: this.conversion(unit.name, source, 'float32', dense, 'a scale or bias is past float16\'s range: dequantized to dense float32'),
      };
    }
    const codes = bits === target ? raw : packBits(unpackBits(raw, bits, n), target);
    const format: Format = target === 4 ? 'affine4' : 'affine8';
    const tensor = this.dev.fromQuantized({ format, shape, codes, scales: s16, biases: b16, blockSize: gs });
    return {
      tensor,
      conversion: this.conversion(unit.name, source, format, meter, bits !== target ? `${bits}-bit codes widened to ${target} bits` : undefined),
    };
  }

  blocks(unit: Extract<Unit, { kind: 'blocks' }>, data: Uint8Array[]): Made {
    const [blocks, scales] = unit.parts;
    const r = blocks.shape.length;
    if (r < 2 || blocks.shape[r - 1] !== 16 || !sameDims(blocks.shape.slice(0, -1), scales.shape)) {
      throw formatError(`'${blocks.file}': MXFP4 tensor '${unit.name}': blocks [${blocks.shape.join(', ')}] must be [..., G, 16] with scales [..., G]; scales are [${scales.shape.join(', ')}]`);
    }
    const shape = [...blocks.shape.slice(0, -2), blocks.shape[r - 2] * 32];
    let nan = 0;
    for (const b of data[1]) if (b === 0xff) nan++;
    const tensor = this.dev.fromQuantized({ format: 'mxfp4', shape, codes: data[0], scales: data[1], blockSize: 32 });
    return { tensor, conversion: this.conversion(unit.name, 'U8 FP4 blocks + U8 E8M0 scales', 'mxfp4', undefined, nan ? `${nan} scale bytes are 0xFF (NaN)` : undefined) };
  }

  async fp8Weight(unit: Extract<Unit, { kind: 'fp8' }>, data: Uint8Array[]): Promise<Made> {
    const [weight, scale] = unit.parts;
    if (!scale) return this.fp8Dense(unit.name, weight, data[0], undefined);
    const where = `'${weight.file}': FP8 weight '${weight.name}'`;
    const sv = floatValues(scale, data[1]);
    const dims = weight.shape;
    const k = dims.length ? dims[dims.length - 1] : 1;
    const rows = product(dims) / k;
    // The scale of element (row, col): one per tensor, per row, or per [bn, bk] block.
    let bn: number, bk: number, sk: number;
    if (sv.length === 1) {
      [bn, bk, sk] = [rows, k, 1];
    } else if (dims.length === 2 && scale.shape.length <= 2) {
      const [sN, sK] = scale.shape.length === 2 ? scale.shape : [scale.shape[0], 1];
      const q = this.config?.quantization_config;
      const given = isObject(q) && Array.isArray(q.weight_block_size) ? (q.weight_block_size as unknown[]) : undefined;
      const pick = (n: number, sn: number, want: unknown): number => {
        const tries = [want, 128, n / sn, Math.ceil(n / sn)].filter((b): b is number => Number.isSafeInteger(b) && (b as number) > 0);
        const b = sn === 1 ? n : tries.find((t) => Math.ceil(n / t) === sn);
        if (b === undefined) throw formatError(`${where}: scale '${scale.name}' [${scale.shape.join(', ')}] fits no block size for [${dims.join(', ')}]`);
        return b;
      };
      bn = pick(dims[0], sN, given?.[0]);
      bk = pick(dims[1], sK, given?.[1]);
      sk = sK;
    } else {
      throw formatError(`${where}: scale '${scale.name}' [${scale.shape.join(', ')}] is neither one value nor blocks of a 2-D weight [${dims.join(', ')}]`);
    }
    const scaleAt = (row: number, col: number) => sv[((row / bn) | 0) * sk + ((col / bk) | 0)];
    const source = `${weight.dtype} + ${sv.length === 1 ? 'one' : `${bn}x${bk} block`} ${scale.dtype} scale${sv.length === 1 ? '' : 's'} ('${scale.name}')`;
    const format: Format = weight.dtype === 'F8_E4M3' ? 'mxfp8' : 'mxfp8_e5m2';
    if (k % 32 === 0 && (bk % 32 === 0 || bk === k) && sv.every((v) => e8m0OfPowerOfTwo(v) !== undefined)) {
      // Powers of two: the codes stay, each 32-block's scale becomes its E8M0 byte. Exact.
      const blocksPerRow = k / 32, e8 = new Uint8Array(rows * blocksPerRow);
      for (let r = 0; r < rows; r++) for (let j = 0; j < blocksPerRow; j++) e8[r * blocksPerRow + j] = e8m0OfPowerOfTwo(scaleAt(r, j * 32))!;
      const tensor = this.dev.fromQuantized({ format, shape: dims, codes: data[0], scales: e8, blockSize: 32 });
      return { tensor, conversion: this.conversion(unit.name, source, format, undefined, 'power-of-two scales: codes kept') };
    }
    return this.fp8Dense(unit.name, weight, data[0], { values: sv, bn, bk, sk, rows, k, source });
  }

  /** An FP8 tensor (times its scales, if any) as dense values, or mxfp8 (options.fp8). */
  async fp8Dense(
    name: string, weight: Info, bytes: Uint8Array,
    scaled: ScaleBlocks | undefined,
  ): Promise<Made> {
    const lut = weight.dtype === 'F8_E4M3' ? E4M3_VALUES : E5M2_VALUES;
    const shape = weight.shape, n = product(shape);
    const k = shape.length ? shape[shape.length - 1] : 1;
    const format: Format = weight.dtype === 'F8_E4M3' ? 'mxfp8' : 'mxfp8_e5m2';
    if (!scaled) {
      if (shape.length && k % 32 === 0) {
        const tensor = this.dev.fromQuantized({ format, shape, codes: bytes, scales: new Uint8Array(n / 32).fill(127), blockSize: 32 });
        return { tensor, conversion: this.conversion(name, weight.dtype, format, undefined, 'unit scales: codes kept') };
      }
      const out = new Uint16Array(n);
      for (let i = 0; i < n; i++) out[i] = numberToBf16Fast(lut[bytes[i]]);  // every FP8 value is a bfloat16 value
      return { tensor: this.dev.tensor(out, shape, 'bfloat16'), conversion: this.conversion(name, weight.dtype, 'bfloat16') };
    }
    const { source } = scaled;
    const meter = new ErrorMeter();
    const mode = this.fp8 === 'mxfp8' && k % 32 === 0 ? 'mxfp8' : this.fp8 === 'mxfp8' ? 'bfloat16' : this.fp8;
    if (mode === 'bfloat16' || mode === 'float32') {
      // Per scale block, the 256 codes' values in the target: one table, then a lookup per element.
      // The error is measured over the codes each block uses.
      const out = mode === 'bfloat16' ? new Uint16Array(n) : new Float32Array(n);
      const table = mode === 'bfloat16' ? new Uint16Array(256) : new Float32Array(256);
      const seen = new Uint8Array(256);
      eachScaleBlock(scaled, (s, r0, r1, c0, c1) => {
        for (let c = 0; c < 256; c++) table[c] = mode === 'bfloat16' ? numberToBf16Fast(lut[c] * s) : lut[c] * s;
        for (let r = r0; r < r1; r++) {
          for (let i = r * k + c0, end = r * k + c1; i < end; i++) {
            const code = bytes[i];
            out[i] = table[code];
            seen[code] = 1;
          }
        }
        for (let c = 0; c < 256; c++) {
          if (!seen[c]) continue;
          seen[c] = 0;
          meter.add(mode === 'bfloat16' ? bf16ToNumber(table[c]) : table[c], lut[c] * s);  // lut * s is exact in float64 (4 x 24 bits)
        }
      });
      const note = this.fp8 === 'mxfp8' ? `options.fp8 'mxfp8' needs a last axis that is a multiple of 32; ${k} is not` : undefined;
      return { tensor: this.dev.tensor(out, shape, mode), conversion: this.conversion(name, source, mode, meter, note) };
    }
    const exact = new Float64Array(n);
    eachScaleBlock(scaled, (s, r0, r1, c0, c1) => {
      for (let r = r0; r < r1; r++) for (let i = r * k + c0, end = r * k + c1; i < end; i++) exact[i] = lut[bytes[i]] * s;
    });
    // Re-quantized: each 32-block's E8M0 scale is the smallest power of two that keeps its largest
    // value in range (no saturation), the codes round to nearest even.
    const element = weight.dtype === 'F8_E4M3' ? 'fp8_e4m3' : 'fp8_e5m2';
    const maxCode = weight.dtype === 'F8_E4M3' ? 448 : 57344;
    const blocks = n / 32, e8 = new Uint8Array(blocks), inRange = new Float32Array(n);
    for (let b = 0; b < blocks; b++) {
      let amax = 0;
      for (let j = 0; j < 32; j++) if (Math.abs(exact[b * 32 + j]) > amax) amax = Math.abs(exact[b * 32 + j]);
      const e = amax > 0 && Number.isFinite(amax) ? Math.min(127, Math.max(-127, Math.ceil(Math.log2(amax / maxCode)))) : -127;
      e8[b] = e + 127;
      for (let j = 0; j < 32; j++) inRange[b * 32 + j] = exact[b * 32 + j] * 2 ** -e;
    }
    const codes = encodeElements(element, inRange);
    for (let b = 0; b < blocks; b++) {
      const scale = 2 ** (e8[b] - 127);
      for (let i = b * 32; i < b * 32 + 32; i++) meter.add(lut[codes[i]] * scale, exact[i]);
    }
    const tensor = this.dev.fromQuantized({ format, shape, codes, scales: e8, blockSize: 32 });
    return { tensor, conversion: this.conversion(name, source, format, meter, 're-quantized: per 32-block, the smallest E8M0 scale that holds its largest value') };
  }
}

/**
 * Loads a model's safetensors weights onto `dev`: a `.safetensors` file, a sharded model's
 * `model.safetensors.index.json`, or a directory holding either (and config.json). Tensors are
 * read one at a time (a quantized layer's parts together), each straight into a device tensor.
 * A damaged or unsupported file answers E_FORMAT naming the file, the tensor and what is wrong;
 * nothing stays allocated on a failure.
 */
export async function loadSafetensors(dev: Device, pathOrDir: string, options?: LoadSafetensorsOptions): Promise<SafetensorsModel> {
  const opts = checkOptions(options, 'options', ['onProgress', 'filter', 'fp8']) as LoadSafetensorsOptions;
  if (typeof pathOrDir !== 'string' || pathOrDir === '') throw new TensorOpsError('E_ARG', `path must be a non-empty string; got ${describe(pathOrDir)}`);
  if (opts.onProgress !== undefined && typeof opts.onProgress !== 'function') throw new TensorOpsError('E_ARG', `options.onProgress must be a function; got ${describe(opts.onProgress)}`);
  if (opts.filter !== undefined && typeof opts.filter !== 'function') throw new TensorOpsError('E_ARG', `options.filter must be a function; got ${describe(opts.filter)}`);
  if (opts.fp8 !== undefined && !['bfloat16', 'float32', 'mxfp8'].includes(opts.fp8)) {
    throw new TensorOpsError('E_ARG', `options.fp8 must be 'bfloat16', 'float32' or 'mxfp8'; got ${describe(opts.fp8)}`);
  }
  if (endianness() !== 'LE') throw new TensorOpsError('E_LOAD', 'safetensors loading needs a little-endian host');

  const where = await locateSafetensors(pathOrDir);
  const config = (await readJsonFile(join(where.dir, 'config.json'), 'config.json')) ?? null;
  const readers = new Map<string, SafetensorsFileReader>();
  const tensors = new Map<string, Tensor | QuantizedTensor>();
  let done = false;
  try {
    const { table, metadata } = await readTables(where, readers);
    const { units, skipped } = plan(table);
    const order = (u: Unit) => [where.files.indexOf(u.parts[0].file), u.parts[0].offset];
    units.sort((a, b) => order(a)[0] - order(b)[0] || order(a)[1] - order(b)[1]);
    const chosen = opts.filter ? units.filter((u) => opts.filter!(u.name)) : units;
    const totalBytes = chosen.reduce((s, u) => s + u.parts.reduce((t, p) => t + p.bytes, 0), 0);
    const report: SafetensorsReport = { files: [...where.files], conversions: [], skipped, bytesRead: 0 };
    const loader = new Loader(dev, config, opts.fp8 ?? 'bfloat16');
    for (const unit of chosen) {
      const data: Uint8Array[] = [];
      for (const p of unit.parts) {
        data.push(await readers.get(p.file)!.read(p.offset, p.bytes, `tensor '${p.name}'`));
        report.bytesRead += p.bytes;
      }
      let made: Made;
      try {
        made = await loader.make(unit, data);
      } catch (err) {
        // The device's checks (shape, block size) on what the file claims: a format error of the file.
        if (err instanceof TensorOpsError && ['E_SHAPE', 'E_ARG', 'E_DTYPE'].includes(err.code)) {
          throw new TensorOpsError('E_FORMAT', `'${unit.parts[0].file}': tensor '${unit.name}': ${err.message}`, { cause: err });
        }
        if (err instanceof RangeError) {
          throw new TensorOpsError('E_OOM', `tensor '${unit.name}': could not allocate its conversion buffers: ${err.message}`, { cause: err });
        }
        throw err;
      }
      tensors.set(unit.name, made.tensor);
      report.conversions.push(made.conversion);
      opts.onProgress?.({ bytesRead: report.bytesRead, totalBytes, tensorsLoaded: tensors.size, tensorsTotal: chosen.length, name: unit.name });
    }
    done = true;
    return { tensors, config, metadata, report };
  } finally {
    for (const r of readers.values()) await r.close();
    if (!done) for (const t of tensors.values()) if (!t.disposed) t.dispose();
  }
}
