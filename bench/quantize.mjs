// quantize cases: a float32 matrix to mxfp4 / mxfp8 (scales computed, elements rounded, packed).
// onnxruntime has no MX block quantizer: its QuantizeLinear takes precomputed scales, and its
// float8 / int4 outputs cannot come back through onnxruntime-node, so these cases have no peer.
import { quantizeCases } from './cases.mjs';
import { randomFloats, relRms } from './data.mjs';
import { measure } from './timing.mjs';

export const quantizeId = ({ rows, cols, format }) => `quantize ${rows}x${cols} ${format}`;

const ERROR_BOUND = { mxfp4: 0.25, mxfp8: 0.08 };

export async function runQuantize(ctx) {
  const { dev, settings, wanted, log, record } = ctx;
  const out = [];
  for (const c of quantizeCases(ctx.mode)) {
    const id = quantizeId(c);
    if (!wanted(id)) continue;
    log(id);
    const x = randomFloats(c.rows * c.cols, 21, 1);
    const xt = dev.tensor(x, [c.rows, c.cols]);
    const ours = await measure(() => dev.quantize(xt, { format: c.format }), { ...settings, release: (q) => q.dispose(), keepLast: true, sync: () => dev.synchronize() });
    const back = await ours.last.dequantize();
    const err = relRms(await back.toFloat32(), x);
    back.dispose();
    ours.last.dispose();
    delete ours.last;
    xt.dispose();
    out.push(record({
      id, op: 'quantize', phase: null, weights: c.format, shape: { rows: c.rows, cols: c.cols },
      flops: null,
      bytes: c.rows * c.cols * 4,
      bytesWhat: 'float32 input bytes',
      limit: 'bandwidth',
      ours,
      peer: null,
      peerMissing: 'onnxruntime has no MX block quantizer',
      scaling: null,
      check: { reference: 'dequantized result vs the input', relRms: err, bound: ERROR_BOUND[c.format], ok: err <= ERROR_BOUND[c.format] },
    }));
  }
  return out;
}
