// Devices for tests: the cpu backend, and the test-only asynchronous backend
// (native/addon/async_test_backend.h), which behaves towards the stream like Metal: it declines
// the model ops it has no kernels for, so the stream runs them on the cpu backend in order.
import { open, type Device } from '../../lib/index';
import { deviceInfo } from '../../lib/backend';
import { Device as DeviceClass } from '../../lib/device';
import { loadBinding, type NativeDeviceHandle } from '../../lib/native';

export function asyncTestDevice(script: Record<string, unknown> = {}): Device {
  const Native = loadBinding().NativeDevice as unknown as new (
    threads: number, backend: string, tier: string, test: Record<string, unknown>,
  ) => NativeDeviceHandle;
  const native = new Native(2, 'cpu', '', { asyncTestBackend: true, ...script });
  return new DeviceClass(native, deviceInfo(native.info()));
}

/** [name, device] for each way the tests run an op. */
export async function testDevices(): Promise<[string, Device][]> {
  return [['cpu', await open({ backend: 'cpu', threads: 2 })], ['asynchronous backend', asyncTestDevice()]];
}
