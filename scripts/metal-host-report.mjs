#!/usr/bin/env node
// macOS only: builds the Metal host code (native/metal/*.mm with the backend-neutral core it
// uses) into a small program with Apple's toolchain, runs it, and prints what this Mac really
// offers as JSON: the Capabilities record device.mm fills (with the OS version's source, the GPU's
// core count and its source, and which Metal 4 and scale-plane APIs the framework answers to),
// every tier's probe result (each probe kernel compiled by Metal at run time), and the tier
// select_tier picks. The macOS workflow runs it so that the host code is compiled and executed by
// Apple's tools, not only type-checked.
//
//   node scripts/metal-host-report.mjs [--out FILE]
// METAL_TENSOROPS_BACKEND / METAL_TENSOROPS_TIER are passed to select_tier as open() will.
// Exit status: 0 when the program built and ran (whatever tier it found), 1 otherwise.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const MAIN = String.raw`
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#include <cstdio>
#include <cstdlib>
#include <string>
#include "core/error.h"
#include "metal/device.h"
#include "metal/probe.h"

static std::string q(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += c; }
    else if (c == '\n') o += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
    else o += c;
  }
  return o + "\"";
}

int main() {
  @autoreleasepool {
    using namespace mto;
    id<MTLDevice> device = metal::pick_device();
    Capabilities caps = metal::query_capabilities(device);
    std::string probes;
    for (Tier t : {Tier::Simdgroup, Tier::TensorOps, Tier::TensorOpsMx}) {
      if (device) caps.probe_for(t) = metal::run_probe(device, t, caps.os);
      const ProbeResult& p = caps.probe_for(t);
      const char* state = p.state == ProbeResult::State::Ok ? "ok" : p.state == ProbeResult::State::Failed ? "failed" : "not run";
      probes += std::string(probes.empty() ? "" : ", ") + q(tier_name(t)) + ": {\"state\": " + q(state) +
                (p.message.empty() ? "" : ", \"message\": " + q(p.message)) + "}";
    }
    TierRequest req;
    if (const char* b = std::getenv("METAL_TENSOROPS_BACKEND")) req.backend = b;
    if (const char* t = std::getenv("METAL_TENSOROPS_TIER")) req.tier = t;
    std::string choice;
    try {
      TierChoice c = select_tier(caps, req);
      choice = "{\"backend\": " + q(c.backend) + ", \"tier\": " + q(tier_name(c.tier)) +
               ", \"neuralAccelerators\": " + (c.neural_accelerators ? "true" : "false") +
               (c.fallback_reason.empty() ? "" : ", \"fallbackReason\": " + q(c.fallback_reason)) + "}";
    } catch (const Error& e) {
      choice = "{\"error\": " + q(e.what()) + ", \"code\": " + q(e.code()) + "}";
    }
    const GpuCoreCount cores = gpu_core_count(caps.ioregistry_gpu_cores, caps.architecture);
    std::printf("{\n  \"device\": {\"hasDevice\": %s, \"name\": %s, \"architecture\": %s, \"gpuFamily\": %s, "
                "\"metal4Family\": %s, \"neuralAcceleratorHardware\": %s, \"unifiedMemory\": %s, "
                "\"recommendedWorkingSetBytes\": %llu, \"metal4Api\": %s, \"scalePlaneApi\": %s, "
                "\"gpuCores\": %d, \"gpuCoresFrom\": %s},\n"
                "  \"os\": %s,\n  \"osFrom\": %s,\n  \"rosetta\": %s,\n"
                "  \"probes\": {%s},\n  \"choice\": %s\n}\n",
                caps.has_device ? "true" : "false", q(caps.device_name).c_str(), q(caps.architecture).c_str(),
                q(gpu_family_name(caps)).c_str(), caps.metal4_family ? "true" : "false",
                gpu_has_neural_accelerators(caps) ? "true" : "false", caps.unified_memory ? "true" : "false",
                static_cast<unsigned long long>(caps.recommended_working_set), caps.metal4_api ? "true" : "false",
                caps.scale_plane_api ? "true" : "false", cores.cores, q(core_count_source_name(cores.source)).c_str(),
                q(os_version_string(caps.os)).c_str(), q(caps.os_source).c_str(),
                caps.rosetta ? "true" : "false", probes.c_str(), choice.c_str());
  }
  return 0;
}
`;

function main(argv) {
  if (process.platform !== 'darwin') {
    console.error(`metal-host-report: needs macOS (this is ${process.platform}); on Linux run npm run check:metal`);
    return 1;
  }
  const work = mkdtempSync(join(tmpdir(), 'mto-host-report-'));
  const mainFile = join(work, 'main.mm');
  writeFileSync(mainFile, MAIN);
  // The capability and probe half of native/metal (what this report exercises); the rest of
  // the metal backend is built and run as part of the addon by npm ci and the test step.
  const mm = ['device.mm', 'library.mm', 'pipeline_archive.mm', 'probe.mm'].map((f) => join(root, 'native', 'metal', f));
  const core = ['capabilities.cc', 'os_detect.cc', 'tiers.cc', 'pipeline_key.cc', 'debounced_writer.cc'].map((f) => join(root, 'native', 'core', f));
  const exe = join(work, 'metal-host-report');
  // The frameworks the addon links (binding.gyp and CMakeLists.txt read the same list).
  const frameworks = JSON.parse(readFileSync(join(root, 'sources.json'), 'utf8')).macos_frameworks;
  const args = [
    'clang++', '-std=c++17', '-O1', '-fexceptions', '-mmacosx-version-min=14.0',
    '-I', join(root, 'native'), '-I', join(root, 'shaders'),
    '-fobjc-arc', '-x', 'objective-c++', mainFile, ...mm,
    '-x', 'c++', ...core,
    ...frameworks.flatMap((f) => ['-framework', f]), '-o', exe,
  ];
  console.error(`metal-host-report: building ${mm.length} native/metal sources with Apple clang`);
  execFileSync('xcrun', args, { stdio: 'inherit' });
  const r = spawnSync(exe, [], { encoding: 'utf8' });
  process.stderr.write(r.stderr ?? '');
  if (r.status !== 0) {
    console.error(`metal-host-report: the program exited with ${r.status ?? r.signal}`);
    return 1;
  }
  const report = JSON.parse(r.stdout);
  const text = `${JSON.stringify(report, null, 2)}\n`;
  process.stdout.write(text);
  const out = argv.indexOf('--out');
  if (out >= 0 && argv[out + 1]) writeFileSync(argv[out + 1], text);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
