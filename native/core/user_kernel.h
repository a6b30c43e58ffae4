// Users' MSL kernels (dev.kernel(), issue #30) as a backend compiles and runs them: backend-neutral
// so that native/addon hands them over without Objective-C. A backend that compiles MSL (metal)
// makes a UserKernelProgram from the generated source (lib/kernels/source.ts) and runs launches of
// it in stream order; the cpu backend declines both, and lib/ runs the kernel in the MSL-on-CPU
// emulator instead (ops_process.cc).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor.h"

namespace mto {

// A compiled kernel: opaque outside the backend that made it (metal: its compute pipeline).
struct UserKernelProgram {
  virtual ~UserKernelProgram() = default;
  // The most threads one threadgroup of it may have on this device (the pipeline's
  // maxTotalThreadsPerThreadgroup), and its SIMD width: lib/ checks a call's threadgroup against it.
  uint32_t max_threads = 0;
  uint32_t simd_width = 0;
};
using UserKernelProgramPtr = std::shared_ptr<const UserKernelProgram>;

// What [[buffer(index)]] is bound to for one run: a tensor plane (`buffer`), bytes copied into
// the command (`bytes`: constants and a quantized input's shape, setBytes), or a quantized tensor
// as ONE tensor with its E8M0 scale plane (`scaled`: a tensorops-mx kernel's scale-plane input,
// `mto_scaled_tensor<F>`; metal binds the MTLTensor qtensor.mm made over its codes and scales).
// `fill`, for an output with an init value: one element's bytes, repeated over the buffer before
// the kernel runs. `name`: the parameter's name, for messages.
struct UserKernelArg {
  uint32_t index = 0;
  BufferPtr buffer;
  QTensorPtr scaled;
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> fill;
  std::string name;
};

// One [[threadgroup(index)]] parameter's memory: `bytes` per threadgroup, a multiple of 16
// (Metal's rule; lib/ rounds up and checks the 32 KiB total).
struct UserKernelThreadgroupMemory {
  uint32_t index = 0;
  uint32_t bytes = 0;
};

// One run: threadgroups per grid and threads per threadgroup (each dimension at least 1; lib/
// checked the threadgroup against the program's max_threads), every buffer parameter and every
// threadgroup-memory parameter.
struct UserKernelLaunch {
  UserKernelProgramPtr program;
  uint32_t threadgroups[3] = {1, 1, 1};
  uint32_t threads[3] = {1, 1, 1};
  std::vector<UserKernelArg> args;
  std::vector<UserKernelThreadgroupMemory> threadgroup_memory;
};

}  // namespace mto
