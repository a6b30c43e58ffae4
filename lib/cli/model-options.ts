// The options the model commands (run, logits, bench <model>) share: opening the device, loading
// the model with a progress line, and the checks of their numeric options.
import { open } from '../index';
import type { Device } from '../device';
import { loadModel, type LoadedModel } from '../model/load';
import { DEVICE_OPTIONS, UsageError, backendOption, threadsOption } from './command';
import { Progress } from './progress';

export const MODEL_OPTIONS = { ...DEVICE_OPTIONS, context: { type: 'string' }, activations: { type: 'string' } } as const;

export const MODEL_USAGE = `  --context N                KV cache positions (default min(4096, the model's context))
  --activations int8         quantize the projections' inputs to 8 bits, as llama.cpp (faster; default float32)`;

/** A numeric option's value, checked against [min, max] (integers only when asked). */
export function numberOption(name: string, value: unknown, min: number, max: number, integer: boolean): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (typeof value !== 'string' || value.trim() === '' || !Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
    throw new UsageError(`--${name} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}; got '${String(value)}'`);
  }
  return n;
}

/** The model (a GGUF file or a Hugging Face folder, as loadModel takes): the one positional argument. */
export function modelPath(positionals: string[]): string {
  if (positionals.length !== 1) throw new UsageError(`give one model (a .gguf file or a Hugging Face model folder); got ${positionals.length === 0 ? 'none' : positionals.join(' ')}`);
  return positionals[0];
}

/** Opens the device and loads the model, with a progress line on a terminal. */
export async function openModel(values: Record<string, unknown>, path: string, extraContext = 0): Promise<{ dev: Device; model: LoadedModel }> {
  const dev = await open({ backend: backendOption(values.backend), ...(values.threads ? { threads: threadsOption(values.threads) } : {}) });
  const progress = new Progress(process.stderr);
  const context = numberOption('context', values.context, 1, 1 << 24, true);
  const activations = values.activations;
  if (activations !== undefined && activations !== 'float32' && activations !== 'int8') {
    throw new UsageError(`--activations must be float32 or int8; got '${String(activations)}'`);
  }
  try {
    const model = await loadModel(dev, path, {
      ...(context ? { contextSize: context + extraContext } : {}),
      ...(activations ? { activations } : {}),
      onProgress: (loaded, total) => progress.status(`loading ${path}: ${Math.round((100 * loaded) / Math.max(total, 1))}%`),
    });
    progress.clear();
    return { dev, model };
  } catch (err) {
    progress.clear();
    await dev.close();
    throw err;
  }
}
