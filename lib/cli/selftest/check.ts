// What one self-test check is, and what it runs with.
import type { Device } from '../../device';
import type { Outcome } from './compare';

export interface CheckContext {
  dev: Device;
  /**
   * Every result read from the device passes through here before it is judged: the runner's
   * fault hook (METAL_TENSOROPS_SELFTEST_FAULT, commands/selftest.ts) perturbs it there.
   */
  read<T extends Float32Array | Uint16Array | Uint8Array>(data: T): T;
}

export interface Check {
  /** "linear mxfp4": what the progress line and the summary show. */
  name: string;
  run(ctx: CheckContext): Promise<Outcome>;
}
