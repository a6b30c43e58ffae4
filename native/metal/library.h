// Compiling MSL at run time and caching compute pipelines per (kernel, function constants).
// Objective-C++ only: include from native/metal/*.mm.
#pragma once
#import <Metal/Metal.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/capabilities.h"
#include "core/pipeline_key.h"

namespace mto::metal {

class PipelineArchive;

// Compiles `source` as MSL `version`, with languageVersion always set explicitly (left unset, the
// TensorOps headers silently expand to nothing: docs/design/METAL.md), safe math (MTLMathModeSafe
// and precise functions, or fastMathEnabled = NO before macOS 15: the kernels rely on NaN, -inf
// and -0 behaving as IEEE 754 says). Returns nil and sets *error to the compiler's message on
// failure, or when the running macOS `os` (device.h running_os_version) predates `version`.
id<MTLLibrary> compile_library(id<MTLDevice> device, const std::string& source, MslVersion version,
                               const OsVersion& os, std::string* error);

// The options compile_library compiles with (MSL `version` set explicitly, safe math), for other
// compiles that must behave alike (users' kernels: user_kernel.mm).
MTLCompileOptions* compile_options(MslVersion version);

// Pipelines of one library, created on first use and kept for the process (a first compile costs
// tens of ms per kernel, docs/design/METAL.md). With an archive, pipelines come from it first and
// added to it after, so the next process starts warm. Thread-safe.
class PipelineCache {
 public:
  PipelineCache(id<MTLDevice> device, id<MTLLibrary> library, PipelineArchive* archive = nullptr);

  // The pipeline for `kernel` specialised with `constants`; throws Error(E_BACKEND) carrying
  // Metal's message when the function is missing or the pipeline cannot be made.
  id<MTLComputePipelineState> get(const std::string& kernel, const std::vector<FunctionConstant>& constants);
  // The pipeline when it was made already, else nil (never compiles; throws nothing).
  id<MTLComputePipelineState> find(const std::string& kernel, const std::vector<FunctionConstant>& constants) const;
  size_t size() const;

 private:
  id<MTLComputePipelineState> build(const std::string& key, const std::string& kernel,
                                    const std::vector<FunctionConstant>& constants);

  id<MTLDevice> device_;
  id<MTLLibrary> library_;
  PipelineArchive* archive_;  // not owned; outlives the cache (shader_library.mm)
  mutable std::mutex mu_;
  std::unordered_map<std::string, id<MTLComputePipelineState>> pipelines_;
};

}  // namespace mto::metal
