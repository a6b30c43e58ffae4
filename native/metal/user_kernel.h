// Compiling users' kernels (dev.kernel(), issue #30) on the metal backend: the generated MSL source
// (lib/kernels/source.ts, `#line` directives naming the user's lines) compiled with
// newLibraryWithSource:options:completionHandler: and made a pipeline with
// newComputePipelineStateWithFunction:completionHandler:, both asynchronous in Metal itself, so
// neither the JS thread nor a stream thread waits for the compiler. Pipelines are cached by the
// whole source text, which carries the template values, as MLX keys its custom kernels by their
// source and template arguments. Objective-C++ only: include from native/metal/*.mm.
#pragma once
#import <Metal/Metal.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/backend.h"

namespace mto::metal {

// A program this backend made: its pipeline, for any threadgroup size. A TensorOps kernel
// (MSL 4.0 and later) holds cooperative tensors, whose pipelines must be made for the one
// threadgroup size of their dispatches ("optional, except in cases where the pipeline uses
// CooperativeTensors": requiredThreadsPerThreadgroup, MTL4ComputePipeline.h, macOS 26): it keeps
// its function instead and a pipeline per size a run asked for, made on a stream thread at the
// first run of that size (user_kernel.mm).
struct MetalUserProgram final : UserKernelProgram {
  id<MTLComputePipelineState> pipeline = nil;
  id<MTLFunction> function = nil;  // set for TensorOps kernels (pipeline nil)
  mutable std::mutex mu;
  mutable std::map<std::array<uint32_t, 3>, id<MTLComputePipelineState>> sized;
};

class UserKernels {
 public:
  explicit UserKernels(id<MTLDevice> device);
  // Compiles `source` (kernel `name`) at MSL `version` unless a program of the same text was made already, and
  // calls `done` once, on the calling thread for a cached program, else on Metal's: the program,
  // or E_KERNEL with the compiler's message (its `NAME.metal:LINE:COL` positions are the user's).
  void compile(const std::string& name, const std::string& source, MslVersion version, UserKernelCompiled done);

 private:
  // Shared with the completion handlers, which may run after the backend is gone.
  struct State {
    std::mutex mu;
    std::unordered_map<std::string, UserKernelProgramPtr> programs;  // by source text
  };
  id<MTLDevice> device_;
  std::shared_ptr<State> state_;
};

}  // namespace mto::metal
