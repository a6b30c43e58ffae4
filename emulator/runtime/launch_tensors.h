// Launching a kernel with tensor arguments (tensor_binding.h): what the host binds at a
// [[buffer(n)]] index that the kernel declares as a tensor, and run_kernel with them. Kept apart
// from launch.h, which every generated kernel translation unit includes.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "launch.h"
#include "tensor_binding.h"

namespace mtoh {

// A host-bound tensor: its descriptor (TensorBinding without the planes) and its planes' bytes.
struct HostTensor {
  int index = 0;
  std::string name;  // for messages: "w.tensor"
  int data_type = 0;
  int rank = 2;
  int64_t dims[2] = {0, 0};
  int64_t strides[2] = {0, 0};
  int scale_type = 0;  // 0: no scale plane
  int64_t block[2] = {0, 0};
  std::vector<unsigned char> data, scales;  // copied in before the launch (inputs only)
};

// run_kernel (launch.h) with `tensors` bound at their indices besides `buffers`: every index the
// kernel declares bound exactly once, by a buffer or a tensor; a tensor the kernel does not take
// as a tensor, or a buffer where it does, is a `binding` error.
RunResult run_kernel(const KernelInfo& kernel, const Geometry& geometry, std::vector<HostBuffer>& buffers,
                     const std::vector<HostTensor>& tensors,
                     const std::vector<std::pair<int, uint32_t>>& threadgroup_memory, const RunOptions& options);

}  // namespace mtoh
