// Self-test checks of the float32-accumulating ops: linear (dense, float16, every quantized
// weight format, quantized x), matmul and attention (plain, causal, GQA, masked, decode over many
// keys, float16, mxfp8 K/V), each within the reference's error bound (reference/ops.ts).
import type { Format } from '../../types';
import { fromHalfBits, toHalfBits } from '../reference/elements';
import { attentionRef, linearRef, matmulRef, storedAsHalf, type AttentionDims } from '../reference/ops';
import { isMx, quantizeRef, weightMagnitudes } from '../reference/quantize';
import type { Check } from './check';
import { all, within } from './compare';
import { randn, rng, uniform } from './data';
import { FORMATS } from './formats-checks';

const K = 256, N = 100;  // N off every tile size, so the ragged edges run too
/** Rows of x: 1 (a decode, the gemv path) and 19 (a prefill, the gemm path). */
const MS = [1, 19];

/** float32 values rounded to float16, as dev.tensor(..., 'float16') stores them. */
const roundedToHalf = (x: Float32Array) => Float32Array.from(x, (v) => fromHalfBits(toHalfBits(v)));

function linearDense(dtype: 'float32' | 'float16'): Check {
  return {
    name: dtype === 'float32' ? 'linear float32 + bias' : 'linear float16',
    async run({ dev, read }) {
      const w = uniform(N * K, 31);
      const bias = dtype === 'float32' ? uniform(N, 32) : undefined;
      const outcomes = [];
      for (const M of MS) {
        const x = uniform(M * K, 33 + M);
        const y = await dev.linear(dev.tensor(x, [M, K], dtype), dev.tensor(w, [N, K], dtype),
          bias ? { bias: dev.tensor(bias, [N]) } : {});
        if (dtype === 'float32') {
          outcomes.push(within(`y (M=${M})`, read(await y.toFloat32()), linearRef(x, w, M, N, K, { bias })));
        } else {  // inputs as stored, the output rounded to float16 once more
          const ref = storedAsHalf(linearRef(roundedToHalf(x), roundedToHalf(w), M, N, K));
          const got = Float32Array.from(read(await y.data() as Uint16Array), fromHalfBits);
          outcomes.push(within(`y (M=${M})`, got, ref));
        }
      }
      return all(...outcomes);
    },
  };
}

/** Group sizes for affine weights in linear: both ends of the accepted ones. */
const linearBlock = (format: Format) => (isMx(format) ? 32 : format === 'affine4' ? 32 : 128);

function linearQuantized(format: Format): Check {
  return {
    name: `linear ${format}`,
    async run({ dev, read }) {
      const w = uniform(N * K, 41);
      const block = linearBlock(format);
      const ref = quantizeRef(format, w, K, block);
      const wq = await dev.quantize(dev.tensor(w, [N, K]), { format, blockSize: block });
      const outcomes = [];
      for (const M of MS) {
        const x = uniform(M * K, 42 + M);
        const y = await dev.linear(dev.tensor(x, [M, K]), wq);
        const want = linearRef(x, ref.values, M, N, K, { wMagnitude: weightMagnitudes(ref) });
        outcomes.push(within(`y (M=${M})`, read(await y.toFloat32()), want));
      }
      return all(...outcomes);
    },
  };
}

const linearBothQuantized: Check = {
  name: 'linear mxfp8 x, mxfp4 w',
  async run({ dev, read }) {
    const M = 3;
    const x = uniform(M * K, 51), w = uniform(N * K, 52);
    const xq = await dev.quantize(dev.tensor(x, [M, K]), { format: 'mxfp8' });
    const wq = await dev.quantize(dev.tensor(w, [N, K]), { format: 'mxfp4' });
    const want = linearRef(quantizeRef('mxfp8', x, K).values, quantizeRef('mxfp4', w, K).values, M, N, K);
    return within('y', read(await (await dev.linear(xq, wq)).toFloat32()), want);
  },
};

const matmul: Check = {
  name: 'matmul (batched a, shared b)',
  async run({ dev, read }) {
    const [batch, M, Kb, Nb] = [2, 17, 96, 40];
    const a = uniform(batch * M * Kb, 61), b = uniform(Kb * Nb, 62);
    const c = await dev.matmul(dev.tensor(a, [batch, M, Kb]), dev.tensor(b, [Kb, Nb]));
    return within('c', read(await c.toFloat32()), matmulRef(a, b, batch, M, Kb, Nb));
  },
};

