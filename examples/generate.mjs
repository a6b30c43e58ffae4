// Load a GGUF model and stream its text: `node examples/generate.mjs [model.gguf] [prompt]`.
// Without a model file it writes a small random-weight one first (llama architecture, Q8_0,
// a SentencePiece vocabulary), so it runs anywhere: the text is gibberish, the path is the real one
// (GGUF parsing, weights mapped to our formats, tokenizer, forward passes with a KV cache on the
// device, sampling on the device, streaming decode).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel, open, writeSyntheticModel } from 'metal-tensorops';

let [path, prompt = 'Once upon a time'] = process.argv.slice(2);
let dir = null;
if (!path) {
  dir = mkdtempSync(join(tmpdir(), 'mto-example-'));
  path = join(dir, 'tiny-llama-q8_0.gguf');
  writeSyntheticModel(path, { arch: 'llama', vocab: 4096, width: 256, layers: 4, heads: 8, kvHeads: 2, ff: 768, type: 'Q8_0' });
  console.log(`(no model given: wrote a random-weight one to ${path})`);
}

const dev = await open();
const model = await loadModel(dev, path, {
  onProgress: (loaded, total) => process.stderr.write(`\rloading ${Math.round((100 * loaded) / total)}%`),
});
process.stderr.write('\r');
console.log(`${model.config.arch}: ${model.config.layers} layers, width ${model.config.width}, vocabulary ${model.config.vocab}; ` +
  `${dev.info.backend} backend${model.conversions.length ? `, ${model.conversions.length} tensors converted` : ''}`);

const ids = model.tokenizer.encode(prompt);
const decoder = model.tokenizer.decoder();
const abort = new AbortController();
process.once('SIGINT', () => abort.abort());   // Ctrl-C stops the generation cleanly
process.stdout.write(prompt);
const started = performance.now();
const out = await model.generate(ids, {
  maxTokens: 48, temperature: 0.8, topK: 40, topP: 0.95, seed: 42, signal: abort.signal,
  onToken: (id) => process.stdout.write(decoder.push(id)),
});
process.stdout.write(`${decoder.flush()}\n`);
console.log(`${out.length} tokens in ${((performance.now() - started) / 1000).toFixed(2)} s (prompt ${ids.length} tokens)`);

model.dispose();
await dev.close();
if (dir) rmSync(dir, { recursive: true, force: true });
