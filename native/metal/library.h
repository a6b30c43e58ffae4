// Compiling MSL at run time and caching compute pipelines per (kernel, function constants).
// Objective-C++ only: include from native/metal/*.mm.
#pragma once
#import <Metal/Metal.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/capabilities.h"
#include "core/pipeline_key.h"
#include "pipeline_archive.h"

namespace mto::metal {

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

// The function constant values for `constants`, each at its own width (for either pipeline API).
MTLFunctionConstantValues* constant_values(const std::vector<FunctionConstant>& constants);

// How a PipelineCache makes a pipeline it does not hold yet: through the Metal 3 device API
// (Metal3PipelineMaker, below) or, for the libraries of the Metal 4 path, an MTL4Compiler
// (metal4_path.h make_metal4_pipeline_maker). Each keeps its own archive for warm starts. A maker
// is shared by several caches: make and flush are thread-safe.
class PipelineMaker {
 public:
  virtual ~PipelineMaker() = default;
  // The pipeline of `kernel` in `library` specialised with `constants`, labelled `key`, whose
  // dispatches all use `required` threads per threadgroup when it is not 0 x 0 x 0
  // (requiredThreadsPerThreadgroup: PipelineCache::get says when); nil with *failure set to
  // Metal's message when the function is missing or the pipeline cannot be made.
  virtual id<MTLComputePipelineState> make(id<MTLLibrary> library, const std::string& key, const std::string& kernel,
                                           const std::vector<FunctionConstant>& constants, MTLSize required,
                                           std::string* failure) = 0;
  // Writes the archive's pending additions now (at exit); nothing without an archive.
  virtual void flush() {}
};

// [device newComputePipelineStateWithDescriptor:options:reflection:error:] (macOS 14+), with an
// MTLBinaryArchive when `archive` is given: a hit skips the back-end compile, a miss compiles and
// is added to the archive.
class Metal3PipelineMaker final : public PipelineMaker {
 public:
  explicit Metal3PipelineMaker(id<MTLDevice> device, std::unique_ptr<PipelineArchive> archive = nullptr);
  ~Metal3PipelineMaker() override;
  id<MTLComputePipelineState> make(id<MTLLibrary> library, const std::string& key, const std::string& kernel,
                                   const std::vector<FunctionConstant>& constants, MTLSize required,
                                   std::string* failure) override;
  void flush() override;

 private:
  id<MTLDevice> device_;
  std::unique_ptr<PipelineArchive> archive_;
};

// The makers of one GPU (shader_library.h ShaderLibraries; pipeline_makers.mm): Metal 3 with the
// binary archive, and an MTL4Compiler with its MTL4Archive where the TensorOps tiers take the
// Metal 4 path (core/command_path.h, decided as batch_encoder.mm decides the encoder).
class PipelineMakers {
 public:
  PipelineMakers(id<MTLDevice> device, const Capabilities& caps);
  ~PipelineMakers();
  // The maker for a library compiled at MSL `version`: the MTL4Compiler for MSL 4.0 and later
  // (the TensorOps libraries, which only the TensorOps tiers use) when there is one, else Metal 3.
  PipelineMaker* for_library(MslVersion version);
  void flush();

 private:
  std::unique_ptr<PipelineMaker> metal3_;
  std::unique_ptr<PipelineMaker> metal4_;  // null on the Metal 3 path
};

// Pipelines of one library, created on first use and kept for the process (a first compile costs
// tens of ms per kernel, docs/design/METAL.md), made by `maker` (not owned; it outlives the
// cache), whose archive makes the next process start warm. Thread-safe.
class PipelineCache {
 public:
  PipelineCache(id<MTLLibrary> library, PipelineMaker* maker);

  // The pipeline for `kernel` specialised with `constants`, and for dispatches of exactly
  // `required` threads per threadgroup unless it is 0 x 0 x 0: a kernel that uses cooperative
  // tensors must say so ("Setting this property is optional, except in cases where the pipeline
  // uses CooperativeTensors": MTL4ComputePipeline.h, macOS 26). Throws Error(E_BACKEND) carrying
  // Metal's message when the function is missing or the pipeline cannot be made.
  id<MTLComputePipelineState> get(const std::string& kernel, const std::vector<FunctionConstant>& constants,
                                  MTLSize required = MTLSizeMake(0, 0, 0));
  // The pipeline when it was made already, else nil (never compiles; throws nothing).
  id<MTLComputePipelineState> find(const std::string& kernel, const std::vector<FunctionConstant>& constants,
                                   MTLSize required = MTLSizeMake(0, 0, 0)) const;
  size_t size() const;

 private:
  id<MTLComputePipelineState> build(const std::string& key, const std::string& kernel,
                                    const std::vector<FunctionConstant>& constants, MTLSize required);

  id<MTLLibrary> library_;
  PipelineMaker* maker_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, id<MTLComputePipelineState>> pipelines_;
};

}  // namespace mto::metal
