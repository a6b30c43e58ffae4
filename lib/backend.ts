// What open() asks the addon for, and how the addon's answer becomes `device.info`. The choice
// itself (metal tier probing, fallbacks, forced backends) is made in C++ at open()
// (native/core/backend_open.cc, tiers.cc), so it reads the same wherever it runs.
import * as os from 'node:os';
import { TensorOpsError } from './errors';
import type { Backend, DeviceInfo, GpuCoresSource, LibraryFallback, OpenOptions, Tier } from './types';
import { describe } from './validate';

/** The request the addon decides from: options.backend, overridden by the environment. */
export interface BackendRequest {
  backend: string;
  tier: string;
}

export function backendRequest(options: OpenOptions): BackendRequest {
  const wanted = options.backend ?? 'auto';
  if (wanted !== 'auto' && wanted !== 'cpu' && wanted !== 'metal') {
    throw new TensorOpsError('E_ARG', `options.backend must be 'auto', 'metal' or 'cpu'; got ${describe(wanted)}`);
  }
  const env = process.env.METAL_TENSOROPS_BACKEND;
  if (env !== undefined && env !== '' && env !== 'auto' && env !== 'cpu' && env !== 'metal') {
    throw new TensorOpsError(
      'E_ARG',
      `METAL_TENSOROPS_BACKEND must be 'auto', 'cpu' or 'metal'; got ${describe(env)}`,
    );
  }
  return {
    backend: env !== undefined && env !== '' ? env : wanted,
    tier: process.env.METAL_TENSOROPS_TIER ?? '',
  };
}

/** What the addon's NativeDevice.info() returns. */
export interface NativeInfo {
  backend: Backend;
  tier: Tier;
  name?: string;
  neuralAccelerators: boolean;
  gpuFamily?: string;
  unifiedMemory?: boolean;
  recommendedWorkingSetBytes?: number;
  macosVersion?: string;
  macosVersionFrom?: string;
  gpuCores?: number;
  gpuCoresFrom?: GpuCoresSource;
  fallbackReason?: string;
  fallbacks?: LibraryFallback[];
  threads: number;
}

export function deviceInfo(native: NativeInfo): DeviceInfo {
  const info: DeviceInfo = {
    backend: native.backend,
    tier: native.tier,
    name: native.name ?? (os.cpus()[0]?.model?.trim() || `${process.arch} cpu`),
    neuralAccelerators: native.neuralAccelerators,
    os: `${process.platform} ${os.release()}`,
    arch: process.arch,
    threads: native.threads,
  };
  if (native.gpuFamily !== undefined) info.gpuFamily = native.gpuFamily;
  if (native.unifiedMemory !== undefined) info.unifiedMemory = native.unifiedMemory;
  if (native.recommendedWorkingSetBytes !== undefined) {
    info.recommendedWorkingSetBytes = native.recommendedWorkingSetBytes;
  }
  if (native.macosVersion !== undefined) {
    info.macosVersion = native.macosVersion;
    info.macosVersionFrom = native.macosVersionFrom ?? '';
  }
  if (native.gpuCores !== undefined) {
    info.gpuCores = native.gpuCores;
    info.gpuCoresFrom = native.gpuCoresFrom ?? 'default';
  }
  if (native.fallbackReason) info.fallbackReason = native.fallbackReason;
  if (native.fallbacks && native.fallbacks.length > 0) {
    info.fallbacks = Object.freeze(native.fallbacks.map((f) => Object.freeze({ library: f.library, reason: f.reason })));
  }
  return info;
}
