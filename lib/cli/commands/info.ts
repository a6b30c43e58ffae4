// `metal-tensorops info`: what this machine gets from open(): package version, backend, tier,
// the CPU kernels the ops use, threads, the GPU's fields on metal, and why a faster backend or
// tier was not chosen.
import { open } from '../../index';
import { loadBinding } from '../../native';
import type { DeviceInfo } from '../../types';
import { DEVICE_OPTIONS, DEVICE_USAGE, backendOption, threadsOption, type Command } from '../command';
import { packageVersion } from '../package-version';

export interface InfoReport extends DeviceInfo {
  /** The package version. */
  version: string;
  /** The cpu kernels in use, decode-conversion/fused-dot ("avx512vbmi/avx512vbmi", "avx2/avx2", "neon/neon"). */
  cpuKernels: string;
  node: string;
}

export async function infoReport(options: { backend?: 'auto' | 'metal' | 'cpu'; threads?: number }): Promise<InfoReport> {
  const dev = await open({ backend: options.backend ?? 'auto', ...(options.threads ? { threads: options.threads } : {}) });
  return { version: packageVersion(), ...dev.info, cpuKernels: loadBinding().cpuKernels(), node: process.version };
}

const GiB = 2 ** 30;

/** The report as aligned "label  value" lines, fields absent on this backend left out. */
export function formatInfo(r: InfoReport): string {
  const rows: [string, string | number | boolean | undefined][] = [
    ['version', r.version],
    ['backend', r.backend],
    ['tier', r.tier],
    ['device', r.name],
    ['gpu family', r.gpuFamily],
    ['neural accelerators', r.backend === 'metal' ? (r.neuralAccelerators ? 'yes' : 'no') : undefined],
    ['unified memory', r.unifiedMemory === undefined ? undefined : r.unifiedMemory ? 'yes' : 'no'],
    ['working set', r.recommendedWorkingSetBytes === undefined ? undefined : `${(r.recommendedWorkingSetBytes / GiB).toFixed(1)} GiB recommended`],
    ['cpu kernels', r.cpuKernels],
    ['threads', r.threads],
    ['os', `${r.os} ${r.arch}`],
    ['node', r.node],
    ['fallback reason', r.fallbackReason],
  ];
  return rows.filter(([, v]) => v !== undefined).map(([k, v]) => `${k.padEnd(20)} ${v}`).join('\n');
}

export const info: Command = {
  name: 'info',
  summary: 'the device open() picks here: backend, tier, kernels, threads, why (the default command)',
  usage: `usage: metal-tensorops info [--json] [--backend auto|metal|cpu] [--threads N]
  --json                     print one JSON object (the fields of open()'s device.info, plus
                             version, cpuKernels and node)
${DEVICE_USAGE}`,
  options: { json: { type: 'boolean' }, ...DEVICE_OPTIONS },
  async run({ values }) {
    const report = await infoReport({ backend: backendOption(values.backend), threads: threadsOption(values.threads) });
    console.log(values.json ? JSON.stringify(report, null, 2) : formatInfo(report));
    return 0;
  },
};
