// The GPU core count decision (native/core/capabilities.cc gpu_core_count), run on any platform
// through the addon's test-only `_internal.gpuCores`. device.mm hands it what IOKit read from the
// AGXAccelerator service's gpu-core-count on a Mac (nothing when the service or the property is
// missing) and MTLDevice.architecture.name. The readings below are the counts Apple sells those
// chips with (an M3 Pro's GPU has 14 or 18 cores, an M4 Max's 32 or 40), the ones
// philipturner/applegpuinfo's users report from the same property (issues #2 and #10: an M1 Max
// with 32, an M2 Max with 38), and readings it must not believe (none, 0, negative, 1000).
import { describe, expect, it } from 'vitest';
import { loadBinding } from '../lib/native';

interface CoreCount { cores: number; source: 'ioregistry' | 'device-class' | 'default' }
interface Internal { gpuCores(reading: number | undefined | null, architecture: string): CoreCount }

const internal = (loadBinding() as unknown as { _internal: Internal })._internal;

describe('GPU core count (native/core/capabilities.cc gpu_core_count)', () => {
  it("a Pro and a Max, both device class 's': the IORegistry tells them apart", () => {
    expect(internal.gpuCores(18, 'applegpu_g15s')).toEqual({ cores: 18, source: 'ioregistry' });  // M3 Pro
    expect(internal.gpuCores(40, 'applegpu_g16s')).toEqual({ cores: 40, source: 'ioregistry' });  // M4 Max
    expect(internal.gpuCores(32, 'applegpu_g13s')).toEqual({ cores: 32, source: 'ioregistry' });
    expect(internal.gpuCores(38, 'applegpu_g14s')).toEqual({ cores: 38, source: 'ioregistry' });
  });

  it("no reading (no AGXAccelerator service, or no gpu-core-count on it): the device class, 38 for 's'", () => {
    expect(internal.gpuCores(undefined, 'applegpu_g15s')).toEqual({ cores: 38, source: 'device-class' });
    expect(internal.gpuCores(null, 'applegpu_g15s')).toEqual({ cores: 38, source: 'device-class' });
    expect(internal.gpuCores(undefined, 'applegpu_g16p')).toEqual({ cores: 4, source: 'device-class' });
    expect(internal.gpuCores(undefined, 'applegpu_g15g')).toEqual({ cores: 8, source: 'device-class' });
    expect(internal.gpuCores(undefined, 'applegpu_g14d')).toEqual({ cores: 80, source: 'device-class' });
  });

  it('an implausible reading (0, negative, above 256) is not believed: the device class instead', () => {
    for (const bad of [0, -1, 1000, 257, 2 ** 40]) {
      expect(internal.gpuCores(bad, 'applegpu_g15s'), String(bad)).toEqual({ cores: 38, source: 'device-class' });
    }
    expect(internal.gpuCores(256, 'applegpu_g15s')).toEqual({ cores: 256, source: 'ioregistry' });
    expect(internal.gpuCores(1, 'applegpu_g15s')).toEqual({ cores: 1, source: 'ioregistry' });
  });

  it('no reading and no device class (an unknown or empty architecture name): 8 by default', () => {
    expect(internal.gpuCores(undefined, '')).toEqual({ cores: 8, source: 'default' });
    expect(internal.gpuCores(0, 'applegpu_g15x')).toEqual({ cores: 8, source: 'default' });
    // A reading is believed whatever the architecture name says.
    expect(internal.gpuCores(10, '')).toEqual({ cores: 10, source: 'ioregistry' });
  });

  it('rejects a reading that is not a number', () => {
    expect(() => internal.gpuCores('18' as unknown as number, 'applegpu_g15s')).toThrow(/reading must be a number/);
  });
});
