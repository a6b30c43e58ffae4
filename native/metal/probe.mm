// Tier probes (probe.h): a tier is used only if its tiny kernel compiles and yields a pipeline
// on this device, because a GPU family or OS version says what should work, not what does
// (hosted runners' paravirtual GPUs fail TensorOps pipelines, docs/design/METAL.md).
#include "probe.h"

#include <string>

#include "core/error.h"
#include "library.h"
#include "probe_sources.h"

namespace mto::metal {
namespace {

const char* probe_source(Tier t) {
  switch (t) {
    case Tier::Simdgroup: return kProbeSimdgroup;
    case Tier::TensorOps: return kProbeTensorOps;
    case Tier::TensorOpsMx: return kProbeTensorOpsMx;
    case Tier::Cpu: break;
  }
  return nullptr;
}

// Threads the probe's threadgroup needs: the TensorOps probes run 4 SIMD-groups of 32.
NSUInteger probe_threads(Tier t) { return t == Tier::Simdgroup ? 32 : 4 * 32; }

ProbeResult failed(std::string message) {
  ProbeResult r;
  r.state = ProbeResult::State::Failed;
  r.message = std::move(message);
  return r;
}

}  // namespace

ProbeResult run_probe(id<MTLDevice> device, Tier t, const OsVersion& os) {
  const char* source = probe_source(t);
  if (!device || !source) return failed("no Metal device or no probe for this tier");
  std::string error;
  id<MTLLibrary> library = compile_library(device, source, msl_version_for(t), os, &error);
  if (!library) return failed(error);
  try {
    Metal3PipelineMaker maker(device);
    PipelineCache pipelines(library, &maker);
    // The TensorOps probes hold cooperative tensors: their pipelines need the threadgroup size.
    const MTLSize required = t == Tier::Simdgroup ? MTLSizeMake(0, 0, 0) : MTLSizeMake(probe_threads(t), 1, 1);
    id<MTLComputePipelineState> pipeline = pipelines.get(kProbeFunction, {}, required);
    if (pipeline.maxTotalThreadsPerThreadgroup < probe_threads(t)) {
      return failed("the probe pipeline allows " + std::to_string(pipeline.maxTotalThreadsPerThreadgroup) +
                    " threads per threadgroup; it needs " + std::to_string(probe_threads(t)));
    }
  } catch (const Error& e) {
    return failed(e.what());
  }
  ProbeResult ok;
  ok.state = ProbeResult::State::Ok;
  return ok;
}

TierChoice choose_tier(id<MTLDevice> device, Capabilities& caps, const TierRequest& request) {
  return select_tier_probing(caps, request, [&](Tier t) { return run_probe(device, t, caps.os); });
}

}  // namespace mto::metal
