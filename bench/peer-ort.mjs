// The peer: onnxruntime-node on the CPU, running one-node models that the bench builds itself
// (with protobufjs). Both are optional peers (peers.mjs): if either cannot be loaded, loadPeer()
// says why and the bench runs our side alone.
import { DataType, buildModel, initializer, valueInfo } from './onnx-model.mjs';
import { loadPeerModule } from './peers.mjs';

/** Which MatMulNBits accuracy_level the targets use: the op's default (0, unset: float32 compute). */
export const ACCURACY_LEVEL = 0;
/**
 * Also timed, as a second peer: accuracy_level 4 (activations quantized to int8 per block), what
 * onnxruntime's model builders set for the CPU, and its fast path for 8-bit weights.
 */
export const ACCURACY_LEVEL_INT8 = 4;

/** { ort, version, path } or { missing: reason, notInstalled? }. */
export function loadPeer() {
  if (process.env.METAL_TENSOROPS_BENCH_NO_PEER) {
    return { missing: 'disabled by METAL_TENSOROPS_BENCH_NO_PEER' };
  }
  const protobuf = loadPeerModule('protobufjs');  // builds the models the peer runs
  if (protobuf.missing) return { missing: protobuf.missing, notInstalled: protobuf.notInstalled };
  const ort = loadPeerModule('onnxruntime-node');
  if (ort.missing) return { missing: ort.missing, notInstalled: ort.notInstalled };
  return { ort: ort.module, version: ort.module.env?.versions?.node ?? ort.version, path: ort.path };
}

export class OrtPeer {
  constructor(ort, threads) {
    this.ort = ort;
    this.threads = threads;
  }

  /**
   * spinning: false turns off the intra-op pool's spin-wait (session.intra_op.allow_spinning = 0).
   * The linear decode loop runs one session per layer, each with its own pool: with spinning on,
   * the pools of the layers just run spin on both cores while the next layer's pool starts, and a
   * loop over 26 sessions ran 2-25x slower than one session (on this 2-core machine). A model's
   * single session has one pool, which never competes with itself; without spinning, each run
   * wakes its pool's threads, as ours does (a condition variable, no spinning).
   */
  async session(modelBytes, { spinning = true } = {}) {
    return this.ort.InferenceSession.create(modelBytes, {
      executionProviders: ['cpu'],
      intraOpNumThreads: this.threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      ...(spinning ? {} : { extra: { session: { intra_op: { allow_spinning: '0' } } } }),
    });
  }

  tensor(type, data, dims) {
    return new this.ort.Tensor(type, data, dims);
  }

  /** y[M, N] = x[M, K] @ W^T: MatMul with W given pre-transposed ([K, N]) as an initializer. */
  async matmul(w, N, K) {
    const wt = new Float32Array(K * N);
    for (let n = 0; n < N; n++) for (let k = 0; k < K; k++) wt[k * N + n] = w[n * K + k];
    const bytes = buildModel({
      node: { op: 'MatMul', inputs: ['x', 'wt'], outputs: ['y'] },
      inputs: [valueInfo('x', DataType.FLOAT, ['M', K])],
      outputs: [valueInfo('y', DataType.FLOAT, ['M', N])],
      initializers: [initializer('wt', DataType.FLOAT, [K, N], wt)],
    });
    return this.#linearRunner(bytes, K);
  }

  /** y = x @ dequant(B)^T with com.microsoft MatMulNBits (nbits.mjs makes the planes). */
  async matmulNBits(q, N, K, accuracyLevel = ACCURACY_LEVEL) {
    const kb = K / q.block;
    const inits = [
      initializer('B', DataType.UINT8, [N, kb, (q.block * q.bits) / 8], q.B),
      initializer('scales', DataType.FLOAT, [N, kb], q.scales),
    ];
    const inputs = ['x', 'B', 'scales'];
    if (q.zeroPoints) {
      inits.push(initializer('zero_points', DataType.UINT8, [N, q.zeroPoints.length / N], q.zeroPoints));
      inputs.push('zero_points');
    }
    const bytes = buildModel({
      node: {
        op: 'MatMulNBits', domain: 'com.microsoft', inputs, outputs: ['y'],
        attrs: { K, N, bits: q.bits, block_size: q.block, accuracy_level: accuracyLevel },
      },
      inputs: [valueInfo('x', DataType.FLOAT, ['M', K])],
      outputs: [valueInfo('y', DataType.FLOAT, ['M', N])],
      initializers: inits,
    });
    return this.#linearRunner(bytes, K);
  }

