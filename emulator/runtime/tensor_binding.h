// Tensor arguments bound by the host (an MTLTensor set at [[buffer(n)]] through a Metal 4
// argument table; dispatch_plan.h TensorSlot): the descriptor the host created the tensor with and
// its planes, each mapped by the runtime in a guarded region of its own. A kernel's
// `tensor<..., tensor_handle, tensor_blockwise<...>>` parameter is built from it (the shim's
// tensor(const BufferArg&) -> mtoh_bind), never from a pointer.
//
// Included by the shim (so plain C++ only, like bridge.h) and by the runtime; the launch side
// (HostTensor, run_kernel with tensors) is launch_tensors.h.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mtoh {

// Extents and strides innermost first, strides in elements; data types are raw MTLTensorDataType
// values.
struct TensorBinding {
  int data_type = 0;
  int rank = 0;
  int64_t dims[2] = {0, 0};
  int64_t strides[2] = {0, 0};
  void* data = nullptr;  // the data plane
  size_t data_bytes = 0;
  int scale_type = 0;  // the scale plane's data type; 0: the tensor has none
  int64_t block[2] = {0, 0};  // its block factors
  void* scales = nullptr;
  size_t scale_bytes = 0;
};

// The tensor bound at buffer(index) of the running launch, for a kernel parameter that declares a
// tensor there; a `binding` error (the threadgroup is abandoned) when a plain buffer is bound
// there instead. Marks the index as taken as a tensor: run_kernel reports a tensor bound where
// the kernel never takes one (it declares a pointer there) as a `binding` error too.
const TensorBinding& bound_tensor(int index);

}  // namespace mtoh
