// A mixture-of-experts MLP (qwen3moe, gpt-oss): the router picks k experts per token, the chosen
// rows run through their experts with groupedLinear, and each token sums its experts' outputs
// weighted by the softmax over the k largest router logits (qwen3moe renormalises the top k of the
// softmax, gpt-oss takes the softmax after top-k: the same numbers). Everything stays on the
// device: groupRows sorts the (token, slot) choices by expert, embedding gathers the rows in that
// order and puts the experts' outputs back, and one batched matmul weights and sums each token's
// k outputs. gpt-oss adds a bias to the router's logits and to each expert's three projections,
// and gates with its clamped SwiGLU (config.swiglu).
import type { Tensor } from '../../tensor';
import type { LayerWeights } from '../weights';
import type { ForwardContext, Scratch } from './decoder';

export function expertsForward(c: ForwardContext, s: Scratch, w: LayerWeights, m: Tensor): Tensor {
  const { dev, config, activations } = c;
  const L = m.shape[0];
  const k = config.expertsUsed;
  const logits = s.keep(dev.linear(m, w.router!, { activations, ...(w.routerBias ? { bias: w.routerBias } : {}) }));
  const top = dev.topK(logits, k);
  s.keep(top.values); s.keep(top.indices);
  const gates = s.keep(dev.softmax(top.values));  // [L, k]
  const { sizes, rows, positions } = dev.groupRows(top.indices, config.experts);
  s.keep(sizes); s.keep(rows); s.keep(positions);
  const xg = s.keep(dev.embedding(m, rows));  // [L*k, width], grouped by expert
  let gate = s.keep(dev.groupedLinear(xg, w.gateExperts!, sizes, { activations }));
  let up = s.keep(dev.groupedLinear(xg, w.upExperts!, sizes, { activations }));
  if (w.gateExpertsBias && w.upExpertsBias) {
    const grouped = inGroupedOrder(c, s, top.indices, positions);
    gate = s.keep(dev.add(gate, grouped(w.gateExpertsBias)));
    up = s.keep(dev.add(up, grouped(w.upExpertsBias)));
  }
  const act = s.keep(config.swiglu ? dev.swiglu(gate, up, config.swiglu) : dev.swiglu(gate, up));
  const y = s.keep(dev.groupedLinear(act, w.downExperts!, sizes, { activations }));
  // Back to (token, slot) order: [L, k, width]; then gates [L, 1, k] @ that = the weighted sum.
  let back = s.keep(dev.embedding(y, positions));
  // The down projection's bias joins in (token, slot) order: row (t, j) is expert ids[t, j]'s.
  if (w.downExpertsBias) back = s.keep(dev.add(back, s.keep(dev.embedding(w.downExpertsBias, top.indices))));
  return s.keep(dev.matmul(gates.reshape([L, 1, k]), back)).reshape([L, config.width]);
}

/**
 * A gatherer of per-expert rows (a bias table [E, n]) in groupRows' order, row r being the
 * expert of the r-th grouped row. `positions` maps each (token, slot) to its grouped row: a
 * permutation of [0, L*k), so groupRows of it (one group per row) gives its inverse, the (token,
 * slot) of each grouped row. Gathering the bias rows by ids in (token, slot) order and then by
 * that inverse puts them in grouped order, all on the device.
 */
function inGroupedOrder(c: ForwardContext, s: Scratch, ids: Tensor, positions: Tensor): (table: Tensor) => Tensor {
  const { dev } = c;
  const n = ids.shape[0] * ids.shape[1];
  const inverse = dev.groupRows(positions.reshape([n]), Math.max(n, 1));
  s.keep(inverse.sizes); s.keep(inverse.rows); s.keep(inverse.positions);
  return (table) => {
    const bySlot = s.keep(dev.embedding(table, ids)).reshape([n, table.shape[1]]);
    return s.keep(dev.embedding(bySlot, inverse.rows));
  };
}
