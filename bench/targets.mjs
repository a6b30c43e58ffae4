// The targets of issue 6, attached to the cases they apply to. A target reads one number of the
// case (fraction of the machine's limit, ratio to the peer, scaling, latency) and a goal.

const QUANTIZED = new Set(['mxfp4', 'mxfp8', 'mxint8', 'affine4']);

function target(what, value, op, goal) {
  const met = value === null || value === undefined ? null : op === '>=' ? value >= goal : value <= goal;
  return { what, goal: `${op} ${goal}`, value: value ?? null, met };
}

/** Targets that apply to `c` (a finished case record), given the run's thread count. */
export function targetsFor(c, threads) {
  const t = [];
  const frac = c.fractionOfLimit;
  const ratio = c.ratio ?? null;
  if (c.op === 'linear') {
    if (c.weights === 'float32' && c.phase === 'prefill') {
      t.push(target('fraction of FMA peak', frac, '>=', 0.7), target('speed vs onnxruntime MatMul', ratio, '>=', 0.9));
    } else if (QUANTIZED.has(c.weights) && c.phase === 'decode') {
      t.push(target('fraction of read bandwidth (weight bytes)', frac, '>=', 0.6), target('speed vs onnxruntime MatMulNBits', ratio, '>=', 1.0));
    } else if (QUANTIZED.has(c.weights) && c.phase === 'prefill') {
      t.push(target('fraction of FMA peak', frac, '>=', 0.5), target('speed vs onnxruntime MatMulNBits', ratio, '>=', 1.0));
    }
  } else if (c.op === 'attention') {
    if (c.phase === 'prefill') {
      t.push(target('fraction of FMA peak', frac, '>=', 0.5), target('speed vs onnxruntime GroupQueryAttention', ratio, '>=', 1.0));
    } else if (!c.shape?.kv) {  // issue 6 sets targets for float32 K/V only
      t.push(target('fraction of read bandwidth (K/V bytes)', frac, '>=', 0.5));
    }
  } else if (c.op === 'model' && !(c.shape?.rows === 1)) {
    // Issue 25: the memory-bound ops at >= 60% of the read bandwidth (a 1-row softmax is latency).
    t.push(target('fraction of read bandwidth (bytes read and written)', frac, '>=', 0.6));
  } else if (c.op === 'overhead' && c.phase === 'inline') {
    t.push(target('median call-to-resolved-Promise time (us)', Math.round(c.ours.medianMs * 1e4) / 10, '<=', 20));
  }
  if (c.scaling && threads > 1) {
    // Issue 6: 2 threads >= 1.8x one thread; with more threads, the same 90% efficiency.
    t.push(target(`speedup of ${threads} threads over 1`, c.scaling.speedup, '>=', Math.round(0.9 * threads * 100) / 100));
  }
  return t;
}
