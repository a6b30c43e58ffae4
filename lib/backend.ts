// Which backend open() runs, decided once from the options, the environment and the platform.
import * as os from 'node:os';
import { TensorOpsError } from './errors';
import type { DeviceInfo, OpenOptions } from './types';
import { describe } from './validate';

export interface BackendChoice {
  backend: 'cpu';
  fallbackReason?: string;
}

/** Why Metal cannot run here, or undefined where it could. */
function metalUnavailableReason(): string | undefined {
  if (process.platform !== 'darwin') {
    return `Metal needs macOS on Apple silicon; this is ${process.platform}-${process.arch}`;
  }
  if (process.arch !== 'arm64') return 'Metal TensorOps need Apple silicon; this Mac is x64 (Intel or Rosetta)';
  return 'the Metal backend is not part of this build yet (cpu backend only)';
}

export function chooseBackend(options: OpenOptions): BackendChoice {
  const env = process.env.METAL_TENSOROPS_BACKEND;
  let wanted = options.backend ?? 'auto';
  if (env !== undefined && env !== '') {
    if (env !== 'auto' && env !== 'cpu' && env !== 'metal') {
      throw new TensorOpsError(
        'E_ARG',
        `METAL_TENSOROPS_BACKEND must be 'auto', 'cpu' or 'metal'; got ${describe(env)}`,
      );
    }
    wanted = env;
  }
  if (wanted !== 'auto' && wanted !== 'cpu' && wanted !== 'metal') {
    throw new TensorOpsError('E_ARG', `options.backend must be 'auto', 'metal' or 'cpu'; got ${describe(wanted)}`);
  }
  if (wanted === 'cpu') return { backend: 'cpu' };
  const reason = metalUnavailableReason();
  if (wanted === 'metal') {
    throw new TensorOpsError('E_BACKEND', `backend 'metal' was asked for but is not available: ${reason}`);
  }
  return { backend: 'cpu', fallbackReason: reason };
}

export function cpuInfo(threads: number, fallbackReason: string | undefined): DeviceInfo {
  const info: DeviceInfo = {
    backend: 'cpu',
    tier: 'cpu',
    name: os.cpus()[0]?.model?.trim() || `${process.arch} cpu`,
    neuralAccelerators: false,
    os: `${process.platform} ${os.release()}`,
    arch: process.arch,
    threads,
  };
  if (fallbackReason) info.fallbackReason = fallbackReason;
  return info;
}
