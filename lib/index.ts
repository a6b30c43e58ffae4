// metal-tensorops: quantized tensors, quantized matmul and FlashAttention for Node.js.
import { backendRequest, deviceInfo } from './backend';
import { Device } from './device';
import { TensorOpsError, awaitNative, callNative } from './errors';
import { loadBinding } from './native';
import type { OpenOptions } from './types';
import { checkOptions, describe } from './validate';

export { Device } from './device';
export { TensorOpsError, type ErrorCode } from './errors';
export { decodeElements, encodeElements, formats, type FormatSpec } from './formats';
export { QuantizedTensor, Tensor } from './tensor';
export type { UserKernel } from './kernels/user-kernel';
export { loadSafetensors, type SafetensorsModel } from './loaders/safetensors/tensors';
export { inspectSafetensors, type SafetensorsInfo } from './loaders/safetensors/parse';
export { writeSafetensors, type SafetensorsWriteTensor } from './loaders/safetensors/write';
export type {
  LoadSafetensorsOptions, SafetensorsConversion, SafetensorsDType, SafetensorsProgress, SafetensorsReport,
  SafetensorsTensorInfo,
} from './loaders/safetensors/types';
export {
  SUPPORTED_PRE_TYPES, Tokenizer, tokenizerDataFromGguf, tokenizerDataFromHf, tokenizerFromGgufMetadata, tokenizerFromHf,
  type DecodeOptions, type EncodeOptions, type HfTokenizerFiles, type HfTokenizerOptions, type TokenizerData,
  type TokenStreamDecoder,
} from './tokenizer/index';
// GGUF (llama.cpp's weights format): read the header and metadata, load the tensors onto a device,
// write files, and ggml's block codecs (to make or check files).
export { readGgufInfo } from './loaders/gguf/parse';
export {
  loadGgufTensors, type GgufConversion, type GgufLoadOptions, type GgufProgress, type GgufTensors,
} from './loaders/gguf/tensors';
export { writeGguf, type GgufScalarType, type GgufWriteTensor, type GgufWriteValue } from './loaders/gguf/write';
export { decodeGgml, encodeGgml, type GgmlDecodable, type GgmlEncodable } from './loaders/gguf/blocks';
export type { GgmlTypeName, GgufFile, GgufTensorInfo, GgufTypedArray, GgufValue } from './loaders/gguf/types';
// Models: a decoder (llama, mistral, qwen2, qwen3, qwen3moe) from a GGUF file or a Hugging Face folder, on a device.
export { loadModel, type LoadModelOptions, type LoadedModel } from './model/load';
export { Model, type ForwardOptions, type GenerateOptions } from './model/model';
export { KVCache, type CacheDtype, type CacheOptions } from './model/kv-cache';
export { ARCHITECTURES, type Architecture, type ModelConfig } from './model/config';
export { writeSyntheticModel, type SyntheticModelSpec } from './model/synthetic';
export type * from './types';

/** Opens the best device for this machine (or the one asked for). */
export async function open(options: OpenOptions = {}): Promise<Device> {
  const opts = checkOptions(options, 'options', ['backend', 'threads']) as OpenOptions;
  const threads = opts.threads ?? 0;  // 0: one per hardware thread
  if (opts.threads !== undefined && (!Number.isInteger(threads) || threads < 1 || threads > 1024)) {
    throw new TensorOpsError('E_ARG', `options.threads must be an integer from 1 to 1024; got ${describe(opts.threads)}`);
  }
  const request = backendRequest(opts);
  const binding = loadBinding();
  // The backend is chosen and made off the JS thread (Metal compiles its tier probes there).
  const opened = await awaitNative(() => binding.openDevice(threads, request.backend, request.tier));
  const native = callNative(() => new binding.NativeDevice(opened));
  return new Device(native, deviceInfo(native.info()));
}
