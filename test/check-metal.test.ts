// `npm run check:metal` must pass on the real native/metal sources and must bite: a copy with a
// selector that does not exist, a copy with a macOS-26-only API outside `@available` and a copy
// with an API deprecated since the deployment target (at the newest target) fail with the
// compiler's message; so do copies of the Metal 4 command path with a wrong argument-table
// selector or a missing guard, and of its pipeline compiler with a wrong MTL4Compiler or
// serializer selector or a missing guard. Without this, a passing check would prove nothing.
// Needs clang-19 and Debian's arm64 cross headers (.ci/run installs them); a missing toolchain
// fails the full suite (npm run test:all) and skips this one in the quick suite. On macOS it is skipped (and counted as skipped):
// there Apple's own clang compiles the real files against the real SDK (npm ci), and
// .github/workflows/macos.yml builds and runs them (scripts/metal-host-report.mjs).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { skipUnlessFull } from './helpers/suite';

const root = resolve(__dirname, '..');
const script = join(root, 'scripts', 'check-metal.mjs');
const scratch = mkdtempSync(join(tmpdir(), 'mto-check-metal-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function checkMetal(...args: string[]) {
  const r = spawnSync(process.execPath, [script, ...args], { cwd: root, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** A copy of native/metal with `edit` applied to `mm` (device.mm); returns the edited file. */
function editedCopy(name: string, edit: (source: string) => string, mm = 'device.mm'): string {
  const dir = join(scratch, name);
  cpSync(join(root, 'native', 'metal'), dir, { recursive: true });
  const file = join(dir, mm);
  const before = readFileSync(file, 'utf8');
  const after = edit(before);
  expect(after, 'the edit must change the file').not.toBe(before);
  writeFileSync(file, after);
  return file;
}

// The raw-value query of family Metal4 in device.mm, which the edits below rewrite.
const metal4Query = 'caps.metal4_family = [device supportsFamily:metal4_family()];';

const missing = spawnSync('clang++-19', ['--version']).status !== 0 ? 'clang++-19'
  : !existsSync('/usr/aarch64-linux-gnu/include/stdlib.h') ? "Debian's arm64 cross headers" : undefined;

describe.skipIf(process.platform === 'darwin' || skipUnlessFull(missing))(`npm run check:metal${missing ? ` (needs ${missing})` : ''}`, () => {
  it('type-checks every native/metal/*.mm against the declarations in test/metal-sdk', () => {
    const r = checkMetal();
    expect(r.output).not.toMatch(/no clang\+\+ found|headers are missing/);
    expect(r.status, r.output).toBe(0);
    const files = readdirSync(join(root, 'native', 'metal')).filter((f) => f.endsWith('.mm'));
    expect(files.length).toBeGreaterThanOrEqual(3);
    for (const f of files) expect(r.output).toContain(`ok      native/metal/${f}`);
  }, 600_000);  // every file at two targets: about a minute on two idle cores

  it('fails on a selector that does not exist, showing the compiler message', () => {
    const file = editedCopy('wrong-selector', (s) => s.replace(metal4Query,
      'caps.metal4_family = [device supportFamily:metal4_family()];'));
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toContain('FAILED');
    expect(r.output).toMatch(/instance method 'supportFamily:' not found/);
  });

  it('fails on a macOS 26 API used outside @available, and passes once it is guarded', () => {
    const unguarded = editedCopy('unguarded', (s) => s.replace(metal4Query,
      'caps.metal4_family = [device supportsFamily:MTLGPUFamilyMetal4];'));
    const r = checkMetal(unguarded);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/'MTLGPUFamilyMetal4' is only available on macOS 26\.0 or newer/);
    expect(r.output).toContain('unguarded-availability');

    // The same call inside the guard is accepted: the check bites on the missing guard, not on
    // the API.
    const guarded = editedCopy('guarded', (s) => s.replace(metal4Query,
      'if (@available(macOS 26.0, *)) caps.metal4_family = [device supportsFamily:MTLGPUFamilyMetal4];'));
    const ok = checkMetal(guarded);
    expect(ok.status, ok.output).toBe(0);
  });

  it('fails on a macOS 26 language version assigned without a guard', () => {
    const file = editedCopy('language-version', (s) => s.replace(metal4Query,
      `${metal4Query}\n  MTLCompileOptions* o = [MTLCompileOptions new];\n  o.languageVersion = MTLLanguageVersion4_0;`));
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/'MTLLanguageVersion4_0' is only available on macOS 26\.0/);
  });

  it('fails on MSL 4.1 (scale planes) guarded only for macOS 26: it needs macOS 27', () => {
    const file = editedCopy('language-version-41', (s) => s.replace(metal4Query,
      `${metal4Query}\n  MTLCompileOptions* o = [MTLCompileOptions new];\n` +
      '  if (@available(macOS 26.0, *)) o.languageVersion = MTLLanguageVersion4_1;'));
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/'MTLLanguageVersion4_1' is only available on macOS 27\.0/);
  });

  it('fails on the scale-plane MTLTensor (macOS 27) created under a macOS 26 guard', () => {
    const guard27 = 'if (@available(macOS 27.0, *)) {';
    const file = editedCopy('scale-plane-26', (s) => s.replace(guard27, 'if (@available(macOS 26.0, *)) {'), 'qtensor.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/'make_tensor' is only available on macOS 27\.0/);
  });

  // library.mm's safe-math setting: mathMode (macOS 15) under @available, fastMathEnabled
  // (deprecated from macOS 15) only below it.
  const safeMath = /  if \(@available\(macOS 15\.0, \*\)\) \{\n    options\.mathMode = MTLMathModeSafe;[\s\S]*?#pragma clang diagnostic pop\n  \}\n/;

  it('fails on fastMathEnabled (deprecated from macOS 15) at the newest target, and passes as written at macOS 15', () => {
    const file = editedCopy('fast-math', (s) => s.replace(safeMath, '  options.fastMathEnabled = NO;\n'), 'library.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/at macOS 27\.0:[\s\S]*'fastMathEnabled' is deprecated: first deprecated in macOS 15\.0/);
    expect(r.output).not.toMatch(/at macOS 14\.0:/);  // legal at the deployment target
    const at15 = checkMetal('--macos', '15.0', join(root, 'native', 'metal', 'library.mm'));
    expect(at15.status, at15.output).toBe(0);
  });

  it('fails on mathMode (macOS 15) set without @available at the deployment target', () => {
    const file = editedCopy('math-mode', (s) => s.replace(safeMath,
      '  options.mathMode = MTLMathModeSafe;\n  options.mathFloatingPointFunctions = MTLMathFloatingPointFunctionsPrecise;\n'), 'library.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/at macOS 14\.0:[\s\S]*'setMathMode:' is only available on macOS 15\.0 or newer/);
  });

  it('fails on the required threadgroup size (macOS 26) set on a Metal 3 pipeline descriptor without @available', () => {
    const file = editedCopy('required-threads', (s) => s.replace(
      'if (@available(macOS 26.0, *)) descriptor.requiredThreadsPerThreadgroup = required;',
      'descriptor.requiredThreadsPerThreadgroup = required;'), 'library.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/'setRequiredThreadsPerThreadgroup:' is only available on macOS 26\.0 or newer/);
    // ... and for a TensorOps user kernel's pipeline per threadgroup size.
    const user = editedCopy('required-threads-user', (s) => s.replace('if (@available(macOS 26.0, *)) {\n      descriptor', '{\n      descriptor'),
      'user_kernel.mm');
    const u = checkMetal(user);
    expect(u.status).toBe(1);
    expect(u.output).toMatch(/'setRequiredThreadsPerThreadgroup:' is only available on macOS 26\.0 or newer/);
  });

  it("type-checks qtensor.mm's pre-macOS-27-SDK branch too (planes only)", () => {
    const file = editedCopy('sdk-26', (s) => `#define __MAC_OS_X_VERSION_MAX_ALLOWED 260000\n${s}`, 'qtensor.mm');
    const r = checkMetal(file);
    expect(r.status, r.output).toBe(0);
  });

  // The Metal 4 command path (encode_metal4.mm, batch_encoder.mm, os_gate.mm).
  const tensorBinding = '[table_ setResource:t.gpuResourceID atBufferIndex:index];';

  it('fails on a wrong argument-table selector (a tensor bound with setResource:atIndex:)', () => {
    const file = editedCopy('argument-table-selector', (s) => s.replace(tensorBinding,
      '[table_ setResource:t.gpuResourceID atIndex:index];'), 'encode_metal4.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/no known instance method for selector 'setResource:atIndex:'/);
  });

  // The tensorops-mx weight tensor (qtensor.mm) reaches its kernel through set_tensor: the
  // argument table takes a resource id, not the tensor object, and not through the buffer setter.
  it('fails on a tensor bound to the argument table by its MTLTensor instead of its gpuResourceID', () => {
    const file = editedCopy('argument-table-tensor-object', (s) => s.replace(tensorBinding,
      '[table_ setResource:t atBufferIndex:index];'), 'encode_metal4.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/cannot initialize a parameter of type 'MTLResourceID'|no viable conversion|incompatible/);
  });

  it('fails on a tensor bound through the buffer setter (setAddress:atIndex: with its gpuResourceID)', () => {
    const file = editedCopy('argument-table-tensor-address', (s) => s.replace(tensorBinding,
      '[table_ setAddress:t.gpuResourceID atIndex:index];'), 'encode_metal4.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/cannot initialize a parameter of type 'MTLGPUAddress'|no viable conversion|incompatible/);
  });

  it('fails on the weight tensor bound by the encoder instead of the argument table (Metal 4 encoders have no buffer setters)', () => {
    const file = editedCopy('encoder-tensor', (s) => s.replace(tensorBinding,
      '[encoder_ setBuffer:t offset:0 atIndex:index];'), 'encode_metal4.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/no known instance method for selector 'setBuffer:offset:atIndex:'/);
  });

  it('fails on a buffer bound to the argument table by its MTLBuffer instead of its gpuAddress', () => {
    const file = editedCopy('argument-table-address', (s) => s.replace(
      '[table_ setAddress:buffer.gpuAddress atIndex:index];', '[table_ setAddress:buffer atIndex:index];'),
    'encode_metal4.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/cannot initialize a parameter of type 'MTLGPUAddress'|incompatible pointer to integer conversion/);
  });

  // Users' kernels' threadgroup memory is set on the Metal 4 encoder: the argument table has no
  // such method (it binds resources only), so a call there must not type-check.
  it('fails on threadgroup memory set on the argument table instead of the Metal 4 encoder', () => {
    const file = editedCopy('threadgroup-memory-table', (s) => s.replace(
      '[encoder_ setThreadgroupMemoryLength:length atIndex:index];', '[table_ setThreadgroupMemoryLength:length atIndex:index];'),
    'encode_metal4.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/no known instance method for selector 'setThreadgroupMemoryLength:atIndex:'/);
  });

  it('fails on the Metal 4 path reached without @available (an unguarded macOS 26 call)', () => {
    const file = editedCopy('metal4-unguarded', (s) => s.replace(
      '    if (@available(macOS 26.0, *)) return make_metal4_encoder(device, std::move(residency));',
      '    return make_metal4_encoder(device, std::move(residency));'), 'batch_encoder.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/'make_metal4_encoder' is only available on macOS 26\.0 or newer/);
    expect(r.output).toContain('unguarded-availability');
  });

  it('fails on the Metal 4 encoder class without its macOS 26 annotation (every MTL4 use unguarded)', () => {
    const file = editedCopy('metal4-class', (s) => s.replace(
      'class API_AVAILABLE(macos(26.0)) Metal4Encoder', 'class Metal4Encoder'), 'encode_metal4.mm');
    const r = checkMetal('--macos', '14.0', file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/'MTL4CommandQueue' is only available on macOS 26\.0 or newer/);
  });

  it('fails on a macOS 27 API inside the macOS 26 path: the annotation admits 26, not everything', () => {
    const file = editedCopy('metal4-uses-27', (s) => s.replace(tensorBinding,
      `${tensorBinding}\n    (void)MTLTensorDataTypeMetalFloat8E4M3;`), 'encode_metal4.mm');
    const r = checkMetal('--macos', '14.0', file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/'MTLTensorDataTypeMetalFloat8E4M3' is only available on macOS 27\.0 or newer/);
  });

  it("os_gate.mm's silenced call is the only one: a second macOS 26 call there is an error", () => {
    const file = editedCopy('os-gate-second-call', (s) => s.replace('#pragma clang diagnostic pop\n}',
      '#pragma clang diagnostic pop\n}\nvoid second(id<MTLDevice> d) { (void)[d newMTL4CommandQueue]; }'), 'os_gate.mm');
    const r = checkMetal('--macos', '14.0', file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/'newMTL4CommandQueue' is only available on macOS 26\.0 or newer/);
  });

  it('type-checks the Metal 4 files as built with an SDK older than macOS 26 (Metal 3 path only)', () => {
    const files = ['batch_encoder.mm', 'encode_metal4.mm', 'os_gate.mm', 'device.mm', 'pipeline_metal4.mm',
      'pipeline_makers.mm'].map((mm) => editedCopy(`sdk-15-${mm}`,
      (s) => `#define __MAC_OS_X_VERSION_MAX_ALLOWED 150000\n${s}`, mm));
    const r = checkMetal(...files);
    expect(r.status, r.output).toBe(0);
  });

  // The Metal 4 path's pipelines (pipeline_metal4.mm): made by an MTL4Compiler, warm-started from
  // an MTL4Archive, written back through an MTL4PipelineDataSetSerializer. A wrong compiler or
  // serializer selector, or the compiler reached outside macOS 26, must fail.
  const compile4 = '[compiler_ newComputePipelineStateWithDescriptor:descriptor compilerTaskOptions:nil error:&err]';

  it('fails on a wrong MTL4Compiler selector (the Metal 3 options: spelling)', () => {
    const file = editedCopy('mtl4-compiler-selector', (s) => s.replace(compile4,
      '[compiler_ newComputePipelineStateWithDescriptor:descriptor options:nil error:&err]'), 'pipeline_metal4.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/no known instance method for selector 'newComputePipelineStateWithDescriptor:options:error:'/);
  });

  it("fails on the serializer's archive write misspelt (serializeAsArchiveAndFlushURL:)", () => {
    const file = editedCopy('mtl4-serializer-flush', (s) => s.replace('[serializer_ serializeAsArchiveAndFlushToURL:url',
      '[serializer_ serializeAsArchiveAndFlushURL:url'), 'pipeline_metal4.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/no known instance method for selector 'serializeAsArchiveAndFlushURL:error:'/);
  });

  it('fails on the MTL4Compiler pipeline maker made without @available', () => {
    const file = editedCopy('mtl4-compiler-unguarded', (s) => s.replace(
      '    if (@available(macOS 26.0, *)) metal4_ = make_metal4_pipeline_maker(device, archive);',
      '    metal4_ = make_metal4_pipeline_maker(device, archive);'), 'pipeline_makers.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/'make_metal4_pipeline_maker' is only available on macOS 26\.0 or newer/);
    expect(r.output).toContain('unguarded-availability');
  });

  it('fails on the MTL4Compiler used by a class without its macOS 26 annotation', () => {
    const file = editedCopy('mtl4-compiler-class', (s) => s.replace(
      'class API_AVAILABLE(macos(26.0)) Metal4PipelineMaker', 'class Metal4PipelineMaker'), 'pipeline_metal4.mm');
    const r = checkMetal('--macos', '14.0', file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/'MTL4Compiler' is only available on macOS 26\.0 or newer/);
  });

  // Users' kernels (user_kernel.mm): the asynchronous compile's completion handler takes the
  // library first and the error second; written the other way round, it would read the error as
  // the library. The check must refuse the swapped block, and a selector that does not exist.
  const libraryHandler = 'completionHandler:^(id<MTLLibrary> library, NSError* error) {';

  it("fails on the user-kernel compile's completion handler with its parameters swapped", () => {
    const file = editedCopy('user-kernel-handler', (s) => s.replace(libraryHandler,
      'completionHandler:^(NSError* error, id<MTLLibrary> library) {'), 'user_kernel.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/cannot initialize a parameter of type 'MTLNewLibraryCompletionHandler/);
  });

  it("fails on the user-kernel pipeline made through a selector that does not exist", () => {
    const file = editedCopy('user-kernel-selector', (s) => s.replace('[device newComputePipelineStateWithFunction:function\n',
      '[device newComputePipelineStateWithFunction:function\n                                             options:0\n'), 'user_kernel.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/no known instance method for selector 'newComputePipelineStateWithFunction:options:completionHandler:'|instance method .* not found/);
  });

  // A tensorops-mx user kernel's scale-plane input is bound as the MTLTensor qtensor.mm attached to
  // the QuantizedTensor (through set_tensor: the Metal 4 argument table's gpuResourceID, as the
  // qlinear_tensorops_mx weight); binding the QuantizedTensor itself must not type-check.
  it("fails on a user kernel's scale-plane input bound as its QuantizedTensor instead of its MTLTensor", () => {
    const file = editedCopy('user-kernel-scaled-tensor', (s) => s.replace('encoder_->set_tensor(tensors[i], a.index);',
      'encoder_->set_tensor(a.scaled, a.index);'), 'user_kernel.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/no viable conversion from 'const QTensorPtr'/);
  });

  // The concurrent encoders' barriers (core/hazards.h decides where): Metal 3's is the compute
  // encoder's memoryBarrierWithScope: on an encoder made with computeCommandEncoderWithDispatchType:,
  // Metal 4's the MTL4 encoder's barrierAfterEncoderStages:... . A barrier through another name,
  // the Metal 4 selector on the Metal 3 encoder, or a barrier scope passed as the dispatch type
  // must not type-check.
  const metal3Barrier = '[encoder_ memoryBarrierWithScope:MTLBarrierScopeBuffers];';

  it('fails on a wrong Metal 3 barrier selector', () => {
    const file = editedCopy('barrier-selector', (s) => s.replace(metal3Barrier,
      '[encoder_ memoryBarrierWithScope:MTLBarrierScopeBuffers afterStages:MTLStageDispatch];'), 'encode_metal3.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/no known instance method for selector 'memoryBarrierWithScope:afterStages:'/);
  });

  it("fails on the Metal 4 encoder barrier called on the Metal 3 compute encoder", () => {
    const file = editedCopy('barrier-metal4-on-metal3', (s) => s.replace(metal3Barrier,
      '[encoder_ barrierAfterEncoderStages:MTLStageDispatch beforeEncoderStages:MTLStageDispatch\n' +
      '                    visibilityOptions:MTL4VisibilityOptionDevice];'), 'encode_metal3.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/barrierAfterEncoderStages:beforeEncoderStages:visibilityOptions:/);
  });

  it('fails on a barrier scope passed as the Metal 3 dispatch type', () => {
    const file = editedCopy('dispatch-type', (s) => s.replace(
      '[batch_ computeCommandEncoderWithDispatchType:dispatch_type_]',
      '[batch_ computeCommandEncoderWithDispatchType:MTLBarrierScopeBuffers]'), 'encode_metal3.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/cannot initialize a parameter of type 'MTLDispatchType'/);
  });

  it('fails on a Metal 4 encoder barrier with its stages and visibility swapped', () => {
    const file = editedCopy('metal4-barrier-args', (s) => s.replace(
      '[encoder_ barrierAfterEncoderStages:MTLStageDispatch beforeEncoderStages:MTLStageDispatch\n' +
      '                      visibilityOptions:MTL4VisibilityOptionDevice];',
      '[encoder_ barrierAfterEncoderStages:MTLStageDispatch visibilityOptions:MTL4VisibilityOptionDevice];'),
    'encode_metal4.mm');
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/barrierAfterEncoderStages:visibilityOptions:/);
  });

  // The GPU core count from the IORegistry (device.mm ioregistry_gpu_cores): IOKit's C API, checked
  // against test/metal-sdk/IOKit and CoreFoundation.
  const coreCountLookup = 'IOServiceGetMatchingService(kIOMainPortDefault, IOServiceMatching("AGXAccelerator"))';
  const coreCountProperty = 'IORegistryEntryCreateCFProperty(service, CFSTR("gpu-core-count"), kCFAllocatorDefault, 0)';

  it('fails on a CFString passed to IOServiceMatching, which takes a C string', () => {
    const file = editedCopy('iokit-cfstring-class', (s) => s.replace(coreCountLookup,
      'IOServiceGetMatchingService(kIOMainPortDefault, IOServiceMatching(CFSTR("AGXAccelerator")))'));
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/no matching function for call to 'IOServiceMatching'/);
    expect(r.output).toMatch(/'CFStringRef'.*to 'const char \*'/);
  });

  it('fails on a C string as the property key, which IORegistryEntryCreateCFProperty takes as a CFString', () => {
    const file = editedCopy('iokit-cstring-key', (s) => s.replace(coreCountProperty,
      'IORegistryEntryCreateCFProperty(service, "gpu-core-count", kCFAllocatorDefault, 0)'));
    const r = checkMetal(file);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/no matching function for call to 'IORegistryEntryCreateCFProperty'/);
  });

  it('fails on an IOKit function that does not exist, and on the main port by its deprecated name', () => {
    const misspelt = editedCopy('iokit-misspelt', (s) => s.replace(coreCountProperty,
      'IORegistryEntryCopyCFProperty(service, CFSTR("gpu-core-count"), kCFAllocatorDefault, 0)'));
    const r = checkMetal(misspelt);
    expect(r.status).toBe(1);
    expect(r.output).toMatch(/undeclared identifier 'IORegistryEntryCopyCFProperty'/);

    const master = editedCopy('iokit-master-port', (s) => s.replace(coreCountLookup,
      'IOServiceGetMatchingService(kIOMasterPortDefault, IOServiceMatching("AGXAccelerator"))'));
    const old = checkMetal(master);
    expect(old.status).toBe(1);
    expect(old.output).toMatch(/'kIOMasterPortDefault' is deprecated: first deprecated in macOS 12\.0/);
  });

  it('extracts the embedded MSL probe sources with their language versions', () => {
    const out = join(scratch, 'msl');
    const r = checkMetal('--extract-msl', out);
    expect(r.status, r.output).toBe(0);
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) as { name: string; std: string }[];
    expect(manifest.map((m) => `${m.name} ${m.std}`)).toEqual([
      'probe_simdgroup metal3.1', 'probe_tensorops metal4.0', 'probe_tensorops_mx metal4.1',
    ]);
    expect(readFileSync(join(out, 'probe_tensorops.metal'), 'utf8')).toContain('matmul2d_descriptor(16, 16');
  });
});
