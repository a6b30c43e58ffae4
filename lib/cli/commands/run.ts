// `metal-tensorops run <model.gguf | folder> -p "..." -n 64`: streams the model's continuation of a prompt, then
// prints the prompt's and the generation's tokens/s (on stderr, so stdout holds only the text).
import { DEVICE_USAGE, type Command } from '../command';
import { MODEL_OPTIONS, MODEL_USAGE, modelPath, numberOption, openModel } from '../model-options';

export const run: Command = {
  name: 'run',
  summary: 'generate text from a model (GGUF file or Hugging Face folder): metal-tensorops run model.gguf -p "Once upon a time" -n 64',
  usage: `usage: metal-tensorops run <model.gguf | folder> -p PROMPT [-n N] [--temperature T] [--top-k K] [--top-p P] [--seed S]
  -p, --prompt TEXT          the prompt
  -n, --tokens N             tokens to generate at most (default 64)
  --temperature T            0 (default) picks the most likely token
  --top-k K, --top-p P       sample from the K most likely / the smallest set reaching P
  --seed S                   the same seed gives the same text (default 0)
${MODEL_USAGE}
${DEVICE_USAGE}`,
  options: {
    prompt: { type: 'string', short: 'p' },
    tokens: { type: 'string', short: 'n' },
    temperature: { type: 'string' },
    'top-k': { type: 'string' },
    'top-p': { type: 'string' },
    seed: { type: 'string' },
    ...MODEL_OPTIONS,
  },
  positionals: true,
  async run({ values, positionals }) {
    const path = modelPath(positionals);
    const prompt = typeof values.prompt === 'string' ? values.prompt : '';
    const maxTokens = numberOption('tokens', values.tokens, 0, 1 << 20, true) ?? 64;
    const sampling = {
      temperature: numberOption('temperature', values.temperature, 0, 100, false) ?? 0,
      topK: numberOption('top-k', values['top-k'], 0, 1 << 20, true) ?? 0,
      topP: numberOption('top-p', values['top-p'], 0, 1, false) ?? 1,
      seed: numberOption('seed', values.seed, 0, 2 ** 32 - 1, true) ?? 0,
    };
    const { dev, model } = await openModel(values, path, maxTokens);
    try {
      const ids = model.tokenizer.encode(prompt, { addSpecial: true });
      const decoder = model.tokenizer.decoder();
      process.stdout.write(prompt);
      const started = performance.now();
      let firstAt = 0;
      const out = await model.generate(ids, {
        ...sampling, maxTokens,
        onToken: (id) => {
          if (!firstAt) firstAt = performance.now();
          process.stdout.write(decoder.push(id));
        },
      });
      const ended = performance.now();
      process.stdout.write(`${decoder.flush()}\n`);
      // The first token needs the whole prompt's forward pass: that time is the prompt's.
      const promptMs = firstAt - started;
      const genMs = ended - firstAt;
      console.error(`prompt: ${ids.length} tokens, ${(ids.length / promptMs * 1e3).toFixed(1)} tokens/s; ` +
        `generation: ${out.length} tokens, ${out.length > 1 ? ((out.length - 1) / genMs * 1e3).toFixed(1) : '-'} tokens/s ` +
        `(${dev.info.backend}, ${dev.info.threads ?? ''} threads)`);
      return 0;
    } finally {
      model.dispose();
      await dev.close();
    }
  },
};
