// Quantized tensors as ONE Metal tensor with an E8M0 scale plane (issue 3, item 3): the
// backend-neutral rule that decides which weights qualify (native/core/scale_plane.h) and the
// per-tensor report. The MTLTensor itself (native/metal/qtensor.mm) is created only on macOS 27
// at tier tensorops-mx; Linux runs the cpu backend, which keeps every tensor as its planes.
import { beforeAll, describe, expect, it } from 'vitest';
import { open, type Device } from '../lib/index';
import { loadBinding } from '../lib/native';
import { handleOf } from '../lib/tensor';

interface Layout { ok: boolean; reason?: string; dataType?: number; dimensions?: number[]; strides?: number[] }
interface Internal {
  scalePlaneLayout(format: string, block: number, shape: number[], tier: string): Layout;
  quantizedView(q: unknown): string;
}
const internal = (loadBinding() as unknown as { _internal: Internal })._internal;

// Restated from Apple's macOS 27 MTLTensor.h, independently of the C++: MTLTensorDataType raw
// values of the formats that have one, and the bits of one code.
const METAL_TYPE: Record<string, { raw: number; bits: number }> = {
  mxfp8: { raw: 142, bits: 8 },       // MetalFloat8E4M3
  mxfp8_e5m2: { raw: 141, bits: 8 },  // MetalFloat8E5M2
  mxfp4: { raw: 148, bits: 4 },       // MetalFloat4E2M1
};
const FORMATS = ['mxfp8', 'mxfp8_e5m2', 'mxfp6_e3m2', 'mxfp6_e2m3', 'mxfp4', 'mxint8', 'mxint4', 'mxint2', 'affine4', 'affine8'];
const TIERS = ['cpu', 'simdgroup', 'tensorops', 'tensorops-mx'];

// Multi-plane tensors need MSL 4.1 (tensorops-mx); dims[0] a multiple of 32 (format data types,
// and the block factor 32); every stride but the first a multiple of 128 bytes.
function expected(format: string, block: number, k: number, tier: string): boolean {
  const t = METAL_TYPE[format];
  return tier === 'tensorops-mx' && t !== undefined && block === 32 && k % 32 === 0 && ((k * t.bits) / 8) % 128 === 0;
}

describe('scale-plane layout rule', () => {
  it('admits exactly the fp8/fp4 weights whose rows are a multiple of 128 bytes, on tensorops-mx only', () => {
    let admitted = 0;
    for (const tier of TIERS) {
      for (const format of FORMATS) {
        for (const k of [32, 64, 96, 128, 160, 256, 384, 512, 4096, 4128]) {
          const block = format.startsWith('affine') ? 64 : 32;
          if (k % block !== 0) continue;
          const l = internal.scalePlaneLayout(format, block, [3, 5, k], tier);
          expect(l.ok, `${format} K=${k} on ${tier}: ${l.reason ?? ''}`).toBe(expected(format, block, k, tier));
          if (!l.ok) {
            expect(l.reason, 'a refusal says why').toMatch(/tier|format|row|block/);
            continue;
          }
          admitted++;
          // Extents innermost first over the [rows, K] view (leading dimensions folded), strides in
          // elements with strides[0] = 1 (packed fp4 counts elements, not bytes).
          expect(l.dataType).toBe(METAL_TYPE[format].raw);
          expect(l.dimensions).toEqual([k, 15]);
          expect(l.strides).toEqual([1, k]);
        }
      }
    }
    // mxfp8 / e5m2 at K = 128, 256, 384, 512, 4096; mxfp4 at 256, 512, 4096.
    expect(admitted).toBe(5 + 5 + 3);
  });

  it('names the rule a refused tensor breaks', () => {
    expect(internal.scalePlaneLayout('mxfp4', 32, [8, 128], 'tensorops-mx').reason).toBe(
      'a row is 64 bytes, not a multiple of 128');
    expect(internal.scalePlaneLayout('mxfp6_e3m2', 32, [8, 256], 'tensorops-mx').reason).toBe(
      "format 'mxfp6_e3m2' has no Metal tensor data type");
    expect(internal.scalePlaneLayout('mxfp8', 32, [8, 256], 'tensorops').reason).toBe(
      "tier 'tensorops' has no scale planes");
  });
});

describe('quantized tensor device view', () => {
  let dev: Device;
  beforeAll(async () => {
    dev = await open({ backend: 'cpu' });
  });

  it('is the planes on the cpu backend even for a weight the scale-plane rule admits', async () => {
    expect(internal.scalePlaneLayout('mxfp8', 32, [16, 256], 'tensorops-mx').ok).toBe(true);
    const x = dev.tensor(new Float32Array(16 * 256).map((_, i) => Math.sin(i)), [16, 256]);
    const q = await dev.quantize(x, { format: 'mxfp8' });
    expect(internal.quantizedView(q[handleOf])).toBe('buffers');
    const z = dev.fromQuantized({ format: 'mxfp4', shape: [2, 256], codes: new Uint8Array(256), scales: new Uint8Array(16) });
    expect(internal.quantizedView(z[handleOf])).toBe('buffers');
  });
});

// Runs only where open() picks tier tensorops-mx (a macOS 27 Mac whose probe compiled MSL 4.1):
// the metal backend must then hold the admitted weights as one MTLTensor, the others as planes.
describe('quantized tensor device view on tensorops-mx', () => {
  let dev: Device | undefined;
  beforeAll(async () => {
    const d = await open();
    if (d.info.tier === 'tensorops-mx') dev = d;
  });

  it('is one MTLTensor with a scale plane exactly where the layout rule admits it', async (ctx) => {
    if (!dev) return ctx.skip();
    for (const [format, k] of [['mxfp8', 256], ['mxfp8_e5m2', 128], ['mxfp4', 256], ['mxfp4', 128], ['mxfp6_e3m2', 256]] as const) {
      const x = dev.tensor(new Float32Array(4 * k).map((_, i) => Math.cos(i)), [4, k]);
      const q = await dev.quantize(x, { format });
      const want = internal.scalePlaneLayout(format, 32, [4, k], 'tensorops-mx').ok ? 'mtltensor-scale-plane' : 'buffers';
      expect(internal.quantizedView(q[handleOf]), `${format} K=${k}`).toBe(want);
    }
  });
});
