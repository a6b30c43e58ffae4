// `metal-tensorops logits <model> --tokens 1,2,3 --top 20 --json`: the log-probabilities of the
// most likely next tokens after the given ones (the last position), for scripts that compare
// models or implementations.
import { UsageError, DEVICE_USAGE, type Command } from '../command';
import { MODEL_OPTIONS, MODEL_USAGE, modelPath, numberOption, openModel } from '../model-options';

export const logits: Command = {
  name: 'logits',
  summary: "the next token's top log-probabilities after token ids or text (--json for scripts)",
  usage: `usage: metal-tensorops logits <model.gguf | folder> (--tokens 1,2,3 | --text TEXT) [--top N] [--json]
  --tokens IDS               comma-separated token ids
  --text TEXT                text, tokenized with the model's tokenizer (with its BOS)
  --top N                    how many tokens to list (default 20)
  --json                     print { tokens, top: [{ id, logprob, piece }] }
${MODEL_USAGE}
${DEVICE_USAGE}`,
  options: { tokens: { type: 'string' }, text: { type: 'string' }, top: { type: 'string' }, json: { type: 'boolean' }, ...MODEL_OPTIONS },
  positionals: true,
  async run({ values, positionals }) {
    const path = modelPath(positionals);
    if ((values.tokens === undefined) === (values.text === undefined)) throw new UsageError('give --tokens or --text (one of them)');
    let given: number[] | null = null;
    if (typeof values.tokens === 'string') {
      given = values.tokens.split(',').map((s) => {
        if (!/^\s*\d+\s*$/.test(s)) throw new UsageError(`--tokens must be comma-separated token ids; got '${values.tokens}'`);
        return Number(s);
      });
    }
    const top = numberOption('top', values.top, 1, 1 << 20, true) ?? 20;
    const { dev, model } = await openModel(values, path);
    try {
      const ids = given ?? Array.from(model.tokenizer.encode(String(values.text), { addSpecial: true }));
      const cache = model.createCache({ contextSize: Math.min(model.config.context, Math.max(ids.length, 1)) });
      const row = await (await model.forward(ids, cache)).toFloat32();
      cache.dispose();
      let max = -Infinity;
      for (const v of row) max = Math.max(max, v);
      let z = 0;
      for (const v of row) z += Math.exp(v - max);
      const lse = max + Math.log(z);
      const order = Array.from(row.keys()).sort((a, b) => row[b] - row[a]).slice(0, Math.min(top, row.length));
      const list = order.map((id) => ({ id, logprob: row[id] - lse, piece: model.tokenizer.decode([id]) }));
      if (values.json) console.log(JSON.stringify({ tokens: ids, top: list }, null, 2));
      else for (const t of list) console.log(`${String(t.id).padStart(8)}  ${t.logprob.toFixed(5).padStart(10)}  ${JSON.stringify(t.piece)}`);
      return 0;
    } finally {
      model.dispose();
      await dev.close();
    }
  },
};
