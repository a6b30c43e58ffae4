// A user kernel's scale-plane tensor argument on the emulator's command line (main.cc): a
// quantized input of the tensorops-mx tier (lib/kernels/scale-plane-inputs.ts) that the kernel
// declares as `mto_scaled_tensor<F> NAME [[buffer(INDEX)]]`, a tensor_handle with a
// tensor_blockwise E8M0 scale plane. On a Mac the host binds the MTLTensor qtensor.mm made over the
// QuantizedTensor's codes and scales buffers; here the same two planes are bound as the runtime's
// host tensor (runtime/launch_tensors.h HostTensor), the way the MSL harness binds the
// qlinear_tensorops_mx weight (test/msl/driver/plan_runner.cc).
//
// On the command line such an argument is `INDEX t BYTES DESC LABEL`: BYTES are the codes (the
// data plane, DIR/bINDEX.bin), and DESC, in FILL's place, is
//
//   DATA_TYPE:COLS:ROWS:ROW_STRIDE:SCALE_BYTES
//
// DATA_TYPE the data plane's raw MTLTensorDataType (141 E5M2, 142 E4M3, 148 E2M1), COLS and ROWS
// the extents innermost first, ROW_STRIDE in elements (packed fp4 counts elements), SCALE_BYTES
// the scale plane's bytes (DIR/bINDEX.scales.bin). The scale plane is always E8M0 (145) with
// blocks of (32, 1): the only one Metal has (core/scale_plane.h).
#pragma once
#include <cstdint>
#include <cstdlib>
#include <string>

#include "launch_tensors.h"

namespace mtoh_user {

constexpr int kScaleTypeE8M0 = 145;

// Fills `t`'s descriptor from DESC and sets *scale_bytes; false when DESC is malformed or names a
// data type with no scale plane.
inline bool parse_tensor_desc(const std::string& desc, mtoh::HostTensor* t, size_t* scale_bytes) {
  int64_t v[5];
  size_t at = 0;
  for (int i = 0; i < 5; ++i) {
    const size_t end = i < 4 ? desc.find(':', at) : desc.size();
    if (end == std::string::npos || end == at) return false;
    const std::string item = desc.substr(at, end - at);
    char* stop = nullptr;
    const long long n = std::strtoll(item.c_str(), &stop, 10);
    if (*stop || n < 0) return false;
    v[i] = int64_t(n);
    at = end + 1;
  }
  if (v[0] != 141 && v[0] != 142 && v[0] != 148) return false;
  t->data_type = int(v[0]);
  t->rank = 2;
  t->dims[0] = v[1];
  t->dims[1] = v[2];
  t->strides[0] = 1;
  t->strides[1] = v[3];
  t->scale_type = kScaleTypeE8M0;
  t->block[0] = 32;
  t->block[1] = 1;
  *scale_bytes = size_t(v[4]);
  return true;
}

}  // namespace mtoh_user
