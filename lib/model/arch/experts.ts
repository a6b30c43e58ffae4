// A mixture-of-experts MLP (qwen3moe): the router picks k experts per token, the chosen rows run
// through their experts with groupedLinear, and each token sums its experts' outputs weighted by
// the router's probabilities renormalised over the chosen k (softmax over the k largest logits
// equals the renormalised top-k of the softmax).
import type { Tensor } from '../../tensor';
import type { LayerWeights } from '../weights';
import type { ForwardContext, Scratch } from './decoder';

export async function expertsForward(c: ForwardContext, s: Scratch, w: LayerWeights, m: Tensor): Promise<Tensor> {
  const { dev, config, activations } = c;
  const L = m.shape[0];
  const k = config.expertsUsed;
  const E = config.experts;
  const logits = s.keep(dev.linear(m, w.router!, { activations }));
  const top = dev.topK(logits, k);
  s.keep(top.values); s.keep(top.indices);
  const gates = s.keep(dev.softmax(top.values));  // [L, k]
  // The rows for each expert, in expert order: read the choices (the one trip to the host of a
  // forward pass; grouping on the device needs a sort op this package does not have yet).
  const chosen = await top.indices.data() as Int32Array;
  const sizes = new Int32Array(E);
  for (const e of chosen) sizes[e]++;
  const start = new Int32Array(E);
  for (let e = 1; e < E; e++) start[e] = start[e - 1] + sizes[e - 1];
  const rowOf = new Int32Array(L * k);   // grouped row -> token
  const slotRow = new Int32Array(L * k); // (token, slot) -> grouped row
  const fill = start.slice();
  for (let i = 0; i < L * k; i++) {
    const r = fill[chosen[i]]++;
    rowOf[r] = Math.floor(i / k);
    slotRow[i] = r;
  }
  const groups = s.keep(dev.tensor(sizes, [E], 'int32'));
  const xg = s.keep(dev.embedding(m, s.keep(dev.tensor(rowOf, [L * k], 'int32'))));
  const gate = s.keep(dev.groupedLinear(xg, w.gateExperts!, groups, { activations }));
  const up = s.keep(dev.groupedLinear(xg, w.upExperts!, groups, { activations }));
  const y = s.keep(dev.groupedLinear(s.keep(dev.swiglu(gate, up)), w.downExperts!, groups, { activations }));  // [L*k, width]
  // Back to (token, slot) order, weighted, summed over the slots.
  const back = s.keep(dev.embedding(y, s.keep(dev.tensor(slotRow, [L * k], 'int32'))));
  const weighted = s.keep(dev.mul(back.reshape([L, k, config.width]), gates.reshape([L, k, 1])));
  let sum = s.keep(dev.slice(weighted, { axis: 1, start: 0, end: 1 }));
  for (let j = 1; j < k; j++) sum = s.keep(dev.add(sum, s.keep(dev.slice(weighted, { axis: 1, start: j, end: j + 1 }))));
  return sum.reshape([L, config.width]);
}
