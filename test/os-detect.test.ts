// The macOS version decision (native/core/os_detect.h) and the tier decision that follows from it,
// run on any platform through the addon's test-only `_internal` export. device.mm hands the same
// function what NSProcessInfo and two sysctls answered on a Mac; the answers below are the ones
// recorded in public reports for a process linked against an older SDK (macOS 26 shown as 16.0:
// dotnet/runtime issue 116503; Monterey's kern.osproductversion 12.0 beside
// kern.osproductversioncompat 10.16: dotnet/runtime issue 58575), not our own earlier output.
import { describe, expect, it } from 'vitest';
import { loadBinding } from '../lib/native';

/** What each call answered; a field left out is a call that failed (a missing sysctl). */
interface Readings { processInfo?: string; productVersion?: string; darwinRelease?: string }
interface Detection { version: string; source: string; compatSeen: boolean }
interface Caps {
  hasDevice?: boolean; deviceName?: string; architecture?: string; appleFamily?: number;
  metal4Family?: boolean; metal4Api?: boolean; scalePlaneApi?: boolean; osReadings: Readings;
}
interface Choice { backend: string; tier: string; neuralAccelerators: boolean; fallbackReason?: string; probed: string[] }
interface Internal {
  detectOs(r: Readings): Detection;
  commandPath(caps: Caps, tier: string, build: { sdkMetal4: boolean; available26: boolean }): string;
  selectTier(caps: Caps, request?: { backend?: string; tier?: string }): Choice;
}

const internal = (loadBinding() as unknown as { _internal: Internal })._internal;

describe('macOS version detection (native/core/os_detect.cc)', () => {
  it('macOS 26.2 shown to NSProcessInfo as 16.0: kern.osproductversion gives the real 26.2', () => {
    expect(internal.detectOs({ processInfo: '16.0.0', productVersion: '26.2', darwinRelease: '25.2.0' })).toEqual({
      version: '26.2', source: 'kern.osproductversion', compatSeen: true,
    });
  });

  it('macOS 26 where every reading but the kernel is the compatibility 16.0: read as 26.0, never higher', () => {
    const d = internal.detectOs({ processInfo: '16.0.0', productVersion: '16.0', darwinRelease: '25.2.0' });
    expect(d).toEqual({
      version: '26.0', source: 'kern.osproductversion 16.0 (a compatibility version) read as 26.0', compatSeen: true,
    });
  });

  it('a missing kern.osproductversion (and kern.osrelease): NSProcessInfo 16.0 alone is still macOS 26', () => {
    expect(internal.detectOs({ processInfo: '16.0.0' })).toEqual({
      version: '26.0', source: 'NSProcessInfo 16.0.0 (a compatibility version) read as 26.0', compatSeen: true,
    });
  });

  it('a compatibility version keeps the minor it carries (16.2 -> 26.2)', () => {
    expect(internal.detectOs({ processInfo: '16.2.0' }).version).toBe('26.2');
  });

  it('only the kernel says more than a compatibility version: its major, minor 0', () => {
    const d = internal.detectOs({ processInfo: '15.6.1', darwinRelease: '25.1.0' });
    expect(d.version).toBe('26.0');
    expect(d.source).toBe('kern.osrelease 25.1.0 (Darwin 25: macOS 26, minor unknown)');
    expect(d.compatSeen).toBe(false);
  });

  it('macOS 26.2 that NSProcessInfo reports honestly (macOS 26 beta 4 on): the direct readings win ties', () => {
    expect(internal.detectOs({ processInfo: '26.2.0', productVersion: '26.2', darwinRelease: '25.2.0' })).toEqual({
      version: '26.2', source: 'kern.osproductversion', compatSeen: false,
    });
  });

  it('macOS 27.1: read as it is, from either reading; not a compatibility version', () => {
    expect(internal.detectOs({ processInfo: '27.1.0', productVersion: '27.1', darwinRelease: '26.1.0' })).toEqual({
      version: '27.1', source: 'kern.osproductversion', compatSeen: false,
    });
    // kern.osproductversion missing: NSProcessInfo's own answer.
    expect(internal.detectOs({ processInfo: '27.1.0' })).toEqual({ version: '27.1', source: 'NSProcessInfo', compatSeen: false });
  });

  it('macOS 27 shown to an old binary as 16.0: the sysctl (or at worst the kernel) still says 27', () => {
    expect(internal.detectOs({ processInfo: '16.0.0', productVersion: '27.0', darwinRelease: '26.0.0' }).version).toBe('27.0');
    expect(internal.detectOs({ processInfo: '16.0.0', darwinRelease: '26.0.0' }).version).toBe('27.0');
  });

  it('macOS 15.x and 14.x: nothing to map, the patch kept', () => {
    expect(internal.detectOs({ processInfo: '15.5.0', productVersion: '15.5', darwinRelease: '24.5.0' })).toEqual({
      version: '15.5', source: 'kern.osproductversion', compatSeen: false,
    });
    expect(internal.detectOs({ processInfo: '14.7.2', productVersion: '14.7.2' }).version).toBe('14.7.2');
    // The kernel gives macOS 15 for Darwin 24, no more: a lower direct reading is not raised past its major.
    expect(internal.detectOs({ processInfo: '15.3.0', darwinRelease: '24.3.0' }).version).toBe('15.3');
  });

  it("Big Sur's compatibility 10.16 is macOS 11.0", () => {
    expect(internal.detectOs({ processInfo: '10.16.0' })).toEqual({
      version: '11.0', source: 'NSProcessInfo 10.16.0 (a compatibility version) read as 11.0', compatSeen: true,
    });
  });

  it('unparsable readings are ignored; none at all gives 0.0 from "none"', () => {
    expect(internal.detectOs({ processInfo: '15.4.0', productVersion: '', darwinRelease: 'garbage' }))
      .toEqual({ version: '15.4', source: 'NSProcessInfo', compatSeen: false });
    for (const bad of ['26', '26.2 ', '-1.0', '26.2.1.1', '26..2', '.26', '26.', '1234567.0', '0.5']) {
      expect(internal.detectOs({ productVersion: bad }), bad).toEqual({ version: '0.0', source: 'none', compatSeen: false });
    }
    expect(internal.detectOs({})).toEqual({ version: '0.0', source: 'none', compatSeen: false });
  });
});

