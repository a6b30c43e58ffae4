// MetalPerformancePrimitives for the harness (MSL 4.0): mpp::tensor_ops matmul2d, cooperative
// tensors, reduce_rows. Implementation: ../mtoh_tensorops.h (see there for what is modelled).
#pragma once
#include "../mtoh_tensorops.h"
