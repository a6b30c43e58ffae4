// The one place where macOS 26 API is reached without `@available` saying yes (metal4_path.h): the
// Metal 4 encoder and the Metal 4 pipeline maker, the two entry points of the Metal 4 path.
//
// Why: `@available` answers for the version the process is shown, and a process linked against an
// SDK older than macOS 26 (Node's release binaries) may be shown the compatibility version 16.0
// (core/os_detect.h). make_batch_encoder (batch_encoder.mm) and PipelineMakers
// (pipeline_makers.mm) come here only when our own detection read macOS 26 or later through that
// and the device answers the Metal 4 selectors the path sends (device.mm, caps.metal4_api; the
// compiler's below), so the calls are there at run time; the Metal 4 classes are weakly linked and
// resolve on such a system. Everything behind these calls is still checked as macOS 26 code
// (encode_metal4.mm and pipeline_metal4.mm are API_AVAILABLE(macos(26.0))), so an unguarded
// macOS 27 call there, or a macOS 26 call anywhere else, stays an error (npm run check:metal).
#include "metal4_path.h"

namespace mto::metal {

#if MTO_HAVE_METAL4
std::unique_ptr<BatchEncoder> make_metal4_encoder_past_compat_version(id<MTLDevice> device,
                                                                      std::shared_ptr<ResidencyTracker> residency) {
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunguarded-availability-new"
  return make_metal4_encoder(device, std::move(residency));
#pragma clang diagnostic pop
}

std::unique_ptr<PipelineMaker> make_metal4_pipeline_maker_past_compat_version(id<MTLDevice> device,
                                                                              const std::string& archive_path) {
  // caps.metal4_api asked for the encoder's selectors; the compiler's is asked here.
  if (![device respondsToSelector:@selector(newCompilerWithDescriptor:error:)]) return nullptr;
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunguarded-availability-new"
  return make_metal4_pipeline_maker(device, archive_path);
#pragma clang diagnostic pop
}
#endif

}  // namespace mto::metal