// An M5 (Apple10, neural accelerators, family Metal4) with the given readings.
const m5 = (osReadings: Readings, extra: Partial<Caps> = {}): Caps => ({
  hasDevice: true, deviceName: 'Apple M5', architecture: 'applegpu_g17g', appleFamily: 10, metal4Family: true,
  osReadings, ...extra,
});

describe('the tier decision that follows (native/core/tiers.cc)', () => {
  it('macOS 26.2 shown as 16.0 to Node: tensorops, as on an honest 26.2', () => {
    expect(internal.selectTier(m5({ processInfo: '16.0.0', productVersion: '26.2', darwinRelease: '25.2.0' }))).toEqual({
      backend: 'metal', tier: 'tensorops', neuralAccelerators: true, probed: ['tensorops'],
    });
  });

  it('a compatibility 16.0 with no sysctl: macOS 26.0, below tensorops\' 26.2, said with the version it saw', () => {
    const c = internal.selectTier(m5({ processInfo: '16.0.0' }));
    expect(c).toMatchObject({ tier: 'simdgroup', neuralAccelerators: false, probed: ['simdgroup'] });
    expect(c.fallbackReason).toBe(
      "tensorops: needs macOS 26.2 or later (this is macOS 26.0); the GPU's neural accelerators stay unused");
  });

  it('macOS 27: tensorops-mx; without the scale-plane class the framework lacks it, tensorops with the reason', () => {
    const on27 = { processInfo: '27.0.0', productVersion: '27.0' };
    expect(internal.selectTier(m5(on27)).tier).toBe('tensorops-mx');
    const c = internal.selectTier(m5(on27, { scalePlaneApi: false }));
    expect(c).toMatchObject({ tier: 'tensorops', probed: ['tensorops'] });
    expect(c.fallbackReason).toBe(
      'tensorops-mx: the Metal framework has no scale-plane tensors (no class MTLTensorAuxiliaryPlaneDescriptor)');
  });

  it('a version read as 26.2 but a framework without the Metal 4 command API: simdgroup, saying so', () => {
    const c = internal.selectTier(m5({ processInfo: '26.2.0' }, { metal4Api: false }));
    expect(c).toMatchObject({ tier: 'simdgroup', probed: ['simdgroup'] });
    expect(c.fallbackReason).toBe(
      'tensorops: the Metal framework has no Metal 4 command API (MTLDevice does not respond to newMTL4CommandQueue), ' +
      "or this addon was built with an SDK older than macOS 26's");
    // Forcing the tier says the same, as an error.
    expect(() => internal.selectTier(m5({ processInfo: '26.2.0' }, { metal4Api: false }), { tier: 'tensorops' }))
      .toThrow(/METAL_TENSOROPS_TIER=tensorops cannot run here: the Metal framework has no Metal 4 command API/);
  });

  it('macOS 15.5: simdgroup, no TensorOps probe compiled, the version read said in the reason', () => {
    expect(internal.selectTier(m5({ processInfo: '15.5.0', productVersion: '15.5' }, { metal4Family: false }))).toEqual({
      backend: 'metal', tier: 'simdgroup', neuralAccelerators: false, probed: ['simdgroup'],
      fallbackReason: "tensorops: needs macOS 26.2 or later (this is macOS 15.5); the GPU's neural accelerators stay unused",
    });
  });
});

describe('the command path that follows (native/core/command_path.cc)', () => {
  const built = { sdkMetal4: true, available26: true };
  const on262 = m5({ processInfo: '26.2.0', productVersion: '26.2' });
  const compat = m5({ processInfo: '16.0.0', productVersion: '26.2' });

  it('the TensorOps tiers encode through Metal 4, simdgroup through Metal 3', () => {
    expect(internal.commandPath(on262, 'tensorops', built)).toBe('metal4');
    expect(internal.commandPath(m5({ processInfo: '27.0.0' }), 'tensorops-mx', built)).toBe('metal4');
    expect(internal.commandPath(on262, 'simdgroup', built)).toBe('metal3');
  });

  it('@available saying no in a process shown 16.0: Metal 4 past the compatibility version, as the detection read 26.2', () => {
    expect(internal.commandPath(compat, 'tensorops', { sdkMetal4: true, available26: false })).toBe('metal4-past-compat');
    // Nothing read 26 or later: no Metal 4 message is sent on @available's "no".
    expect(internal.commandPath(m5({ processInfo: '15.5.0' }, { metal4Api: true }), 'tensorops',
      { sdkMetal4: true, available26: false })).toBe('metal3');
  });

  it('Metal 3 where the build or the framework has no Metal 4, whatever the version says', () => {
    expect(internal.commandPath(on262, 'tensorops', { sdkMetal4: false, available26: true })).toBe('metal3');
    expect(internal.commandPath(m5({ processInfo: '26.2.0' }, { metal4Api: false }), 'tensorops', built)).toBe('metal3');
  });
});
