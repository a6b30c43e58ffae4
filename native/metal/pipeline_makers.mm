// Which pipeline maker each shader library gets (library.h PipelineMakers): apart from library.mm so
// that the probe half of native/metal (library.mm, probe.mm: scripts/metal-host-report.mjs) does
// not pull in the Metal 4 path.
#include "library.h"

#include "core/command_path.h"
#include "metal4_path.h"

namespace mto::metal {

PipelineMakers::PipelineMakers(id<MTLDevice> device, const Capabilities& caps)
    : metal3_(std::make_unique<Metal3PipelineMaker>(
          device, std::make_unique<PipelineArchive>(device, default_archive_path(caps)))) {
#if MTO_HAVE_METAL4
  // The TensorOps tiers' command path, decided as make_batch_encoder (batch_encoder.mm) decides it.
  bool available26 = false;
  if (@available(macOS 26.0, *)) available26 = true;
  const CommandPath path = command_path_for(caps, Tier::TensorOps, true, available26);
  const std::string archive = default_archive_path(caps, "pipelines-metal4");
  if (path == CommandPath::Metal4) {
    if (@available(macOS 26.0, *)) metal4_ = make_metal4_pipeline_maker(device, archive);
  } else if (path == CommandPath::Metal4PastCompat) {
    metal4_ = make_metal4_pipeline_maker_past_compat_version(device, archive);
  }
#endif
}

PipelineMakers::~PipelineMakers() = default;

PipelineMaker* PipelineMakers::for_library(MslVersion version) {
  return metal4_ && version.major >= 4 ? metal4_.get() : metal3_.get();
}

void PipelineMakers::flush() {
  metal3_->flush();
  if (metal4_) metal4_->flush();
}

}  // namespace mto::metal
