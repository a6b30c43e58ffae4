// A mixture-of-experts MLP (qwen3moe): the router picks k experts per token, the chosen rows run
// through their experts with groupedLinear, and each token sums its experts' outputs weighted by
// the router's probabilities renormalised over the chosen k (softmax over the k largest logits
// equals the renormalised top-k of the softmax). Everything stays on the device: groupRows sorts
// the (token, slot) choices by expert, embedding gathers the rows in that order and puts the
// experts' outputs back, and one batched matmul weights and sums each token's k outputs.
import type { Tensor } from '../../tensor';
import type { LayerWeights } from '../weights';
import type { ForwardContext, Scratch } from './decoder';

export function expertsForward(c: ForwardContext, s: Scratch, w: LayerWeights, m: Tensor): Tensor {
  const { dev, config, activations } = c;
  const L = m.shape[0];
  const k = config.expertsUsed;
  const logits = s.keep(dev.linear(m, w.router!, { activations }));
  const top = dev.topK(logits, k);
  s.keep(top.values); s.keep(top.indices);
  const gates = s.keep(dev.softmax(top.values));  // [L, k]
  const { sizes, rows, positions } = dev.groupRows(top.indices, config.experts);
  s.keep(sizes); s.keep(rows); s.keep(positions);
  const xg = s.keep(dev.embedding(m, rows));  // [L*k, width], grouped by expert
  const gate = s.keep(dev.groupedLinear(xg, w.gateExperts!, sizes, { activations }));
  const up = s.keep(dev.groupedLinear(xg, w.upExperts!, sizes, { activations }));
  const y = s.keep(dev.groupedLinear(s.keep(dev.swiglu(gate, up)), w.downExperts!, sizes, { activations }));
  // Back to (token, slot) order: [L, k, width]; then gates [L, 1, k] @ that = the weighted sum.
  const back = s.keep(dev.embedding(y, positions));
  return s.keep(dev.matmul(gates.reshape([L, 1, k]), back)).reshape([L, config.width]);
}