  /**
   * A session of the model and how to run it. another(options) makes one more session of the same
   * model (options as session()'s): a layer of the decode loop (layer-loop.mjs), which owns its own
   * copy of the weights.
   */
  async #linearRunner(modelBytes, K, options) {
    const session = await this.session(modelBytes, options);
    return {
      session,
      feeds: (x, M) => ({ x: this.tensor('float32', x, [M, K]) }),
      run: async (feeds) => (await session.run(feeds)).y,
      another: (anotherOptions) => this.#linearRunner(modelBytes, K, anotherOptions),
    };
  }

  /**
   * com.microsoft GroupQueryAttention (causal, float32). q/k/v come in our layout [B, H, L, D] and
   * are laid out as the op wants: query [B, Lq, Hq*D], key/value [B, Lnew, Hkv*D], past K/V in
   * BNSH. Prefill (Lq = Lk): no past. Decode (Lq = 1): the first Lk - 1 keys are the past, held in
   * a buffer of Lk rows that is also the present output (past_present_share_buffer, as a KV cache
   * is run), so no copy of the cache is timed.
   */
  async gqa({ B, Hq, Hkv, Lq, Lk, D }) {
    const decode = Lq !== Lk;
    if (decode && Lq !== 1) throw new Error('GQA decode case needs Lq = 1');
    const T = DataType.FLOAT;
    const ins = ['query', 'key', 'value', decode ? 'past_key' : '', decode ? 'past_value' : '', 'seqlens_k', 'total_sequence_length'];
    const graphInputs = [
      valueInfo('query', T, [B, Lq, Hq * D]),
      valueInfo('key', T, [B, Lq, Hkv * D]),
      valueInfo('value', T, [B, Lq, Hkv * D]),
      valueInfo('seqlens_k', DataType.INT32, [B]),
      valueInfo('total_sequence_length', DataType.INT32, []),
    ];
    const outs = [valueInfo('output', T, [B, Lq, Hq * D])];
    if (decode) {
      graphInputs.push(valueInfo('past_key', T, [B, Hkv, Lk, D]), valueInfo('past_value', T, [B, Hkv, Lk, D]));
      outs.push(valueInfo('present_key', T, [B, Hkv, Lk, D]), valueInfo('present_value', T, [B, Hkv, Lk, D]));
    }
    const bytes = buildModel({
      node: {
        op: 'GroupQueryAttention', domain: 'com.microsoft', inputs: ins,
        outputs: ['output', decode ? 'present_key' : '', decode ? 'present_value' : ''].filter((s, i) => i === 0 || s),
        attrs: { num_heads: Hq, kv_num_heads: Hkv, scale: 1 / Math.sqrt(D) },
      },
      inputs: graphInputs,
      outputs: outs,
    });
    const session = await this.session(bytes);
    const ort = this.ort;
    return {
      session,
      /** q [B,Hq,Lq,D], k/v [B,Hkv,Lk,D] (ours) -> feeds (+ fetches for the shared cache). */
      feeds: (q, k, v) => {
        const feeds = {
          query: new ort.Tensor('float32', bsnh(q, B, Hq, Lq, D), [B, Lq, Hq * D]),
          seqlens_k: new ort.Tensor('int32', new Int32Array(B).fill(Lk - 1), [B]),
          total_sequence_length: new ort.Tensor('int32', Int32Array.of(Lk), []),
        };
        if (!decode) {
          feeds.key = new ort.Tensor('float32', bsnh(k, B, Hkv, Lk, D), [B, Lk, Hkv * D]);
          feeds.value = new ort.Tensor('float32', bsnh(v, B, Hkv, Lk, D), [B, Lk, Hkv * D]);
          return { feeds, fetches: null };
        }
        // The new token is key row Lk - 1; the cache buffer holds all Lk rows (the last one is
        // overwritten with the same values by the op).
        feeds.key = new ort.Tensor('float32', rowsAt(k, B, Hkv, Lk, D, Lk - 1), [B, 1, Hkv * D]);
        feeds.value = new ort.Tensor('float32', rowsAt(v, B, Hkv, Lk, D, Lk - 1), [B, 1, Hkv * D]);
        const pastK = new ort.Tensor('float32', Float32Array.from(k), [B, Hkv, Lk, D]);
        const pastV = new ort.Tensor('float32', Float32Array.from(v), [B, Hkv, Lk, D]);
        feeds.past_key = pastK;
        feeds.past_value = pastV;
        return { feeds, fetches: { output: null, present_key: pastK, present_value: pastV } };
      },
      run: async ({ feeds, fetches }) => {
        const r = fetches ? await session.run(feeds, fetches) : await session.run(feeds);
        return r.output;
      },
      /** The op's output [B, Lq, Hq*D] in our layout [B, Hq, Lq, D]. */
      toOurs: (out) => bnsh(out.data, B, Hq, Lq, D),
    };
  }
}

/** [B, H, L, D] -> [B, L, H*D]. */
function bsnh(x, B, H, L, D) {
  const out = new Float32Array(x.length);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let l = 0; l < L; l++) {
    out.set(x.subarray(((b * H + h) * L + l) * D, ((b * H + h) * L + l + 1) * D), ((b * L + l) * H + h) * D);
  }
  return out;
}

/** [B, L, H*D] -> [B, H, L, D]. */
function bnsh(x, B, H, L, D) {
  const out = new Float32Array(x.length);
  for (let b = 0; b < B; b++) for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) {
    out.set(x.subarray(((b * L + l) * H + h) * D, ((b * L + l) * H + h + 1) * D), ((b * H + h) * L + l) * D);
  }
  return out;
}

/** Row `l` of every head of [B, H, L, D], as [B, 1, H*D]. */
function rowsAt(x, B, H, L, D, l) {
  const out = new Float32Array(B * H * D);
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) {
    out.set(x.subarray(((b * H + h) * L + l) * D, ((b * H + h) * L + l + 1) * D), (b * H + h) * D);
  }
  return out;
}