interface AttentionCase {
  name: string;
  dims: AttentionDims;
  causal?: boolean;
  /** A bool mask [Lq, Lk], with one row that sees no key. */
  mask?: boolean;
  dtype?: 'float16';
  kv?: 'mxfp8';
}

const ATTENTION: AttentionCase[] = [
  { name: 'attention', dims: { B: 2, Hq: 4, Hkv: 4, Lq: 33, Lk: 70, D: 64 } },
  { name: 'attention causal', dims: { B: 1, Hq: 4, Hkv: 4, Lq: 20, Lk: 90, D: 64 }, causal: true },
  { name: 'attention GQA', dims: { B: 1, Hq: 8, Hkv: 2, Lq: 16, Lk: 64, D: 64 }, causal: true },
  { name: 'attention bool mask', dims: { B: 1, Hq: 2, Hkv: 1, Lq: 12, Lk: 40, D: 32 }, mask: true },
  { name: 'attention decode (600 keys)', dims: { B: 1, Hq: 8, Hkv: 2, Lq: 1, Lk: 600, D: 128 } },
  { name: 'attention float16', dims: { B: 1, Hq: 4, Hkv: 2, Lq: 24, Lk: 48, D: 64 }, causal: true, dtype: 'float16' },
  { name: 'attention mxfp8 K/V (decode)', dims: { B: 1, Hq: 8, Hkv: 2, Lq: 1, Lk: 300, D: 64 }, kv: 'mxfp8' },
  { name: 'attention mxfp8 K/V (prefill)', dims: { B: 1, Hq: 4, Hkv: 2, Lq: 24, Lk: 96, D: 64 }, causal: true, kv: 'mxfp8' },
];

function attention(c: AttentionCase): Check {
  return {
    name: c.name,
    async run({ dev, read }) {
      const { B, Hq, Hkv, Lq, Lk, D } = c.dims;
      const q = randn(B * Hq * Lq * D, 71), k = randn(B * Hkv * Lk * D, 72), v = randn(B * Hkv * Lk * D, 73);
      const qShape = [B, Hq, Lq, D], kvShape = [B, Hkv, Lk, D];
      let mask: Uint8Array | undefined;
      if (c.mask) {
        const r = rng(74);
        mask = Uint8Array.from({ length: Lq * Lk }, () => Number(r() < 0.6));
        mask.fill(0, 3 * Lk, 4 * Lk);  // row 3 sees no key: zeros
      }
      const options = { causal: c.causal, ...(mask ? { mask: dev.tensor(mask, [Lq, Lk], 'bool') } : {}) };
      const dtype = c.dtype ?? 'float32';
      let kIn, vIn, kRef: ArrayLike<number> = k, vRef: ArrayLike<number> = v;
      if (c.kv === 'mxfp8') {
        kIn = await dev.quantize(dev.tensor(k, kvShape), { format: 'mxfp8' });
        vIn = await dev.quantize(dev.tensor(v, kvShape), { format: 'mxfp8' });
        kRef = quantizeRef('mxfp8', k, D).values;
        vRef = quantizeRef('mxfp8', v, D).values;
      } else {
        kIn = dev.tensor(k, kvShape, dtype);
        vIn = dev.tensor(v, kvShape, dtype);
      }
      const o = await dev.attention(dev.tensor(q, qShape, dtype), kIn, vIn, options);
      if (dtype === 'float16') {
        const ref = storedAsHalf(attentionRef(roundedToHalf(q), roundedToHalf(k), roundedToHalf(v), c.dims, { causal: c.causal, mask }));
        return within('o', Float32Array.from(read(await o.data() as Uint16Array), fromHalfBits), ref);
      }
      return within('o', read(await o.toFloat32()), attentionRef(q, kRef, vRef, c.dims, { causal: c.causal, mask }));
    },
  };
}

export const opChecks: Check[] = [
  linearDense('float32'),
  linearDense('float16'),
  ...FORMATS.map(linearQuantized),
  linearBothQuantized,
  matmul,
  ...ATTENTION.map(attention),
];
