// The kernels of shaders/ on one GPU: each shaders/<stem>.metal loaded once per process from the
// metallib built next to the addon (scripts/build-metallib.mjs, when the build had `xcrun metal`)
// or else each kernel compiled on first use, alone, from the text embedded in the binary
// (scripts/embed-shaders.mjs) at its library's MSL version; pipelines cached by pipeline_key and
// backed by the on-disk binary archive.
// Objective-C++ only: include from native/metal/*.mm.
#pragma once
#import <Metal/Metal.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/capabilities.h"
#include "core/library_fallback.h"
#include "core/pipeline_key.h"
#include "library.h"

namespace mto::metal {

// The MSL version library `stem` compiles at, from the table embedded beside its source
// (shaders_embedded.h kEmbeddedLibraries, derived from what each file uses by
// scripts/embed-shaders.mjs): 3.1 for the simdgroup-tier files, 4.0 for TensorOps, 4.1 for scale
// planes. The precompiled metallibs are built at the same version. Throws Error(E_BACKEND) for a
// stem that is not embedded.
MslVersion library_msl_version(const std::string& stem);

// shaders/<stem>.metal with our headers inlined (core/shader_source.h). Throws Error(E_BACKEND)
// when the file is not embedded.
std::string library_source(const std::string& stem);

class ShaderLibraries {
 public:
  // The process-wide instance for `device`, made on first use and never destroyed (no Metal
  // calls during static destruction at exit).
  static ShaderLibraries& for_device(id<MTLDevice> device, const Capabilities& caps);

  // The pipeline of `kernel` in library `stem` when it is ready. Never compiles: the encoding
  // thread may be the JS thread. When the library or the pipeline is not made yet, or the library
  // turned out unusable after the op was planned, throws EncodeNeedsPreparation (core/backend.h)
  // whose `prepare` is make(...): the stream runs it on a pool thread, then encodes the op again,
  // which plans it again (core/library_fallback.h). `threads` is the dispatch's threadgroup size:
  // the TensorOps libraries' pipelines are made for exactly that size (cooperative tensors
  // require it: requiredThreadsPerThreadgroup, library.h), the others for any.
  id<MTLComputePipelineState> pipeline(const std::string& stem, const std::string& kernel,
                                       const std::vector<FunctionConstant>& constants, const uint32_t threads[3]);
  // Compiles the kernel on first use (alone, unless a precompiled metallib holds the library) and
  // makes the pipeline (tens of milliseconds each) for dispatches of `required` threads per
  // threadgroup (0 x 0 x 0: any). Thread-safe; a second caller waits for the first. A library
  // whose kernel fails to compile, or whose pipeline cannot be made, is marked unusable with
  // Metal's message (never retried), and make returns: the ops planned into it are planned one
  // tier lower from then on.
  void make(const std::string& stem, const std::string& kernel, const std::vector<FunctionConstant>& constants,
            MTLSize required);

  // Writes the pipeline archive's pending additions now (at exit).
  void flush_archive() { makers_.flush(); }

  // The libraries of this GPU that failed (core/library_fallback.h), for planning and dev.info.
  const UnusableLibraries& unusable() const { return unusable_; }

 private:
  ShaderLibraries(id<MTLDevice> device, const Capabilities& caps);

  id<MTLDevice> device_;
  OsVersion os_;  // the running macOS: which MSL versions exist (library.h compile_library)
  PipelineMakers makers_;  // Metal 3, and the MTL4Compiler for the Metal 4 path (library.h)
  std::mutex mu_;
  // The library holding `kernel` of `stem` (made now when `compile`, else null while it is not
  // made yet): the precompiled metallib of the whole library when there is one, else `kernel`
  // compiled alone from the embedded source. Throws Error(E_BACKEND) with the compiler's message
  // when compiling fails.
  PipelineCache* library(const std::string& stem, const std::string& kernel, bool compile);

  // By stem (a precompiled metallib) or "stem/kernel" (one kernel compiled from source).
  std::map<std::string, std::unique_ptr<PipelineCache>> libraries_;
  UnusableLibraries unusable_;
};

}  // namespace mto::metal
